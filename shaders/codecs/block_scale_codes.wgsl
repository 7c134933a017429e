// block_scale_k16_m128x4_v1 (nvfp4) as the A8 profile reads it (shaders/ops/matmul_a8.wgsl's codec
// interface). Included after shaders/codecs/block_scale.wgsl, whose scales and row divisor it
// reuses.
//
// Twice an E2M1 value is an integer (±{0, 1, 2, 3, 4, 6, 8, 12}), so a chunk's codes are
// 2·e2m1 as int8 and each 16-value half (one scale group) has the map scale / 2: the product is
// `scale / 2 · Σ code · x_code` per half, exact up to f32 rounding, then the row's divisor
// (row_finish), as in A32.

// The E2M1 nibbles in bytes 0..3 of each word to int8 2·e2m1. For a magnitude m (bits 0..2):
// m for m <= 4, then 6, 8, 12 — m + (m - 4 where m >= 4) + 2 where m = 7. Every step stays
// inside its byte (at most 131 before the top bit is read), so four values go per operation.
fn e2m1_codes(b: vec4<u32>) -> vec4<u32> {
    let ones = vec4<u32>(0x01010101u);
    let m = b & vec4<u32>(0x07070707u);
    let at_least_4 = ((m + vec4<u32>(0x7c7c7c7cu)) >> vec4<u32>(7u)) & ones;
    let is_7 = ((m + ones) >> vec4<u32>(3u)) & ones;
    let v = m + (m & (at_least_4 * 3u)) + (is_7 << vec4<u32>(1u));
    // Negative where bit 3 is set: 0x80 - v per byte (v <= 12, so nothing borrows), then the
    // high bit flipped back, is -v as int8 (and 0 for v = 0).
    let negative = ((b >> vec4<u32>(3u)) & ones) * 0xffu;
    let minus_v = (vec4<u32>(0x80808080u) - v) ^ vec4<u32>(0x80808080u);
    return (v & ~negative) | (minus_v & negative);
}

// Chunk c's four words of eight nibbles (even value in the low nibble): one vec4 load where the
// window allows (rows are K / 2 bytes, K a multiple of 64).
fn chunk_codes(row: u32, c: u32) -> Codes {
    let w = plane0_words4((P.off0 + row * P.stride0) / 4u + c * 4u);
    return Codes(e2m1_codes(nibbles_to_bytes(vec4<u32>(w.x, w.x >> 16u, w.y, w.y >> 16u))),
                 e2m1_codes(nibbles_to_bytes(vec4<u32>(w.z, w.z >> 16u, w.w, w.w >> 16u))));
}

// The chunk's two group scales, halved for the doubled codes (exact: a scale is an E4M3 value,
// far above f32's subnormals).
fn chunk_affine8(row: u32, c: u32) -> vec4<f32> {
    return chunk_affine(row, c) * 0.5;
}

// Only what shaders/ops/matmul_a8.wgsl's pair path needs to compile: nvfp4 kernels go a chunk at a
// time (A8_PAIRS is false: src/gpu/kernels/geometry.rs, a8_pairs).
fn chunk_pair8(row: u32, c: u32) -> Pair8 {
    return Pair8(chunk_codes(row, c), chunk_codes(row, c + 1u), chunk_affine8(row, c), chunk_affine8(row, c + 1u));
}
