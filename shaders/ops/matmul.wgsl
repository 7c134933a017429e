// Matmul Y = W X for P.columns activation columns (1..MAX_COLUMNS; one column is matvec). A
// workgroup of MATMUL_WG = 64 invocations (MATMUL_LANES lanes) owns MATMUL_ROWS = ROW_BLOCK = 4
// rows: each invocation handles the same chunks of all four. Each lane walks
// its rows' chunks with stride MATMUL_LANES and decodes each chunk once (each weight byte read
// once, as whole u32 words); every activation chunk it loads serves the four rows, so a column
// costs a quarter of an activation load per weight. Then the lanes of each row reduce through
// workgroup memory and lane 0 applies the row word once.
//
// The column count is a parameter, not a constant: one pipeline serves every J, and the column
// loop stays a loop. Unrolling it (a constant J) multiplied shader compile time by up to 80 on
// CPU drivers, whose compile time is most of a conformance run; each lane's column sums live in
// its own workgroup-memory slots instead of registers.
//
// X holds the columns back to back, each zero-padded to whole chunks: column j's chunk c is
// X[j * P.x_stride + 8c ..][8]. Y is column-major too: OUT[P.out_off + j * P.out_stride + row].

const MATMUL_ROWS: u32 = 4u;
const MATMUL_LANES: u32 = 64u;
const MATMUL_WG: u32 = 64u;
const ROW_BLOCK: u32 = 4u;

@group(0) @binding(4) var<storage, read> X: array<vec4<f32>>;

// The sum of column j for row b of invocation li's block is partial[(4j + b) * MATMUL_WG + li].
var<workgroup> partial: array<f32, 2048>;

fn slot(j: u32, b: u32, li: u32) -> u32 {
    return (ROW_BLOCK * j + b) * MATMUL_WG + li;
}

fn hsum(v: vec4<f32>) -> f32 {
    return v.x + v.y + v.z + v.w;
}

// Σ_k w x over one chunk: a Σ q x - b Σ x per 16-lane half, for the activation chunk x.
fn chunk_dot(q: Chunk, f: vec4<f32>, x: Chunk) -> f32 {
    var qx0 = vec4<f32>(0.0);
    var qx1 = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {
        qx0 += q[i] * x[i];
        qx1 += q[i + 4u] * x[i + 4u];
    }
    var s = f.x * hsum(qx0) + f.z * hsum(qx1);
    if HAS_OFFSET {
        s -= f.y * hsum(x[0] + x[1] + x[2] + x[3]) + f.w * hsum(x[4] + x[5] + x[6] + x[7]);
    }
    return s;
}

// Column j's activation chunk c.
fn x_chunk(j: u32, c: u32) -> Chunk {
    let at = j * P.x_stride + 8u * c;
    var x: Chunk;
    for (var i = 0u; i < 8u; i++) {
        x[i] = X[at + i];
    }
    return x;
}

// The levels and map of chunk c of `row`, or zeros for a row past the pass's end.
fn levels_or_zero(row: u32, c: u32, q: ptr<function, Chunk>, f: ptr<function, vec4<f32>>) {
    if row < P.rows {
        *q = chunk_levels(row, c);
        *f = chunk_affine(row, c);
    }
}

// Accumulates this invocation's share of rows row..row + 3 for every column (chunks lane,
// lane + 64, ...) into its partial slots. A row past the pass's end contributes nothing.
fn lane_sums(row: u32, lane: u32, li: u32) {
    for (var j = 0u; j < P.columns; j++) {
        for (var b = 0u; b < ROW_BLOCK; b++) {
            partial[slot(j, b, li)] = 0.0;
        }
    }
    // Blocks past the pass's end walk no chunks (a loop bound, not an early return, keeps the
    // subgroup variant's adds in uniform control flow).
    let chunks = select(0u, P.chunks, row < P.rows);
    for (var c = lane; c < chunks; c += MATMUL_LANES) {
        var q0: Chunk;
        var q1: Chunk;
        var q2: Chunk;
        var q3: Chunk;
        var f0 = vec4<f32>(0.0);
        var f1 = vec4<f32>(0.0);
        var f2 = vec4<f32>(0.0);
        var f3 = vec4<f32>(0.0);
        levels_or_zero(row, c, &q0, &f0);
        levels_or_zero(row + 1u, c, &q1, &f1);
        levels_or_zero(row + 2u, c, &q2, &f2);
        levels_or_zero(row + 3u, c, &q3, &f3);
        for (var j = 0u; j < P.columns; j++) {
            let x = x_chunk(j, c);
            partial[slot(j, 0u, li)] += chunk_dot(q0, f0, x);
            partial[slot(j, 1u, li)] += chunk_dot(q1, f1, x);
            partial[slot(j, 2u, li)] += chunk_dot(q2, f2, x);
            partial[slot(j, 3u, li)] += chunk_dot(q3, f3, x);
        }
    }
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

// The first row of invocation li's block.
fn block_row(wg: vec3<u32>, li: u32) -> u32 {
    return (wg.y * P.groups_x + wg.x) * MATMUL_ROWS + (li / MATMUL_LANES) * ROW_BLOCK;
}

@compute @workgroup_size(64)
fn matmul(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let lane = li % MATMUL_LANES;
    let row = block_row(wg, li);
    lane_sums(row, lane, li);
    workgroupBarrier();
    for (var s = MATMUL_LANES / 2u; s > 0u; s >>= 1u) {
        if lane < s {
            for (var j = 0u; j < P.columns; j++) {
                for (var b = 0u; b < ROW_BLOCK; b++) {
                    partial[slot(j, b, li)] += partial[slot(j, b, li + s)];
                }
            }
        }
        workgroupBarrier();
    }
    if lane == 0u {
        for (var b = 0u; b < ROW_BLOCK; b++) {
            if row + b < P.rows {
                for (var j = 0u; j < P.columns; j++) {
                    write_column(row + b, j, partial[slot(j, b, li)]);
                }
            }
        }
    }
}
