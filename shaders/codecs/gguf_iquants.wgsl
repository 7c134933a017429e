// gguf_blocks_v1, the i-quants' A32 decoders: the second part of the codec of
// shaders/codecs/gguf_blocks.wgsl, whose loaders, maps and codec interface they use (the host
// assembles the two as one codec). Kept apart only for length: each type's decoders are found by
// their names, `levels_<type>` and `affine_<type>`.

// ---- i-quants (256-value blocks, sub-block ib = c % 8) ---------------------------------------
// Grid tables (ggml's iq2xxs_grid, iq3s_grid, iq1s_grid, ...) are bound as plane1 (see
// src/gpu/kernels/grids.rs, gguf_grid). A lane's level is a grid value times its sign (iq1: grid value
// plus delta), and the chunk's map is its db (or dl) for lanes 0..15 and 16..31.
//
// iq3's 4-byte entries are one word each. The 8-byte entries of iq2_* and iq1_* take only three
// byte values per grid, so each is stored as the indices of its values' levels: iq2's as one
// word of nibbles per entry, iq1's (twice as many entries) as 16 bits of 2-bit fields, two per
// word, so that every grid fits workgroup memory; one load per entry instead of two.

// Product kernels copy the grid to workgroup memory first (codec_prepare; GRID_IN_WORKGROUP,
// generated): every chunk looks up eight entries, and a storage load is a bounds-checked load
// per invocation on some drivers where a workgroup one is not.
var<workgroup> grid_wg: array<u32, GRID_WG_WORDS>;

fn grid_word(i: u32) -> u32 {
    if GRID_IN_WORKGROUP {
        return grid_wg[i];
    }
    return plane1[i];
}

const LEVEL_NIBBLES: u32 = 0x0f0f0f0fu;

// The four 2-bit fields of byte `b` (low first) as four bytes, by shifts and masks: two
// non-overlapping multiplies counted more (docs/performance.md#spreading-2-bit-grid-fields).
fn spread_pairs(b: u32) -> u32 {
    return (b & 3u) | ((b & 0xcu) << 6u) | ((b & 0x30u) << 12u) | ((b & 0xc0u) << 18u);
}

// The level indices (0, 1, 2) of packed entry `e`, one per byte: values 0..3, then 4..7. Stored
// one entry per word in nibbles where the grid fits so (GRID_NIBBLES, generated: iq2's), else
// two per word in 2-bit fields (src/gpu/kernels/grids.rs, EntryBits).
fn grid_level_indices(e: u32) -> vec2<u32> {
    if GRID_NIBBLES {
        let w = grid_word(e);
        return vec2<u32>(w & LEVEL_NIBBLES, (w >> 4u) & LEVEL_NIBBLES);
    }
    let h = grid_word(e >> 1u) >> (16u * (e & 1u));
    return vec2<u32>(spread_pairs(h & 0xffu), spread_pairs((h >> 8u) & 0xffu));
}

// iq2 entry `e` as ggml's 8 bytes: levels 0x08, 0x19, 0x2b are 8 + 17 i + (i >> 1), byte-wise
// (no byte exceeds 43, so nothing carries).
fn grid_iq2(e: u32) -> vec2<u32> {
    let i = grid_level_indices(e);
    return vec2<u32>(0x08080808u) + (i << vec2<u32>(4u)) + i + ((i >> vec2<u32>(1u)) & vec2<u32>(0x01010101u));
}

// ksigns_iq2xs[i]: the 7 sign bits of i plus a parity bit that makes the count of negatives even.
// The parity of i is that of the nibble n = i ^ (i >> 4), bit n of 0x6996; 0x34cb00 is 0x6996 << 7,
// so shifting it by n puts that bit at bit 7 (a CPU driver without a vector popcount expands
// countOneBits into a dozen operations).
fn ksigns(i: u32) -> u32 {
    return i | ((0x34cb00u >> ((i ^ (i >> 4u)) & 15u)) & 0x80u);
}

fn signs4(bits: u32, first: u32) -> vec4<f32> {
    let on = ((vec4<u32>(bits) >> (vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(first))) & vec4<u32>(1u)) != vec4<u32>(0u);
    return select(vec4<f32>(1.0), vec4<f32>(-1.0), on);
}

// The four unsigned bytes of a grid word as f32.
fn grid_bytes(w: u32) -> vec4<f32> {
    return vec4<f32>((vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u));
}

// The four values of an iq1 entry's level indices (-1, 0, 1 are indices 0, 1, 2) as f32.
fn ternary_values(i: u32) -> vec4<f32> {
    return grid_bytes(i) - vec4<f32>(1.0);
}

// iq1_m's binary16 super-scale, spread over the top nibbles of the four u16 scale words.
// `sc` is the 8 scale bytes as two words.
fn iq1_m_d(sc: vec2<u32>) -> f32 {
    let s0 = sc.x & 0xffffu;
    let s1 = sc.x >> 16u;
    let s2 = sc.y & 0xffffu;
    let s3 = sc.y >> 16u;
    return f16_bits_to_f32((s0 >> 12u) | ((s1 >> 8u) & 0x00f0u) | ((s2 >> 4u) & 0x0f00u) | (s3 & 0xf000u));
}

// Each grid entry covers 8 lanes: group l of the sub-block is lanes 8l..8l+7 (q[2l], q[2l + 1]).

// iq2_xxs: d, then per sub-block two u32: four grid indices, then 4 x 7 sign bits and a 4-bit scale.
fn levels_iq2_xxs(base: u32, ib: u32, in_row: u32) -> Chunk {
    var q: Chunk;
    // Each block word is loaded once: compilers may not merge repeated storage loads.
    let indices = block_u32_at(base + 2u + 8u * ib);
    let signs = block_u32_at(base + 6u + 8u * ib);
    for (var l = 0u; l < 4u; l++) {
        let idx = (indices >> (8u * l)) & 255u;
        let sg = ksigns((signs >> (7u * l)) & 127u);
        let g = grid_iq2(idx);
        q[2u * l] = grid_bytes(g.x) * signs4(sg, 0u);
        q[2u * l + 1u] = grid_bytes(g.y) * signs4(sg, 4u);
    }
    return q;
}

fn affine_iq2_xxs(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    return scale_iq2_xxs(f16_at(base), block_u32_at(base + 2u + 8u * ib + 4u));
}

// d and the sub-block's sign word, whose top nibble is the scale.
fn scale_iq2_xxs(d: f32, sg: u32) -> vec4<f32> {
    return scale_only(d * (0.5 + f32(sg >> 28u)) * 0.25);
}

// iq2_xs: d, qs[32] u16 (9-bit grid index, 7 sign bits), scales[8] (two nibbles).
fn levels_iq2_xs(base: u32, ib: u32, in_row: u32) -> Chunk {
    var q: Chunk;
    let w = vec2<u32>(block_u32_at(base + 2u + 8u * ib), block_u32_at(base + 6u + 8u * ib));
    for (var l = 0u; l < 4u; l++) {
        let v = (select(w.x, w.y, l >= 2u) >> (16u * (l % 2u))) & 0xffffu;
        let idx = v & 511u;
        let sg = ksigns(v >> 9u);
        let g = grid_iq2(idx);
        q[2u * l] = grid_bytes(g.x) * signs4(sg, 0u);
        q[2u * l + 1u] = grid_bytes(g.y) * signs4(sg, 4u);
    }
    return q;
}

// iq2_xs and iq2_s: db = d * (0.5 + nibble) * 0.25 per 16 lanes, from the scale byte at `at`.
fn affine_nibble_scales(base: u32, at: u32) -> vec4<f32> {
    return nibble_scales(f16_at(base), p0_u8_at(at));
}

fn nibble_scales(d: f32, sc: u32) -> vec4<f32> {
    return vec4<f32>(d * (0.5 + f32(sc & 15u)) * 0.25, 0.0, d * (0.5 + f32(sc >> 4u)) * 0.25, 0.0);
}

fn affine_iq2_xs(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    return affine_nibble_scales(base, base + 66u + ib);
}

// iq2_s: d, qs[32] (low 8 index bits), signs[32], qh[8] (2 index bits per group), scales[8].
fn levels_iq2_s(base: u32, ib: u32, in_row: u32) -> Chunk {
    var q: Chunk;
    let qs = block_u32_at(base + 2u + 4u * ib);
    let signs = block_u32_at(base + 34u + 4u * ib);
    let qh = p0_u8_at(base + 66u + ib);
    for (var l = 0u; l < 4u; l++) {
        let idx = ((qs >> (8u * l)) & 255u) | ((qh << (8u - 2u * l)) & 0x300u);
        let sg = (signs >> (8u * l)) & 255u;
        let g = grid_iq2(idx);
        q[2u * l] = grid_bytes(g.x) * signs4(sg, 0u);
        q[2u * l + 1u] = grid_bytes(g.y) * signs4(sg, 4u);
    }
    return q;
}

fn affine_iq2_s(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    return affine_nibble_scales(base, base + 74u + ib);
}

// iq3_xxs: d, qs[64] (8-bit grid indices), then per sub-block a u32 of 4 x 7 sign bits and a scale.
fn levels_iq3_xxs(base: u32, ib: u32, in_row: u32) -> Chunk {
    var q: Chunk;
    let signs = block_u32_at(base + 66u + 4u * ib);
    let lo = block_u32_at(base + 2u + 8u * ib);
    let hi = block_u32_at(base + 6u + 8u * ib);
    for (var l = 0u; l < 4u; l++) {
        let sg = ksigns((signs >> (7u * l)) & 127u);
        let idx = select(lo, hi, l >= 2u) >> (16u * (l % 2u));
        q[2u * l] = grid_bytes(grid_word(idx & 255u)) * signs4(sg, 0u);
        q[2u * l + 1u] = grid_bytes(grid_word((idx >> 8u) & 255u)) * signs4(sg, 4u);
    }
    return q;
}

fn affine_iq3_xxs(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    return scale_iq3_xxs(f16_at(base), block_u32_at(base + 66u + 4u * ib));
}

// d and the sub-block's sign word, whose top nibble is the scale.
fn scale_iq3_xxs(d: f32, sg: u32) -> vec4<f32> {
    return scale_only(d * (0.5 + f32(sg >> 28u)) * 0.5);
}

// iq3_s: d, qs[64], qh[8] (ninth index bits), signs[32], scales[4] (two nibbles).
fn levels_iq3_s(base: u32, ib: u32, in_row: u32) -> Chunk {
    var q: Chunk;
    let qh = p0_u8_at(base + 66u + ib);
    let lo = block_u32_at(base + 2u + 8u * ib);
    let hi = block_u32_at(base + 6u + 8u * ib);
    let signs = block_u32_at(base + 74u + 4u * ib);
    for (var l = 0u; l < 4u; l++) {
        let pair = select(lo, hi, l >= 2u) >> (16u * (l % 2u));
        let i1 = (pair & 255u) | ((qh << (8u - 2u * l)) & 256u);
        let i2 = ((pair >> 8u) & 255u) | ((qh << (7u - 2u * l)) & 256u);
        let sg = (signs >> (8u * l)) & 255u;
        q[2u * l] = grid_bytes(grid_word(i1)) * signs4(sg, 0u);
        q[2u * l + 1u] = grid_bytes(grid_word(i2)) * signs4(sg, 4u);
    }
    return q;
}

fn affine_iq3_s(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    let sc = (p0_u8_at(base + 106u + ib / 2u) >> (4u * (ib % 2u))) & 15u;
    return scale_iq3_s(f16_at(base), sc);
}

// d and the sub-block's 4-bit scale.
fn scale_iq3_s(d: f32, sc: u32) -> vec4<f32> {
    return scale_only(d * f32(1u + 2u * sc));
}

// iq1_s: d, qs[32] (low 8 index bits), qh[8] u16 (3 index bits per group, 3-bit scale, delta sign).
fn levels_iq1_s(base: u32, ib: u32, in_row: u32) -> Chunk {
    var q: Chunk;
    let qh = u16_at(base + 34u + 2u * ib);
    let delta = select(0.125, -0.125, (qh & 0x8000u) != 0u);
    let qs = block_u32_at(base + 2u + 4u * ib);
    for (var l = 0u; l < 4u; l++) {
        let idx = ((qs >> (8u * l)) & 255u) | (((qh >> (3u * l)) & 7u) << 8u);
        let g = grid_level_indices(idx);
        q[2u * l] = ternary_values(g.x) + vec4<f32>(delta);
        q[2u * l + 1u] = ternary_values(g.y) + vec4<f32>(delta);
    }
    return q;
}

fn affine_iq1_s(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    return scale_iq1_s(f16_at(base), u16_at(base + 34u + 2u * ib));
}

// d and the sub-block's u16 qh, whose bits 12..14 are the scale.
fn scale_iq1_s(d: f32, qh: u32) -> vec4<f32> {
    return scale_only(d * f32(2u * ((qh >> 12u) & 7u) + 1u));
}

// iq1_m: qs[32], qh[16] (per group: 3 index bits and the delta sign), scales[8] (3-bit scales and
// the spread binary16 super-scale).
fn levels_iq1_m(base: u32, ib: u32, in_row: u32) -> Chunk {
    var q: Chunk;
    let qs = block_u32_at(base + 4u * ib);
    let qh = u16_at(base + 32u + 2u * ib);
    for (var l = 0u; l < 4u; l++) {
        let h = qh >> (4u * l);
        let idx = ((qs >> (8u * l)) & 255u) | ((h & 7u) << 8u);
        let delta = select(0.125, -0.125, (h & 8u) != 0u);
        let g = grid_level_indices(idx);
        q[2u * l] = ternary_values(g.x) + vec4<f32>(delta);
        q[2u * l + 1u] = ternary_values(g.y) + vec4<f32>(delta);
    }
    return q;
}

fn affine_iq1_m(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    return scale_iq1_m(vec2<u32>(block_u32_at(base + 48u), block_u32_at(base + 52u)), ib);
}

// The 8 scale bytes as two words (they hold the super-scale too), for sub-block ib.
fn scale_iq1_m(sc: vec2<u32>, ib: u32) -> vec4<f32> {
    let s = (select(sc.x, sc.y, ib >= 4u) >> (16u * ((ib / 2u) % 2u))) & 0xffffu;
    let d = iq1_m_d(sc);
    let shift = 6u * (ib % 2u);
    return vec4<f32>(d * f32(2u * ((s >> shift) & 7u) + 1u), 0.0, d * f32(2u * ((s >> (shift + 3u)) & 7u) + 1u), 0.0);
}

// iq4_xs: d, scales_h (u16: 2 high bits per sub-block), scales_l[4] (nibbles), qs[128]. Lanes
// 0..15 are the low nibbles of the sub-block's 16 bytes, 16..31 the high ones.
fn levels_iq4_xs(base: u32, ib: u32, in_row: u32) -> Chunk {
    let n = legacy_nibbles(base + 8u + 16u * ib);
    var q: Chunk;
    for (var i = 0u; i < 8u; i++) {
        q[i] = kvalues4(n[i]);
    }
    return q;
}

// 6-bit scales minus 32: dl = d * ls.
fn affine_iq4_xs(base: u32, ib: u32, in_row: u32) -> vec4<f32> {
    // d and scales_h share the first word.
    let first = block_u32_at(base);
    let low = (p0_u8_at(base + 4u + ib / 2u) >> (4u * (ib % 2u))) & 15u;
    let ls = i32(low | (((first >> (16u + 2u * ib)) & 3u) << 4u)) - 32;
    return scale_only(f16_bits_to_f32(first & 0xffffu) * f32(ls));
}
