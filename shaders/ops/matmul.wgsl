// Matmul Y = W X for P.columns activation columns (1..MAX_COLUMNS; one column is matvec). The
// geometry is generated (src/gpu/kernels/geometry.rs, product_lanes and RowBlock): a workgroup of
// MATMUL_WG invocations owns MATMUL_ROWS rows, in blocks of ROW_BLOCK rows with MATMUL_LANES lanes
// each; each invocation handles the same chunks of all rows of its block. Each lane walks its rows'
// chunks as `lane_walk` says and decodes each chunk once (each weight byte read once, as whole u32
// words); every activation chunk it loads serves the block's rows, so a column costs 1 / ROW_BLOCK
// of an activation load per weight (4 rows, or 8: src/gpu/kernels/geometry.rs, RowBlock). Then the
// lanes of each block reduce through workgroup memory, four rows at a time, and lane 0 applies the
// row word once.
//
// Two kernels per format and profile (src/gpu/kernels/ops.rs, Columns): matvec's, where
// KERNEL_COLUMNS is 1 and every column loop runs once at compile time, and one for 2..8 columns,
// where the count is a parameter and the column loop stays a loop. Unrolling it (a constant J per
// count) multiplied shader compile time by up to 80 on CPU drivers, whose compile time is most of a
// conformance run. Matvec's kernel also takes a lane step's rows one at a time where
// MATVEC_ROW_AT_A_TIME (generated per format and profile, src/gpu/kernels/geometry.rs
// matvec_order): four rows' decoded chunks live at once are spilled by CPU drivers. Each lane's
// column sums live in a private array indexed by the column while it walks its chunks (Sums), then
// in its own workgroup-memory slots for the reduction.
//
// This file is the part every profile shares: the row blocks, the reduction and the output. The
// profile's file (shaders/ops/matmul_a32.wgsl, shaders/ops/matmul_a8.wgsl) binds the activation and
// defines `lane_sums`, which returns each invocation's sums for its block's rows and every column.
// Y is column-major: OUT[P.out_off + j * P.out_stride + row].

// A lane's sums, four rows to a vec4: rows 4q..4q + 3 of column j are sums[j * ROW_QUARTERS + q]
// (ROW_BLOCK is a multiple of 4; ROW_QUARTERS = ROW_BLOCK / 4 and SUM_VECS are generated).
alias Sums = array<vec4<f32>, SUM_VECS>;

// The reduction takes a row block four rows at a time, so `partial` holds four rows of every
// column whatever the block's height: the sum of column j for row b (0..3) of the pass, for
// invocation li, is partial[(4 j + b) * MATMUL_WG + li].
var<workgroup> partial: array<f32, PARTIAL_SLOTS>;

// The request's columns: a constant in matvec's kernel, so its column loops fold away.
fn column_count() -> u32 {
    if KERNEL_COLUMNS == 1u {
        return 1u;
    }
    return P.columns;
}

fn slot(j: u32, b: u32, li: u32) -> u32 {
    return (4u * j + b) * MATMUL_WG + li;
}

// Matvec's row-at-a-time sums (one column, a sum per row of the block) as Sums.
fn row_sums(acc: array<f32, ROW_BLOCK>) -> Sums {
    var sums: Sums;
    for (var b = 0u; b < ROW_BLOCK; b++) {
        sums[b / 4u][b % 4u] = acc[b];
    }
    return sums;
}

// What applies once per row, after the reduction: fp8 row multipliers (which may be f32
// subnormals) and nvfp4 divisors.
fn row_finish(row: u32, acc: f32) -> f32 {
    if ROW_NONE {
        return acc;
    }
    if ROW_MULTIPLIER {
        return multiply_by_word(acc, row_word(row));
    }
    if ROW_DIVISOR {
        return divide_by_word(acc, row_word(row));
    }
    // Unreachable: the host sets exactly one ROW_* flag.
    return poison_f32();
}

fn write_column(row: u32, j: u32, acc: f32) {
    OUT[P.out_off + j * P.out_stride + row] = bitcast<u32>(row_finish(row, acc));
}

// The chunks lane `lane` of a row block walks over `units` (chunks, or pairs of them): the
// block's lanes form runs of MATMUL_RUN, each run owns one contiguous stretch of the row, and
// lane r of a run takes every MATMUL_RUN-th unit of it from its r-th. Returns (first, end); the
// step is MATMUL_RUN. Runs rather than every lane-th unit: a CPU driver executes a run as one
// SIMD program, which then streams through its stretch (src/gpu/kernels/geometry.rs, MATMUL_RUN).
fn lane_walk(lane: u32, units: u32) -> vec2<u32> {
    let stretch = (units + MATMUL_LANES - 1u) / MATMUL_LANES * MATMUL_RUN;
    let first = (lane / MATMUL_RUN) * stretch;
    return vec2<u32>(first + lane % MATMUL_RUN, min(first + stretch, units));
}

// The first row of invocation li's block.
fn block_row(wg: vec3<u32>, li: u32) -> u32 {
    return (wg.y * P.groups_x + wg.x) * MATMUL_ROWS + (li / MATMUL_LANES) * ROW_BLOCK;
}

@compute @workgroup_size(MATMUL_WG)
fn matmul(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    codec_prepare(li, MATMUL_WG);
    let lane = li % MATMUL_LANES;
    let row = block_row(wg, li);
    let sums = lane_sums(row, lane);
    for (var q = 0u; q < ROW_QUARTERS; q++) {
        for (var j = 0u; j < column_count(); j++) {
            for (var b = 0u; b < 4u; b++) {
                partial[slot(j, b, li)] = sums[j * ROW_QUARTERS + q][b];
            }
        }
        workgroupBarrier();
        for (var s = MATMUL_LANES / 2u; s > 0u; s >>= 1u) {
            if lane < s {
                for (var j = 0u; j < column_count(); j++) {
                    for (var b = 0u; b < 4u; b++) {
                        partial[slot(j, b, li)] += partial[slot(j, b, li + s)];
                    }
                }
            }
            workgroupBarrier();
        }
        if lane == 0u {
            for (var b = 0u; b < 4u; b++) {
                if row + 4u * q + b < P.rows {
                    for (var j = 0u; j < column_count(); j++) {
                        write_column(row + 4u * q + b, j, partial[slot(j, b, li)]);
                    }
                }
            }
        }
        // The next pass overwrites the slots lane 0 just read.
        workgroupBarrier();
    }
}
