// The int8 weight codes the codecs' A8 readers return (shaders/codecs/gguf_codes.wgsl and the
// other codecs' *_codes.wgsl): assembled before them into every A8 product, and into A32's tall
// kernel where it reads the grid i-quants' sub-blocks in pairs through their A8 pair decoders
// (shaders/codecs/gguf_pairs.wgsl).

// A chunk's 32 weight codes as int8, four per u32: values 0..15 in [0], 16..31 in [1], lowest
// byte first.
alias Codes = array<vec4<u32>, 2>;

// Chunks c and c + 1 of one row: their codes and maps.
struct Pair8 {
    a: Codes,
    b: Codes,
    fa: vec4<f32>,
    fb: vec4<f32>,
}
