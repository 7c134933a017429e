// gguf_blocks_v1's q4_K, q5_K and grid i-quants as A32 reads one column on CPU drivers, two
// sub-blocks at a time (src/gpu/kernels/geometry.rs, a32_pairs;
// shaders/ops/matmul_tiled_tall_pairs.wgsl), the block_level_pair the host generates calling
// the type's decoder below or, for the i-quants, its A8 pair decoder (gguf_codes.wgsl).
// q4_K/q5_K sub-blocks j and j + 1 (j even) are the low and high nibbles of the same 32 bytes,
// and every sub-block's scale and min come from the block's first 16 bytes: read a chunk at a
// time, a pair loads those bytes twice and the head twice, where here it loads each once (6 vec4
// loads of q4_K become 3, q5_K's 10 become 5; docs/performance.md#k-quant-pairs-in-one-column).
// The i-quants' pairs share their index, sign and scale words the same way. Included after
// shaders/codecs/gguf_blocks.wgsl, whose loaders and scale unpacking it reuses; the levels and
// maps are those of the chunk-at-a-time readers, so the products are the same sums.

// Two chunks' levels and their maps (a q - b per 16-value half, as chunk_affine).
struct LevelPair {
    a: Chunk,
    b: Chunk,
    fa: vec4<f32>,
    fb: vec4<f32>,
}

// The pair's 32 shared bytes at `qs` as the low (sub-block j) and high (j + 1) nibbles.
fn nibble_pair(qs: u32) -> array<Chunk, 2> {
    var lo: Chunk;
    var hi: Chunk;
    for (var h = 0u; h < 2u; h++) {
        let words = block_words4(qs + 16u * h);
        for (var t = 0u; t < 4u; t++) {
            let w = vec4<u32>(words[t]) >> BYTE_SHIFTS;
            lo[4u * h + t] = vec4<f32>(w & vec4<u32>(15u));
            hi[4u * h + t] = vec4<f32>((w >> vec4<u32>(4u)) & vec4<u32>(15u));
        }
    }
    return array<Chunk, 2>(lo, hi);
}

// d, dmin and the 12 scale bytes, loaded once: sub-blocks j and j + 1's (d * sc, dmin * m).
fn affine_pair_q4_k(base: u32, j: u32) -> array<vec4<f32>, 2> {
    let head = block_words4(base);
    let dm = f16_pair_of(head.x);
    let sa = scale_min_k4_of(j, head.yzw);
    let sb = scale_min_k4_of(j + 1u, head.yzw);
    let a = vec2<f32>(dm.x * sa.x, dm.y * sa.y);
    let b = vec2<f32>(dm.x * sb.x, dm.y * sb.y);
    return array<vec4<f32>, 2>(vec4<f32>(a, a), vec4<f32>(b, b));
}

// q4_K: d, dmin, scales[12], qs[128].
fn level_pair_q4_k(base: u32, j: u32, c: u32) -> LevelPair {
    let q = nibble_pair(base + 16u + 32u * (j / 2u));
    let f = affine_pair_q4_k(base, j);
    return LevelPair(q[0], q[1], f[0], f[1]);
}

// q5_K: d, dmin, scales[12], qh[32], qs[128]; bits j and j + 1 of qh byte l are value l's fifth
// bits in the two sub-blocks.
fn level_pair_q5_k(base: u32, j: u32, c: u32) -> LevelPair {
    var q = nibble_pair(base + 48u + 32u * (j / 2u));
    let hw = array<vec4<u32>, 2>(block_words4(base + 16u), block_words4(base + 32u));
    for (var i = 0u; i < 8u; i++) {
        let h = vec4<u32>(hw[i / 4u][i % 4u]) >> (BYTE_SHIFTS + vec4<u32>(j));
        q[0][i] += vec4<f32>((h & vec4<u32>(1u)) << vec4<u32>(4u));
        q[1][i] += vec4<f32>(((h >> vec4<u32>(1u)) & vec4<u32>(1u)) << vec4<u32>(4u));
    }
    let f = affine_pair_q4_k(base, j);
    return LevelPair(q[0], q[1], f[0], f[1]);
}

// An A8 pair (int8 codes, maps without offsets: the grid i-quants) as levels: the codes are the
// signed integers the chunk readers' levels are, or for iq1 eight times them with the map
// carrying the 1/8 (gguf_codes.wgsl's header), the same weights exactly.
fn code_levels(c: Codes) -> Chunk {
    var q: Chunk;
    for (var i = 0u; i < 8u; i++) {
        let bytes = bitcast<vec4<i32>>(vec4<u32>(c[i / 4u][i % 4u]) << vec4<u32>(24u, 16u, 8u, 0u));
        q[i] = vec4<f32>(bytes >> vec4<u32>(24u));
    }
    return q;
}

fn level_pair_of_codes(p: Pair8) -> LevelPair {
    return LevelPair(code_levels(p.a), code_levels(p.b), p.fa, p.fb);
}
