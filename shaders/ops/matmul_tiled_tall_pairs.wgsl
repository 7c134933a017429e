// The tall tiled kernel's reads (shaders/ops/matmul_tiled_tall.wgsl) for q4_K, q5_K and the grid
// i-quants (src/gpu/kernels/geometry.rs, a32_pairs): many columns read a chunk where it lies, as
// shaders/ops/matmul_tiled_tall_direct.wgsl does; one column steps two chunks at a time, each
// row's pair decoded from one load of the bytes the two share (shaders/codecs/gguf_pairs.wgsl),
// in four rows an invocation as shaders/ops/matmul_tiled.wgsl's one_column, whose row order and
// expression (chunk_dot) each chunk keeps. K is a multiple of 256, so the chunks are pairs.

fn level_pair_dot(p: LevelPair, x0: Chunk, x1: Chunk) -> f32 {
    return chunk_dot(p.a, p.fa, x0) + chunk_dot(p.b, p.fb, x1);
}

// Rows past the pass's end decode what lies there and are not written (as one_column's).
fn tall_one_column(wg: vec3<u32>, li: u32, lane: u32) {
    let t = tile_of(wg, li);
    var sums = vec4<f32>(0.0);
    for (var c = 0u; c < P.chunks; c += 2u) {
        let x0 = column_step(t.j0, 0u, c, lane);
        let x1 = column_step(t.j0, 0u, c + 1u, lane);
        let j = c % 8u;
        sums.x += level_pair_dot(block_level_pair(block_base(t.row, c), j, c), x0, x1);
        sums.y += level_pair_dot(block_level_pair(block_base(t.row + 1u, c), j, c), x0, x1);
        sums.z += level_pair_dot(block_level_pair(block_base(t.row + 2u, c), j, c), x0, x1);
        sums.w += level_pair_dot(block_level_pair(block_base(t.row + 3u, c), j, c), x0, x1);
    }
    for (var b = 0u; b < TILED_ROW_BLOCK; b++) {
        if t.row + b < P.rows {
            write_column(t.row + b, t.j0, sums[b]);
        }
    }
}

fn tall_stage(row: u32, c: u32) {}

// Row row + b's chunk c as weights.
fn tall_weights(row: u32, b: u32, c: u32) -> Chunk {
    return chunk_weights(row + b, c);
}
