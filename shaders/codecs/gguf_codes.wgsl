// gguf_blocks_v1 as the A8 profile reads it: each chunk's weights as 32 int8 codes packed four
// per u32 (values 0..15 in Codes[0], 16..31 in Codes[1], lowest byte first) and the affine map
// `w = a · code - b` per 16-value half, in the same (a0, b0, a1, b1) order as chunk_affine.
// Included after shaders/codecs/gguf_blocks.wgsl, whose loaders and A32 maps it reuses. Each ggml type
// has one decoder, named by the registry's A8 reader (src/format.rs, A8Reader) and called through
// block_codes, block_affine8 and block_pair8, which the host generates: `codes_<type>` with
// `affine8_<type>` for a chunk alone (the 32- and 64-value blocks, and iq4_xs), or `pair_<type>`
// for two sub-blocks of a 256-value block that share words (the k-quants and grid i-quants).
//
// Codes are whole words of the block masked and shifted in place wherever the stored bits allow
// (four weights per operation): a level with an offset (q4_0's nibble - 8, q3_K's, q6_K's - 32)
// keeps the unsigned code and moves the offset into b; iq1's grid value plus its ±1/8 delta is
// the integer 8·g ± 1 with a/8.

const LOW_NIBBLES = vec4<u32>(0x0f0f0f0fu);
const LOW_BITS = vec4<u32>(0x01010101u);
const LOW_PAIRS = vec4<u32>(0x03030303u);

// Four consecutive u32 of plane 0 from byte `b` (see block_words4).
fn words4(b: u32) -> vec4<u32> {
    return block_words4(b);
}

// Bits 0..3 of `b` to the lowest bit of bytes 0..3: the multiply's four copies of the nibble (at
// bits 0, 7, 14 and 21) do not overlap, so nothing carries, and bit k of copy k is bit 8k.
fn spread4(b: u32) -> u32 {
    return ((b & 15u) * 0x00204081u) & 0x01010101u;
}

fn spread16(b: u32) -> vec4<u32> {
    return vec4<u32>(spread4(b), spread4(b >> 4u), spread4(b >> 8u), spread4(b >> 12u));
}

// The bytes of `g` negated where bits 0..3 of `bits` are set: (g ^ 0xff) + 1 per byte, which
// carries into the next byte only for g = 0 — and no grid byte is 0: iq2's are its three levels
// (grid_iq2), iq3's stored words (src/gpu/kernels/tests.rs tests both).
fn negate_where(g: u32, bits: u32) -> u32 {
    let ones = spread4(bits);
    return (g ^ (ones * 0xffu)) + ones;
}

// 8·g ± 1 per value g ∈ {-1, 0, 1} of an iq1 entry, from its level indices i = g + 1: on
// bytes biased by 128 (8i - 8 ± 1 + 128 stays in 119..137, so nothing borrows across a byte).
fn ternary_codes(i: u32, plus: bool) -> u32 {
    let b = 0x78787878u + (i << 3u);
    return select(b - 0x01010101u, b + 0x01010101u, plus) ^ 0x80808080u;
}

// A 16-entry table (table_byte) applied to four nibble bytes, as int8 bytes.
fn table_bytes(table: vec4<u32>, n: u32) -> u32 {
    var out = 0u;
    for (var k = 0u; k < 4u; k++) {
        out |= table_byte(table, (n >> (8u * k)) & 15u) << (8u * k);
    }
    return out;
}

fn table_words(table: vec4<u32>, n: vec4<u32>) -> vec4<u32> {
    return vec4<u32>(table_bytes(table, n.x), table_bytes(table, n.y), table_bytes(table, n.z), table_bytes(table, n.w));
}

fn kvalue_words(n: vec4<u32>) -> vec4<u32> {
    return table_words(KVALUES_IQ4NL, n);
}

// Four values (0..255) as the bytes of one word, lowest first.
fn pack_bytes(v: vec4<u32>) -> u32 {
    return v.x | (v.y << 8u) | (v.z << 16u) | (v.w << 24u);
}

fn with_offsets(f: vec4<f32>, k: f32) -> vec4<f32> {
    return vec4<f32>(f.x, k * f.x, f.z, k * f.z);
}

// The chunk decoders' maps: the A32 map where the codes are the A32 levels, with the offset
// where they differ (q4_0's nibble - 8 keeps the unsigned nibble as its code).
fn affine8_q8_0(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return scale_only(f16_at(base));
}

fn affine8_iq4_nl(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return scale_only(f16_at(base));
}

fn affine8_q4_0(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return with_offsets(scale_only(f16_at(base)), 8.0);
}

fn affine8_q5_0(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return with_offsets(scale_only(f16_at(base)), 16.0);
}

// q4_1's and q5_1's codes are their A32 levels (unsigned), and so is the map (a = d, b = -m).
fn affine8_q4_1(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return affine_q4_1(base, j, in_row);
}

fn affine8_q5_1(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return affine_q4_1(base, j, in_row);
}

fn affine8_q2_0(base: u32, j: u32, c: u32) -> vec4<f32> {
    return with_offsets(scale_only(f16_at(base)), 1.0);
}

// mxfp4's codes are kvalues_mxfp4 (integers), so its map is the true scale 2^(e - 128) — a
// binary32 subnormal for e < 2 (ggml's bits), which A8 on a flushing device reads as 0; the
// A32 map avoids it (affine_mxfp4).
fn affine8_mxfp4(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    let e = p0_u8_at(base);
    return scale_only(bitcast<f32>(select((e - 1u) << 23u, 0x00200000u << e, e < 2u)));
}

// tq1_0's codes are its unsigned trits t, the offset 1 in b: w = d · t - d.
fn affine8_tq1_0(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return with_offsets(affine_tq1_0(base, j, in_row), 1.0);
}

fn affine8_iq4_xs(base: u32, j: u32, in_row: u32) -> vec4<f32> {
    return affine_iq4_xs(base, j, in_row);
}

// ---- legacy blocks ---------------------------------------------------------------------------

// The legacy blocks of 2 mod 4 bytes (q8_0's 34, q4_0's and iq4_nl's 18, q5_0's 22) start on a
// word or half-way into one (rows start on words), so the aligned words from the block's first
// hold all of it: one load per word (the first is the one chunk_affine8 reads d from), where
// each field's unaligned run took one or two loads more (q8_0: 9 instead of 11 with d's; each
// load is a per-lane loop on CPU drivers).
const WINDOW_WORDS: u32 = (BLOCK_BYTES + 5u) / 4u;
alias Window = array<u32, WINDOW_WORDS>;

fn block_window(base: u32) -> Window {
    var win: Window;
    for (var k = 0u; k < WINDOW_WORDS; k++) {
        win[k] = plane0[(base >> 2u) + k];
    }
    return win;
}

// The u32 at block byte 2 + 4k: across words k and k + 1 of the window for a block that starts
// on a word, word k + 1 for one that starts half-way.
fn window_u32(win: Window, k: u32, half: bool) -> u32 {
    return select((win[k] >> 16u) | (win[k + 1u] << 16u), win[k + 1u], half);
}

fn window_words4(win: Window, k: u32, half: bool) -> vec4<u32> {
    return vec4<u32>(window_u32(win, k, half), window_u32(win, k + 1u, half), window_u32(win, k + 2u, half), window_u32(win, k + 3u, half));
}

fn starts_half_way(base: u32) -> bool {
    return (base & 2u) != 0u;
}

fn codes_q8_0(base: u32, j: u32, in_row: u32) -> Codes {
    let win = block_window(base);
    let half = starts_half_way(base);
    return Codes(window_words4(win, 0u, half), window_words4(win, 4u, half));
}

// Value j < 16 is the low nibble of byte j, value j >= 16 the high one.
fn nibble_codes(w: vec4<u32>) -> Codes {
    return Codes(w & LOW_NIBBLES, (w >> vec4<u32>(4u)) & LOW_NIBBLES);
}

// The 16 nibble bytes at qs (iq4_xs).
fn legacy_nibble_codes(qs: u32) -> Codes {
    return nibble_codes(words4(qs));
}

// q4_0's and iq4_nl's 16 nibble bytes after d.
fn codes_q4_0(base: u32, j: u32, in_row: u32) -> Codes {
    return nibble_codes(window_words4(block_window(base), 0u, starts_half_way(base)));
}

// d, qh (bytes 2..6), then 16 nibble bytes.
fn codes_q5_0(base: u32, j: u32, in_row: u32) -> Codes {
    let win = block_window(base);
    let half = starts_half_way(base);
    let n = nibble_codes(window_words4(win, 1u, half));
    let qh = window_u32(win, 0u, half);
    return Codes(n[0] | (spread16(qh) << vec4<u32>(4u)), n[1] | (spread16(qh >> 16u) << vec4<u32>(4u)));
}

// q4_1 and q5_1 are whole words (20 and 24 bytes), so their fields are aligned words: no window.
fn codes_q4_1(base: u32, j: u32, in_row: u32) -> Codes {
    return nibble_codes(words4(base + 4u));
}

fn codes_q5_1(base: u32, j: u32, in_row: u32) -> Codes {
    let n = nibble_codes(words4(base + 8u));
    let qh = block_u32_at(base + 4u);
    return Codes(n[0] | (spread16(qh) << vec4<u32>(4u)), n[1] | (spread16(qh >> 16u) << vec4<u32>(4u)));
}

// mxfp4: the E8M0 byte, then q4_0's nibbles through kvalues_mxfp4.
fn codes_mxfp4(base: u32, j: u32, in_row: u32) -> Codes {
    let n = nibble_codes(words4(base + 1u));
    return Codes(table_words(KVALUES_MXFP4, n[0]), table_words(KVALUES_MXFP4, n[1]));
}

fn codes_tq1_0(base: u32, j: u32, in_row: u32) -> Codes {
    let t = tq1_0_trits(base, j);
    return Codes(vec4<u32>(pack_bytes(t[0]), pack_bytes(t[1]), pack_bytes(t[2]), pack_bytes(t[3])),
                 vec4<u32>(pack_bytes(t[4]), pack_bytes(t[5]), pack_bytes(t[6]), pack_bytes(t[7])));
}

fn codes_iq4_nl(base: u32, j: u32, in_row: u32) -> Codes {
    let n = codes_q4_0(base, 0u, 0u);
    return Codes(kvalue_words(n[0]), kvalue_words(n[1]));
}

// q2_0 chunk half h: bytes [8h, 8h + 8) of the codes, each byte four 2-bit values.
fn codes_q2_0(base: u32, sub: u32, c: u32) -> Codes {
    var q: Codes;
    for (var j = 0u; j < 2u; j++) {
        let w = block_u32_at(base + 2u + 8u * (c % 2u) + 4u * j);
        q[j] = vec4<u32>(spread_pairs(w & 255u), spread_pairs((w >> 8u) & 255u), spread_pairs((w >> 16u) & 255u), spread_pairs(w >> 24u));
    }
    return q;
}

// ---- k-quants ----------------------------------------------------------------------------------

// Decoded a pair of sub-blocks at a time (pair_q4_k and the rest, below): their sub-blocks share
// code words.

// ---- i-quants: per group l of 8 values, its grid entry's two words with their signs ----------

fn signed_pair(lo: u32, hi: u32, signs: u32) -> vec2<u32> {
    return vec2<u32>(negate_where(lo, signs), negate_where(hi, signs >> 4u));
}

// An iq2 grid entry with its 8 sign bits.
fn grid64_pair(idx: u32, signs: u32) -> vec2<u32> {
    let g = grid_iq2(idx);
    return signed_pair(g.x, g.y, signs);
}

fn from_groups(g0: vec2<u32>, g1: vec2<u32>, g2: vec2<u32>, g3: vec2<u32>) -> Codes {
    return Codes(vec4<u32>(g0, g1), vec4<u32>(g2, g3));
}

// Each i-quant's sub-block decoder takes the block words it reads, already loaded: a pair of
// sub-blocks (pair_<type> below) loads its words once for both.

// iq2_xxs: four grid indices (the bytes of idx), 4 x 7 sign bits (sg; its top nibble is the scale).
fn iq2_xxs_codes(idx: u32, sg: u32) -> Codes {
    var g: array<vec2<u32>, 4>;
    for (var l = 0u; l < 4u; l++) {
        g[l] = grid64_pair((idx >> (8u * l)) & 255u, ksigns((sg >> (7u * l)) & 127u));
    }
    return from_groups(g[0], g[1], g[2], g[3]);
}

// iq2_xs: four u16 (9-bit grid index, 7 sign bits), two per word.
fn iq2_xs_codes(w: vec2<u32>) -> Codes {
    var g: array<vec2<u32>, 4>;
    for (var l = 0u; l < 4u; l++) {
        let v = w[l / 2u] >> (16u * (l % 2u));
        g[l] = grid64_pair(v & 511u, ksigns((v >> 9u) & 127u));
    }
    return from_groups(g[0], g[1], g[2], g[3]);
}

// iq2_s: the low 8 bits of four grid indices (qs), their 8 sign bits each (sg), and the qh byte
// holding the indices' top two bits.
fn iq2_s_codes(qs: u32, sg: u32, qh: u32) -> Codes {
    var g: array<vec2<u32>, 4>;
    for (var l = 0u; l < 4u; l++) {
        let idx = ((qs >> (8u * l)) & 255u) | ((qh << (8u - 2u * l)) & 0x300u);
        g[l] = grid64_pair(idx, (sg >> (8u * l)) & 255u);
    }
    return from_groups(g[0], g[1], g[2], g[3]);
}

// iq3_xxs: eight 8-bit grid indices (lo, hi) and 4 x 7 sign bits (sg).
fn iq3_xxs_codes(lo: u32, hi: u32, sg: u32) -> Codes {
    var g: array<vec2<u32>, 4>;
    for (var l = 0u; l < 4u; l++) {
        let idx = select(lo, hi, l >= 2u) >> (16u * (l % 2u));
        g[l] = signed_pair(grid_word(idx & 255u), grid_word((idx >> 8u) & 255u), ksigns((sg >> (7u * l)) & 127u));
    }
    return from_groups(g[0], g[1], g[2], g[3]);
}

// iq3_s: the low 8 bits of eight grid indices (lo, hi), the qh byte of their ninth bits, and
// 4 x 8 sign bits (sg).
fn iq3_s_codes(lo: u32, hi: u32, qh: u32, sg: u32) -> Codes {
    var g: array<vec2<u32>, 4>;
    for (var l = 0u; l < 4u; l++) {
        let pair = select(lo, hi, l >= 2u) >> (16u * (l % 2u));
        let i1 = (pair & 255u) | ((qh << (8u - 2u * l)) & 256u);
        let i2 = ((pair >> 8u) & 255u) | ((qh << (7u - 2u * l)) & 256u);
        g[l] = signed_pair(grid_word(i1), grid_word(i2), (sg >> (8u * l)) & 255u);
    }
    return from_groups(g[0], g[1], g[2], g[3]);
}

fn ternary_pair(idx: u32, plus: bool) -> vec2<u32> {
    let i = grid_level_indices(idx);
    return vec2<u32>(ternary_codes(i.x, plus), ternary_codes(i.y, plus));
}

// iq1_s: the low 8 bits of four grid indices (qs) and the u16 qh (3 more bits each, the scale,
// the delta's sign).
fn iq1_s_codes(qs: u32, qh: u32) -> Codes {
    let plus = (qh & 0x8000u) == 0u;
    var g: array<vec2<u32>, 4>;
    for (var l = 0u; l < 4u; l++) {
        g[l] = ternary_pair(((qs >> (8u * l)) & 255u) | (((qh >> (3u * l)) & 7u) << 8u), plus);
    }
    return from_groups(g[0], g[1], g[2], g[3]);
}

// iq1_m: the low 8 bits of four grid indices (qs) and the u16 qh (per group 3 more bits and the
// delta's sign).
fn iq1_m_codes(qs: u32, qh: u32) -> Codes {
    var g: array<vec2<u32>, 4>;
    for (var l = 0u; l < 4u; l++) {
        let h = qh >> (4u * l);
        g[l] = ternary_pair(((qs >> (8u * l)) & 255u) | ((h & 7u) << 8u), (h & 8u) == 0u);
    }
    return from_groups(g[0], g[1], g[2], g[3]);
}

fn codes_iq4_xs(base: u32, ib: u32, in_row: u32) -> Codes {
    let n = legacy_nibble_codes(base + 8u + 16u * ib);
    return Codes(kvalue_words(n[0]), kvalue_words(n[1]));
}

// ---- pairs: chunks c and c + 1 (c even) of 256-value blocks, sharing the words both read ---------
// A q4_K/q5_K byte holds a value of each sub-block of a pair, q2_K/q3_K bytes four sub-blocks,
// q6_K's high bits four; scales and d serve the whole block. Decoding a pair at once loads each
// shared word once, which on CPU drivers (one bounds-checked load per invocation per word) is
// most of a chunk's cost.

fn pair_q4_k_at(base: u32, j: u32, qs: u32) -> Pair8 {
    let w0 = words4(qs + 32u * (j / 2u));
    let w1 = words4(qs + 32u * (j / 2u) + 16u);
    // d, dmin and the 12 scale bytes: the block's first four words.
    let head = words4(base);
    let dm = f16_pair_of(head.x);
    let sa = scale_min_k4_of(j, head.yzw);
    let sb = scale_min_k4_of(j + 1u, head.yzw);
    let four = vec4<u32>(4u);
    return Pair8(Codes(w0 & LOW_NIBBLES, w1 & LOW_NIBBLES), Codes((w0 >> four) & LOW_NIBBLES, (w1 >> four) & LOW_NIBBLES),
                 vec4<f32>(dm.x * sa.x, dm.y * sa.y, dm.x * sa.x, dm.y * sa.y),
                 vec4<f32>(dm.x * sb.x, dm.y * sb.y, dm.x * sb.x, dm.y * sb.y));
}

fn pair_q4_k(base: u32, j: u32, in_row: u32) -> Pair8 {
    return pair_q4_k_at(base, j, base + 16u);
}

fn pair_q5_k(base: u32, j: u32, in_row: u32) -> Pair8 {
    var p = pair_q4_k_at(base, j, base + 48u);
    let h0 = words4(base + 16u);
    let h1 = words4(base + 32u);
    let sa = vec4<u32>(j);
    let sb = vec4<u32>(j + 1u);
    let four = vec4<u32>(4u);
    p.a = Codes(p.a[0] | (((h0 >> sa) & LOW_BITS) << four), p.a[1] | (((h1 >> sa) & LOW_BITS) << four));
    p.b = Codes(p.b[0] | (((h0 >> sb) & LOW_BITS) << four), p.b[1] | (((h1 >> sb) & LOW_BITS) << four));
    return p;
}

// q2_K/q3_K: the 32 code bytes of half h, fields s and s + 1 (j = 4h + s, s even).
fn two_bit_pair(qs: u32, j: u32) -> array<Codes, 2> {
    let w0 = words4(qs + 32u * (j / 4u));
    let w1 = words4(qs + 32u * (j / 4u) + 16u);
    let sa = vec4<u32>(2u * (j % 4u));
    let sb = sa + vec4<u32>(2u);
    return array<Codes, 2>(Codes((w0 >> sa) & LOW_PAIRS, (w1 >> sa) & LOW_PAIRS),
                           Codes((w0 >> sb) & LOW_PAIRS, (w1 >> sb) & LOW_PAIRS));
}

// tq2_0: its 64 code bytes are q2_K's layout from the block's start; d at byte 64; the unsigned
// codes t with the offset 1 in b (w = d · t - d).
fn pair_tq2_0(base: u32, j: u32, in_row: u32) -> Pair8 {
    let c = two_bit_pair(base, j);
    let f = with_offsets(affine_tq2_0(base, j, in_row), 1.0);
    return Pair8(c[0], c[1], f, f);
}

fn pair_q2_k(base: u32, j: u32, in_row: u32) -> Pair8 {
    let c = two_bit_pair(base + 16u, j);
    let dm = f16_pair_at(base + 80u);
    // Scales is..is + 3 (is = two_bit_scale_index(j), a multiple of 4): one word.
    let sc = block_u32_at(base + two_bit_scale_index(j));
    let s = vec4<u32>(sc & 255u, (sc >> 8u) & 255u, (sc >> 16u) & 255u, sc >> 24u);
    let lo = vec4<f32>(s & vec4<u32>(15u));
    let hi = vec4<f32>(s >> vec4<u32>(4u));
    return Pair8(c[0], c[1], vec4<f32>(dm.x * lo.x, dm.y * hi.x, dm.x * lo.y, dm.y * hi.y),
                 vec4<f32>(dm.x * lo.z, dm.y * hi.z, dm.x * lo.w, dm.y * hi.w));
}

fn pair_q3_k(base: u32, j: u32, in_row: u32) -> Pair8 {
    let low = two_bit_pair(base + 32u, j);
    let m0 = words4(base);
    let m1 = words4(base + 16u);
    let sa = vec4<u32>(j);
    let sb = vec4<u32>(j + 1u);
    let two = vec4<u32>(2u);
    let a = Codes(low[0][0] | (((m0 >> sa) & LOW_BITS) << two), low[0][1] | (((m1 >> sa) & LOW_BITS) << two));
    let b = Codes(low[1][0] | (((m0 >> sb) & LOW_BITS) << two), low[1][1] | (((m1 >> sb) & LOW_BITS) << two));
    // Scales is..is + 3 (a multiple of 4): low bits from one word, high bits from bytes 8..11.
    let is = two_bit_scale_index(j);
    let lows = block_u32_at(base + 96u + is % 8u);
    let highs = block_u32_at(base + 104u);
    let k = vec4<u32>(0u, 8u, 16u, 24u);
    let l = select((vec4<u32>(lows) >> (k + vec4<u32>(4u))) & vec4<u32>(15u), (vec4<u32>(lows) >> k) & vec4<u32>(15u), is < 8u);
    let h = (vec4<u32>(highs) >> (k + vec4<u32>(2u * (is / 4u)))) & vec4<u32>(3u);
    let d = f16_at(base + 108u);
    let sc = d * vec4<f32>(vec4<i32>(l | (h << vec4<u32>(4u))) - vec4<i32>(32));
    return Pair8(a, b, vec4<f32>(sc.x, 4.0 * sc.x, sc.y, 4.0 * sc.y), vec4<f32>(sc.z, 4.0 * sc.z, sc.w, 4.0 * sc.w));
}

fn pair_q6_k(base: u32, j: u32, in_row: u32) -> Pair8 {
    let n = j / 4u;
    let t = j % 4u;
    let ql = base + 64u * n;
    let qh0 = words4(base + 128u + 32u * n);
    let qh1 = words4(base + 144u + 32u * n);
    let sl = vec4<u32>(select(0u, 4u, t >= 2u));
    let sha = vec4<u32>(2u * t);
    let shb = sha + vec4<u32>(2u);
    let four = vec4<u32>(4u);
    let a = Codes(((words4(ql) >> sl) & LOW_NIBBLES) | (((qh0 >> sha) & LOW_PAIRS) << four),
                  ((words4(ql + 16u) >> sl) & LOW_NIBBLES) | (((qh1 >> sha) & LOW_PAIRS) << four));
    let b = Codes(((words4(ql + 32u) >> sl) & LOW_NIBBLES) | (((qh0 >> shb) & LOW_PAIRS) << four),
                  ((words4(ql + 48u) >> sl) & LOW_NIBBLES) | (((qh1 >> shb) & LOW_PAIRS) << four));
    // The four int8 scales of the pair: one word.
    let sc = bitcast<vec4<i32>>(vec4<u32>(block_u32_at(base + 192u + 8u * n + 2u * t)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u);
    let s = f16_at(base + 208u) * vec4<f32>(sc);
    return Pair8(a, b, vec4<f32>(s.x, 32.0 * s.x, s.y, 32.0 * s.y), vec4<f32>(s.z, 32.0 * s.z, s.w, 32.0 * s.w));
}

// i-quant sub-blocks j and j + 1 (j even): their index and sign bytes lie side by side, so a pair
// loads them as one window (16 bytes at a 2-byte offset: five aligned words) and d once, where
// two single sub-blocks took 12 to 16 loads (iq2_xs: 7 instead of 12). Every load with a
// per-invocation address is a per-lane loop on lavapipe, most of an i-quant's count
// (docs/performance.md#every-load-is-a-per-lane-loop-on-lavapipe,
// docs/performance.md#i-quant-pair-decoders).

fn pair_iq2_xxs(base: u32, j: u32, in_row: u32) -> Pair8 {
    let w = block_words4(base + 2u + 8u * j);
    let d = f16_at(base);
    return Pair8(iq2_xxs_codes(w.x, w.y), iq2_xxs_codes(w.z, w.w), scale_iq2_xxs(d, w.y), scale_iq2_xxs(d, w.w));
}

fn pair_iq2_xs(base: u32, j: u32, in_row: u32) -> Pair8 {
    let w = block_words4(base + 2u + 8u * j);
    // The two sub-blocks' scale bytes: one u16 (j is even).
    let sc = u16_at(base + 66u + j);
    let d = f16_at(base);
    return Pair8(iq2_xs_codes(w.xy), iq2_xs_codes(w.zw), nibble_scales(d, sc & 255u), nibble_scales(d, sc >> 8u));
}

fn pair_iq2_s(base: u32, j: u32, in_row: u32) -> Pair8 {
    let qs = block_words2(base + 2u + 4u * j);
    let sg = block_words2(base + 34u + 4u * j);
    let qh = u16_at(base + 66u + j);
    let sc = u16_at(base + 74u + j);
    let d = f16_at(base);
    return Pair8(iq2_s_codes(qs.x, sg.x, qh & 255u), iq2_s_codes(qs.y, sg.y, qh >> 8u),
                 nibble_scales(d, sc & 255u), nibble_scales(d, sc >> 8u));
}

fn pair_iq3_xxs(base: u32, j: u32, in_row: u32) -> Pair8 {
    let w = block_words4(base + 2u + 8u * j);
    let sg = block_words2(base + 66u + 4u * j);
    let d = f16_at(base);
    return Pair8(iq3_xxs_codes(w.x, w.y, sg.x), iq3_xxs_codes(w.z, w.w, sg.y), scale_iq3_xxs(d, sg.x), scale_iq3_xxs(d, sg.y));
}

fn pair_iq3_s(base: u32, j: u32, in_row: u32) -> Pair8 {
    let w = block_words4(base + 2u + 8u * j);
    let qh = u16_at(base + 66u + j);
    let sg = block_words2(base + 74u + 4u * j);
    // Sub-block j's scale is the low nibble (j is even), j + 1's the high one.
    let sc = p0_u8_at(base + 106u + j / 2u);
    let d = f16_at(base);
    return Pair8(iq3_s_codes(w.x, w.y, qh & 255u, sg.x), iq3_s_codes(w.z, w.w, qh >> 8u, sg.y),
                 scale_iq3_s(d, sc & 15u), scale_iq3_s(d, sc >> 4u));
}

// iq1's codes are 8 g ± 1 (gguf_codes' header): the map carries the 1/8.
fn pair_iq1_s(base: u32, j: u32, in_row: u32) -> Pair8 {
    let qs = block_words2(base + 2u + 4u * j);
    // The two sub-blocks' u16 qh.
    let qh = block_u32_at(base + 34u + 2u * j);
    let d = f16_at(base);
    let qa = qh & 0xffffu;
    let qb = qh >> 16u;
    return Pair8(iq1_s_codes(qs.x, qa), iq1_s_codes(qs.y, qb), scale_iq1_s(d, qa) * 0.125, scale_iq1_s(d, qb) * 0.125);
}

fn pair_iq1_m(base: u32, j: u32, in_row: u32) -> Pair8 {
    let qs = block_words2(base + 4u * j);
    let qh = block_u32_at(base + 32u + 2u * j);
    let sc = block_words2(base + 48u);
    return Pair8(iq1_m_codes(qs.x, qh & 0xffffu), iq1_m_codes(qs.y, qh >> 16u),
                 scale_iq1_m(sc, j) * 0.125, scale_iq1_m(sc, j + 1u) * 0.125);
}

// Chunks c and c + 1 (c even; A8_PAIRS: blocks of 64 values or more): the type's shared-word
// decoder where it has one (PAIR_DECODER, generated from the registry's A8 reader), or its
// single-chunk decoder twice (q2_0, iq4_xs).
fn chunk_pair8(row: u32, c: u32) -> Pair8 {
    if PAIR_DECODER {
        return block_pair8(block_base(row, c), c % 8u, c);
    }
    return Pair8(chunk_codes(row, c), chunk_codes(row, c + 1u), chunk_affine8(row, c), chunk_affine8(row, c + 1u));
}

// ---- the A8 codec interface --------------------------------------------------------------------

fn nan_codes() -> Codes {
    // Any codes: chunk_affine8 makes the chunk NaN.
    return Codes(vec4<u32>(0u), vec4<u32>(0u));
}

fn chunk_codes(row: u32, c: u32) -> Codes {
    return block_codes(block_base(row, c), c % 8u, c);
}

fn chunk_affine8(row: u32, c: u32) -> vec4<f32> {
    return block_affine8(block_base(row, c), c % 8u, c);
}
