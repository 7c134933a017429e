// The tall tiled kernel's reads (shaders/ops/matmul_tiled_tall.wgsl) for every type whose records
// it does not stage: each row's chunk decoded where it lies, and one column by the four-row path
// of shaders/ops/matmul_tiled.wgsl.

fn tall_one_column(wg: vec3<u32>, li: u32, lane: u32) {
    one_column(tile_of(wg, li), li, lane);
}

fn tall_stage(row: u32, c: u32) {}

// Row row + b's chunk c as weights.
fn tall_weights(row: u32, b: u32, c: u32) -> Chunk {
    return chunk_weights(row + b, c);
}
