// A word of plane 0 as the block readers take it (shaders/codecs/gguf_blocks.wgsl: block_u32_at,
// block_words4 for blocks of whole words): straight from the buffer. The tall tiled kernel of a
// type whose records it stages defines its own, from its stage, and is assembled without this
// file (src/gpu/kernels/geometry.rs, staged_records).
fn record_word(w: u32) -> u32 {
    return plane0[w];
}
