// Matmul Y = W X for P.columns activation columns (1..MAX_COLUMNS; one column is matvec). A
// workgroup of 256 invocations owns MATMUL_ROWS rows, MATMUL_LANES lanes per row. Each lane walks
// the row's chunks with stride MATMUL_LANES, decodes each chunk once (each weight byte read once,
// as whole u32 words) and takes its dot product with every column; then the row's lanes reduce
// through workgroup memory and lane 0 applies the row word once.
//
// The column count is a parameter, not a constant: one pipeline serves every J, and the column
// loop stays a loop. Unrolling it (a constant J) multiplied shader compile time by up to 80 on
// CPU drivers, whose compile time is most of a conformance run, and bought nothing measurable:
// each lane's column sums live in its own workgroup-memory slots, touched once per chunk.
//
// X holds the columns back to back, each zero-padded to whole chunks: column j's chunk c is
// X[j * P.x_stride + 8c ..][8]. Y is column-major too: OUT[P.out_off + j * P.out_stride + row].

const MATMUL_ROWS: u32 = 4u;
const MATMUL_LANES: u32 = 64u;
const MATMUL_WG: u32 = 256u;

@group(0) @binding(4) var<storage, read> X: array<vec4<f32>>;

// Column j's sum of invocation li is partial[j * MATMUL_WG + li].
var<workgroup> partial: array<f32, 2048>;

fn hsum(v: vec4<f32>) -> f32 {
    return v.x + v.y + v.z + v.w;
}

// Σ_k w x over one chunk for column j: a Σ q x - b Σ x per 16-lane half.
fn chunk_dot(q: Chunk, f: vec4<f32>, j: u32, c: u32) -> f32 {
    let x = j * P.x_stride + 8u * c;
    var qx0 = vec4<f32>(0.0);
    var qx1 = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {
        qx0 += q[i] * X[x + i];
        qx1 += q[i + 4u] * X[x + i + 4u];
    }
    var s = f.x * hsum(qx0) + f.z * hsum(qx1);
    if HAS_OFFSET {
        let x0 = X[x] + X[x + 1u] + X[x + 2u] + X[x + 3u];
        let x1 = X[x + 4u] + X[x + 5u] + X[x + 6u] + X[x + 7u];
        s -= f.y * hsum(x0) + f.w * hsum(x1);
    }
    return s;
}

// Accumulates this invocation's share of row `row` for every column (chunks lane, lane + 64, ...)
// into its partial slots.
fn lane_sums(row: u32, lane: u32, li: u32) {
    for (var j = 0u; j < P.columns; j++) {
        partial[j * MATMUL_WG + li] = 0.0;
    }
    if row < P.rows {
        for (var c = lane; c < P.chunks; c += MATMUL_LANES) {
            let q = chunk_levels(row, c);
            let f = chunk_affine(row, c);
            for (var j = 0u; j < P.columns; j++) {
                partial[j * MATMUL_WG + li] += chunk_dot(q, f, j, c);
            }
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
    return bitcast<f32>(0x7fc0deadu);
}

fn write_column(row: u32, j: u32, acc: f32) {
    OUT[P.out_off + j * P.out_stride + row] = bitcast<u32>(row_finish(row, acc));
}

@compute @workgroup_size(256)
fn matmul(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let r = li / MATMUL_LANES;
    let lane = li % MATMUL_LANES;
    let row = (wg.y * P.groups_x + wg.x) * MATMUL_ROWS + r;
    lane_sums(row, lane, li);
    workgroupBarrier();
    for (var s = MATMUL_LANES / 2u; s > 0u; s >>= 1u) {
        if lane < s {
            for (var j = 0u; j < P.columns; j++) {
                partial[j * MATMUL_WG + li] += partial[j * MATMUL_WG + li + s];
            }
        }
        workgroupBarrier();
    }
    if lane == 0u && row < P.rows {
        for (var j = 0u; j < P.columns; j++) {
            write_column(row, j, partial[j * MATMUL_WG + li]);
        }
    }
}
