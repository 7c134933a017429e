// Matmul for many columns, A8 (the A32 body and the reasons: shaders/ops/matmul_tiled.wgsl):
// four rows per invocation, every invocation at the same step, each row's int8 codes decoded
// once per 64 columns, then an integer dot product with each column's q8_1 chunk
// (shaders/ops/matmul_a8.wgsl's chunk_dot8 and quad_dot). A step is one chunk, or a pair of them
// where A8_PAIRS (ggml's blocks of 64 values or more), as in the 8-column kernel.

// What the variants stage per column and step: the q8_1 words of one chunk (3 vec4<u32>) or of
// a pair (6).
alias XVec = vec4<u32>;
alias XStep = array<vec4<u32>, 6>;
const X_STEP_VECS: u32 = select(3u, 6u, A8_PAIRS);

fn x_step_vec(j: u32, step: u32, i: u32) -> vec4<u32> {
    return X[P.in_off + j * P.x_stride + X_STEP_VECS * step + i];
}

fn tiled(wg: vec3<u32>, li: u32, lane: u32) {
    codec_prepare(li, TILED_WG);
    let t = tile_of(wg, li);
    var acc: TileSums;
    // Uniform loops, as in the A32 body; rows past the pass's end decode to zero codes.
    let steps = select(P.chunks, P.chunks / 2u, A8_PAIRS);
    for (var s = 0u; s < steps; s++) {
        stage_step(t.j0, t.columns, s, li);
        if A8_PAIRS {
            let quad = quad_or_zero(t.row, 2u * s);
            for (var j = 0u; j < t.columns; j++) {
                let x = column_step(t.j0, j, s, lane);
                acc[j] += quad_dot(quad, XPair(x[0], x[1], x[2], x[3], x[4], x[5]));
            }
        } else {
            var q0: Codes;
            var q1: Codes;
            var q2: Codes;
            var q3: Codes;
            var f0 = vec4<f32>(0.0);
            var f1 = vec4<f32>(0.0);
            var f2 = vec4<f32>(0.0);
            var f3 = vec4<f32>(0.0);
            codes_or_zero(t.row, s, &q0, &f0);
            codes_or_zero(t.row + 1u, s, &q1, &f1);
            codes_or_zero(t.row + 2u, s, &q2, &f2);
            codes_or_zero(t.row + 3u, s, &q3, &f3);
            for (var j = 0u; j < t.columns; j++) {
                let x = column_step(t.j0, j, s, lane);
                acc[j] += vec4<f32>(
                    chunk_dot8(q0, f0, x[0], x[1], x[2]),
                    chunk_dot8(q1, f1, x[0], x[1], x[2]),
                    chunk_dot8(q2, f2, x[0], x[1], x[2]),
                    chunk_dot8(q3, f3, x[0], x[1], x[2]),
                );
            }
        }
    }
    write_tile(t, acc);
}
