// Matmul, A32 profile: the exact weights (the codec's levels and affine map, in f32) times the
// f32 activation, f32 accumulation. `lane_sums` is what shaders/ops/matmul.wgsl's entry points
// call.
//
// X holds the columns P.x_stride vec4s apart from vec4 P.in_off on: column j's chunk c is
// X[P.in_off + j * P.x_stride + 8c ..][8]. Values at or past K in the last chunk are not the
// column's (the next column's, or past an engine's slice) and are read as zero.

@group(0) @binding(4) var<storage, read> X: array<vec4<f32>>;

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

// Vec4 i (0..8) of column j's activation chunk c; values at or past K read as zero (only a K
// that is not a multiple of 32, grouped formats, has a partial last chunk).
fn x_quad(j: u32, c: u32, i: u32) -> vec4<f32> {
    let x = X[P.in_off + j * P.x_stride + 8u * c + i];
    if 32u * c + 32u > P.k {
        return mask_past_k(x, 32u * c + 4u * i);
    }
    return x;
}

// Column j's activation chunk c.
fn x_chunk(j: u32, c: u32) -> Chunk {
    var x: Chunk;
    for (var i = 0u; i < 8u; i++) {
        x[i] = x_quad(j, c, i);
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

// This invocation's share of its row block's rows (row..row + ROW_BLOCK - 1) for every column
// (the chunks of lane_walk), as shaders/ops/matmul.wgsl's Sums. A row past the pass's end
// contributes nothing.
fn lane_sums(row: u32, lane: u32) -> Sums {
    // Blocks past the pass's end walk no chunks (a loop bound, not an early return, keeps the
    // subgroup variant's adds in uniform control flow).
    let walk = lane_walk(lane, select(0u, P.chunks, row < P.rows));
    if KERNEL_COLUMNS == 1u && MATVEC_ROW_AT_A_TIME {
        // Matvec: the activation chunk first, then one row at a time, so only one row's
        // decoded chunk is live beside it (four rows' were spilled by CPU drivers:
        // docs/performance.md#matvec-row-order), and the chunk serves ROW_BLOCK rows
        // (src/gpu/kernels/geometry.rs, RowBlock).
        var acc: array<f32, ROW_BLOCK>;
        for (var c = walk.x; c < walk.y; c += MATMUL_RUN) {
            let x = x_chunk(0u, c);
            for (var b = 0u; b < ROW_BLOCK; b++) {
                var q: Chunk;
                var f = vec4<f32>(0.0);
                levels_or_zero(row + b, c, &q, &f);
                acc[b] += chunk_dot(q, f, x);
            }
        }
        return row_sums(acc);
    }
    // Rows together (ROW_BLOCK is 4 here): column sums of the four rows, indexed by the
    // (uniform) column: a private array, which a SIMD compiler keeps as whole vectors, where
    // workgroup slots cost a scatter per update.
    var acc: Sums;
    for (var c = walk.x; c < walk.y; c += MATMUL_RUN) {
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
        for (var j = 0u; j < column_count(); j++) {
            let x = x_chunk(j, c);
            acc[j] += vec4<f32>(chunk_dot(q0, f0, x), chunk_dot(q1, f1, x), chunk_dot(q2, f2, x), chunk_dot(q3, f3, x));
        }
    }
    return acc;
}
