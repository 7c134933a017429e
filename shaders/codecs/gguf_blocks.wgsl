// gguf_blocks_v1: ggml's legacy blocks q8_0, q4_0, q5_0, iq4_nl (32 values), q2_0 (64 values)
// and the k-quants q2_K, q3_K, q4_K, q5_K, q6_K (256 values). Row `row` starts at plane0 byte
// off0 + row*stride0; blocks are BLOCK_BYTES long and not 4-byte aligned in general (q4_0 is 18
// bytes, q6_K 210), so every read goes through the unaligned loaders. A 32-value chunk lies
// inside one block; in a k-quant it is one (or two) of the block's sub-blocks.
//
// Constants prepended by the host from the registry: BLOCK_VALUES, BLOCK_BYTES, and GGUF_KIND
// (which inner decoder below; one per ggml type, like ggml-webgpu's per-type sections).
//
// Legacy weight = d * q with d a binary16 (at most 11 significant bits, never an f32 subnormal)
// and |q| <= 127: exact in binary32. k-quants follow ggml's expressions, which are exact too:
// q4_K/q5_K `(d*sc)*q - dmin*m` multiplies an 11-bit d by a 6-bit scale (17 bits) and a 4/5-bit
// level (at most 22 bits) exactly, so the one subtraction is the only rounding — fused or not;
// q6_K `(d*sc)*q` is 11 + 7 + 6 = 24 bits, exact; q2_K `d*(sc&15)*q - dmin*(sc>>4)` and q3_K
// `(d*(sc-32))*q` are 17 and 20 bits before their one (or no) rounding.

const KIND_Q8_0: u32 = 0u;
const KIND_Q4_0: u32 = 1u;
const KIND_Q5_0: u32 = 2u;
const KIND_IQ4_NL: u32 = 3u;
const KIND_Q2_0: u32 = 4u;
const KIND_Q4_K: u32 = 5u;
const KIND_Q5_K: u32 = 6u;
const KIND_Q6_K: u32 = 7u;
const KIND_Q2_K: u32 = 8u;
const KIND_Q3_K: u32 = 9u;
const KIND_IQ2_XXS: u32 = 10u;
const KIND_IQ2_XS: u32 = 11u;
const KIND_IQ2_S: u32 = 12u;
const KIND_IQ3_XXS: u32 = 13u;
const KIND_IQ3_S: u32 = 14u;
const KIND_IQ1_S: u32 = 15u;
const KIND_IQ1_M: u32 = 16u;
const KIND_IQ4_XS: u32 = 17u;

// k-quants and i-quants: 256-value blocks whose chunks are affine maps of integer levels.
fn is_kquant() -> bool {
    return GGUF_KIND >= KIND_Q4_K && GGUF_KIND < KIND_IQ2_XXS;
}

fn is_iquant() -> bool {
    return GGUF_KIND >= KIND_IQ2_XXS;
}

fn f16_at(b: u32) -> f32 {
    return f16_bits_to_f32(p0_u32_at(b) & 0xffffu);
}

// get_scale_min_k4: the 6-bit (scale, min) of sub-block j from the 12 packed bytes at `at`.
fn scale_min_k4(j: u32, at: u32) -> vec2<f32> {
    if j < 4u {
        return vec2<f32>(f32(p0_u8_at(at + j) & 63u), f32(p0_u8_at(at + j + 4u) & 63u));
    }
    let sc = (p0_u8_at(at + j + 4u) & 0xfu) | ((p0_u8_at(at + j - 4u) >> 6u) << 4u);
    let m = (p0_u8_at(at + j + 4u) >> 4u) | ((p0_u8_at(at + j) >> 6u) << 4u);
    return vec2<f32>(f32(sc), f32(m));
}

// q3_K's 16 signed 6-bit scales, unpacked as ggml does (low 4 bits from bytes 0..7, high 2 bits
// from bytes 8..11), minus 32; `at` is the 12 packed bytes.
fn q3_k_scale(i: u32, at: u32) -> f32 {
    let low = select(p0_u8_at(at + i - 8u) >> 4u, p0_u8_at(at + i) & 15u, i < 8u);
    let high = (p0_u8_at(at + 8u + i % 4u) >> (2u * (i / 4u))) & 3u;
    return f32(i32(low | (high << 4u)) - 32);
}

// A k-quant chunk's affine map: weight = a * q - b for lanes 0..15 (.xy) and 16..31 (.zw).
fn kquant_affine(row: u32, c: u32) -> vec4<f32> {
    let base = block_base(row, c);
    let j = c % 8u;
    // q2_K and q3_K: chunk j = 4h + s is shift 2s of half h; its two 16-value parts have scales
    // is = 8h + 2s and is + 1.
    let is = 8u * (j / 4u) + 2u * (j % 4u);
    if GGUF_KIND == KIND_Q2_K {
        // dl = d * (sc & 0xF), ml = dmin * (sc >> 4); y = dl * q - ml.
        let d = f16_at(base + 80u);
        let dmin = f16_at(base + 82u);
        let s0 = p0_u8_at(base + is);
        let s1 = p0_u8_at(base + is + 1u);
        return vec4<f32>(d * f32(s0 & 15u), dmin * f32(s0 >> 4u), d * f32(s1 & 15u), dmin * f32(s1 >> 4u));
    }
    if GGUF_KIND == KIND_Q3_K {
        // dl = d * (scale - 32); y = dl * (q - (hmask bit ? 0 : 4)).
        let d = f16_at(base + 108u);
        return vec4<f32>(d * q3_k_scale(is, base + 96u), 0.0, d * q3_k_scale(is + 1u, base + 96u), 0.0);
    }
    if GGUF_KIND == KIND_Q6_K {
        // y = d * sc[is] * q with is = 8n + l/16 + 2t for chunk j = 4n + t.
        let d = f16_at(base + 208u);
        let sc = base + 192u + 8u * (j / 4u) + 2u * (j % 4u);
        let s0 = f32(bitcast<i32>(p0_u8_at(sc) << 24u) >> 24u);
        let s1 = f32(bitcast<i32>(p0_u8_at(sc + 1u) << 24u) >> 24u);
        return vec4<f32>(d * s0, 0.0, d * s1, 0.0);
    }
    // q4_K, q5_K: d1 = d * sc, m1 = dmin * m for sub-block j.
    let sm = scale_min_k4(j, base + 4u);
    let a = f16_at(base) * sm.x;
    let b = f16_at(base + 2u) * sm.y;
    return vec4<f32>(a, b, a, b);
}

fn p0_u8_at(b: u32) -> u32 {
    return (plane0[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

// kvalues_iq4nl packed four int8 per u32 (read by shifts: a dynamically indexed const array is
// copied to function memory by some compilers).
fn kvalue_iq4nl(i: u32) -> f32 {
    let words = vec4<u32>(0xbfad9881u, 0xf6eaddcfu, 0x26190d01u, 0x71594535u);
    let w = select(select(words.x, words.y, i >= 4u), select(words.z, words.w, i >= 12u), i >= 8u);
    return f32(bitcast<i32>(w << (24u - 8u * (i & 3u))) >> 24u);
}

// The block holding chunk c of a row, and the first value of the chunk inside it.
fn block_base(row: u32, c: u32) -> u32 {
    return P.off0 + row * P.stride0 + (c * 32u / BLOCK_VALUES) * BLOCK_BYTES;
}

// The chunk's 32 k-quant levels q (unsigned for q4_K/q5_K, q6_K's already minus 32).
fn kquant_levels(row: u32, c: u32) -> Chunk {
    let base = block_base(row, c);
    let j = c % 8u;
    var q: Chunk;
    let bytes = vec4<u32>(0u, 8u, 16u, 24u);
    for (var i = 0u; i < 8u; i++) {
        if GGUF_KIND == KIND_Q2_K || GGUF_KIND == KIND_Q3_K {
            // Chunk j = 4h + s: bits 2s..2s+1 of the 32 code bytes of half h; q3_K subtracts 4
            // where bit j of the hmask byte is clear.
            let qs = base + select(16u, 32u, GGUF_KIND == KIND_Q3_K) + 32u * (j / 4u);
            let low = (vec4<u32>(p0_u32_at(qs + 4u * i)) >> (bytes + vec4<u32>(2u * (j % 4u)))) & vec4<u32>(3u);
            var level = vec4<i32>(low);
            if GGUF_KIND == KIND_Q3_K {
                let hm = (vec4<u32>(p0_u32_at(base + 4u * i)) >> (bytes + vec4<u32>(j))) & vec4<u32>(1u);
                level -= vec4<i32>(4) * vec4<i32>(vec4<u32>(1u) - hm);
            }
            q[i] = vec4<f32>(level);
        } else if GGUF_KIND == KIND_Q6_K {
            // Chunk j = 4n + t: ql byte 64n + l (+32 for odd t), low nibble for t < 2, and two
            // bits of qh byte 128 + 32n + l at shift 2t.
            let n = j / 4u;
            let t = j % 4u;
            let ql = vec4<u32>(p0_u32_at(base + 64u * n + 4u * i + select(0u, 32u, (t & 1u) == 1u)));
            let qh = vec4<u32>(p0_u32_at(base + 128u + 32u * n + 4u * i));
            let low = (ql >> (bytes + vec4<u32>(select(0u, 4u, t >= 2u)))) & vec4<u32>(15u);
            let high = (qh >> (bytes + vec4<u32>(2u * t))) & vec4<u32>(3u);
            q[i] = vec4<f32>(vec4<i32>(low | (high << vec4<u32>(4u))) - vec4<i32>(32));
        } else {
            // q4_K, q5_K: sub-block j's values are nibble (j % 2) of the 32 bytes of pair j / 2.
            let qs = base + select(16u, 48u, GGUF_KIND == KIND_Q5_K) + 32u * (j / 2u);
            var u = (vec4<u32>(p0_u32_at(qs + 4u * i)) >> (bytes + vec4<u32>(4u * (j % 2u)))) & vec4<u32>(15u);
            if GGUF_KIND == KIND_Q5_K {
                let hbits = vec4<u32>(p0_u32_at(base + 16u + 4u * i));
                u += ((hbits >> (bytes + vec4<u32>(j))) & vec4<u32>(1u)) << vec4<u32>(4u);
            }
            q[i] = vec4<f32>(u);
        }
    }
    return q;
}

fn chunk_scale(row: u32, c: u32) -> f32 {
    return f16_bits_to_f32(p0_u32_at(block_base(row, c)) & 0xffffu);
}

// The chunk's 32 integer levels q (the weight is d * q).
fn chunk_levels(row: u32, c: u32) -> Chunk {
    let base = block_base(row, c);
    var q: Chunk;
    if GGUF_KIND == KIND_Q8_0 {
        for (var i = 0u; i < 8u; i++) {
            let w = bitcast<vec4<i32>>(vec4<u32>(p0_u32_at(base + 2u + 4u * i)) << vec4<u32>(24u, 16u, 8u, 0u));
            q[i] = vec4<f32>(w >> vec4<u32>(24u));
        }
    } else if GGUF_KIND == KIND_Q2_0 {
        // 64-value block: chunk half h takes code bytes [8h, 8h + 8); q = c - 1.
        let half = (c * 32u) % BLOCK_VALUES / 32u;
        for (var j = 0u; j < 2u; j++) {
            let w = vec4<u32>(p0_u32_at(base + 2u + 8u * half + 4u * j));
            for (var t = 0u; t < 4u; t++) {
                let u = (w >> (vec4<u32>(0u, 2u, 4u, 6u) + vec4<u32>(8u * t))) & vec4<u32>(3u);
                q[4u * j + t] = vec4<f32>(vec4<i32>(u) - vec4<i32>(1));
            }
        }
    } else {
        // q4_0, q5_0, iq4_nl: value j < 16 is the low nibble of byte j, value j >= 16 the high one.
        let qs = base + select(2u, 6u, GGUF_KIND == KIND_Q5_0);
        let qh = select(0u, p0_u32_at(base + 2u), GGUF_KIND == KIND_Q5_0);
        for (var j = 0u; j < 4u; j++) {
            let w = p0_u32_at(qs + 4u * j);
            for (var h = 0u; h < 2u; h++) {
                var v: vec4<f32>;
                for (var l = 0u; l < 4u; l++) {
                    let lane = 4u * j + l;
                    let nib = (w >> (8u * l + 4u * h)) & 15u;
                    if GGUF_KIND == KIND_IQ4_NL {
                        v[l] = kvalue_iq4nl(nib);
                    } else if GGUF_KIND == KIND_Q5_0 {
                        let hi = (qh >> (lane + 16u * h)) & 1u;
                        v[l] = f32(i32(nib | (hi << 4u)) - 16);
                    } else {
                        v[l] = f32(i32(nib) - 8);
                    }
                }
                q[j + 4u * h] = v;
            }
        }
    }
    return q;
}

// The chunk's levels and affine map, for every 256-value block format.
fn affine_levels(row: u32, c: u32) -> Chunk {
    if is_iquant() {
        return iquant_levels(row, c);
    }
    return kquant_levels(row, c);
}

fn affine_map(row: u32, c: u32) -> vec4<f32> {
    if is_iquant() {
        return iquant_affine(row, c);
    }
    return kquant_affine(row, c);
}

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    if is_kquant() || is_iquant() {
        let q = affine_levels(row, c);
        let f = affine_map(row, c);
        var out: ChunkBits;
        for (var i = 0u; i < 8u; i++) {
            let ab = select(f.zw, f.xy, i < 4u);
            out[i] = bitcast<vec4<u32>>(ab.x * q[i] - vec4<f32>(ab.y));
        }
        return out;
    }
    return scaled_bits(chunk_levels(row, c), chunk_scale(row, c));
}

// K is a multiple of the block, so every chunk is whole.
fn chunk_dot(row: u32, c: u32) -> f32 {
    if is_kquant() || is_iquant() {
        // Σ (a q - b) x = a Σ q x - b Σ x, per 16-lane half.
        let q = affine_levels(row, c);
        let f = affine_map(row, c);
        var qx0 = vec4<f32>(0.0);
        var qx1 = vec4<f32>(0.0);
        var sx0 = vec4<f32>(0.0);
        var sx1 = vec4<f32>(0.0);
        for (var i = 0u; i < 4u; i++) {
            let x0 = x4(c, i);
            let x1 = x4(c, i + 4u);
            qx0 += q[i] * x0;
            qx1 += q[i + 4u] * x1;
            sx0 += x0;
            sx1 += x1;
        }
        let h0 = vec2<f32>(qx0.x + qx0.y + qx0.z + qx0.w, sx0.x + sx0.y + sx0.z + sx0.w);
        let h1 = vec2<f32>(qx1.x + qx1.y + qx1.z + qx1.w, sx1.x + sx1.y + sx1.z + sx1.w);
        return f.x * h0.x - f.y * h0.y + f.z * h1.x - f.w * h1.y;
    }
    return chunk_sum_qx(chunk_levels(row, c), c) * chunk_scale(row, c);
}

fn row_finish(row: u32, acc: f32) -> f32 {
    return acc;
}

// ---- i-quants -------------------------------------------------------------------------------
// Grid tables (ggml's iq2xxs_grid, iq3s_grid, iq1s_grid, ...) are bound as plane1, as u32 words
// (a u64 entry is two words, low first). Every chunk is one 32-value sub-block; a lane's level is
// a grid value times its sign (iq1: grid value plus delta), and the chunk's map is its db (or dl)
// for lanes 0..15 and 16..31. All of ggml's products here are exact in binary32: an 11-bit d
// times a <= 5-bit scale factor times a <= 6-bit grid value.

// ksigns_iq2xs[i]: the 7 sign bits of i plus a parity bit that makes the count of negatives even.
fn ksigns(i: u32) -> u32 {
    return i | ((countOneBits(i) & 1u) << 7u);
}

fn signs4(bits: u32, first: u32) -> vec4<f32> {
    let on = ((vec4<u32>(bits) >> (vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(first))) & vec4<u32>(1u)) != vec4<u32>(0u);
    return select(vec4<f32>(1.0), vec4<f32>(-1.0), on);
}

// The four unsigned bytes of a grid word as f32.
fn grid_bytes(w: u32) -> vec4<f32> {
    return vec4<f32>((vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u));
}

// The four int8 bytes of an iq1s_grid word (-1, 0, 1) as f32.
fn grid_ternary(w: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

fn u16_at(b: u32) -> u32 {
    return p0_u32_at(b) & 0xffffu;
}

// iq1_m's binary16 super-scale, spread over the top nibbles of the four u16 scale words.
fn iq1_m_d(base: u32) -> f32 {
    let s0 = u16_at(base + 48u);
    let s1 = u16_at(base + 50u);
    let s2 = u16_at(base + 52u);
    let s3 = u16_at(base + 54u);
    return f16_bits_to_f32((s0 >> 12u) | ((s1 >> 8u) & 0x00f0u) | ((s2 >> 4u) & 0x0f00u) | (s3 & 0xf000u));
}

fn iquant_affine(row: u32, c: u32) -> vec4<f32> {
    let base = block_base(row, c);
    let ib = c % 8u;
    switch GGUF_KIND {
        case KIND_IQ2_XXS: {
            let db = f16_at(base) * (0.5 + f32(p0_u32_at(base + 2u + 8u * ib + 4u) >> 28u)) * 0.25;
            return vec4<f32>(db, 0.0, db, 0.0);
        }
        case KIND_IQ3_XXS: {
            let db = f16_at(base) * (0.5 + f32(p0_u32_at(base + 66u + 4u * ib) >> 28u)) * 0.5;
            return vec4<f32>(db, 0.0, db, 0.0);
        }
        case KIND_IQ2_XS, KIND_IQ2_S: {
            let sc = p0_u8_at(base + select(66u, 74u, GGUF_KIND == KIND_IQ2_S) + ib);
            let d = f16_at(base);
            return vec4<f32>(d * (0.5 + f32(sc & 15u)) * 0.25, 0.0, d * (0.5 + f32(sc >> 4u)) * 0.25, 0.0);
        }
        case KIND_IQ3_S: {
            let sc = (p0_u8_at(base + 106u + ib / 2u) >> (4u * (ib % 2u))) & 15u;
            let db = f16_at(base) * f32(1u + 2u * sc);
            return vec4<f32>(db, 0.0, db, 0.0);
        }
        case KIND_IQ1_S: {
            let qh = u16_at(base + 34u + 2u * ib);
            let dl = f16_at(base) * f32(2u * ((qh >> 12u) & 7u) + 1u);
            return vec4<f32>(dl, 0.0, dl, 0.0);
        }
        case KIND_IQ1_M: {
            let s = u16_at(base + 48u + 2u * (ib / 2u));
            let d = iq1_m_d(base);
            let shift = 6u * (ib % 2u);
            return vec4<f32>(d * f32(2u * ((s >> shift) & 7u) + 1u), 0.0, d * f32(2u * ((s >> (shift + 3u)) & 7u) + 1u), 0.0);
        }
        default: {
            // iq4_xs: 6-bit scales minus 32.
            let low = (p0_u8_at(base + 4u + ib / 2u) >> (4u * (ib % 2u))) & 15u;
            let ls = i32(low | (((u16_at(base + 2u) >> (2u * ib)) & 3u) << 4u)) - 32;
            let dl = f16_at(base) * f32(ls);
            return vec4<f32>(dl, 0.0, dl, 0.0);
        }
    }
}

fn iquant_levels(row: u32, c: u32) -> Chunk {
    let base = block_base(row, c);
    let ib = c % 8u;
    var q: Chunk;
    for (var l = 0u; l < 4u; l++) {
        var lo: vec4<f32>;
        var hi: vec4<f32>;
        switch GGUF_KIND {
            case KIND_IQ2_XXS: {
                let idx = (p0_u32_at(base + 2u + 8u * ib) >> (8u * l)) & 255u;
                let sg = ksigns((p0_u32_at(base + 2u + 8u * ib + 4u) >> (7u * l)) & 127u);
                lo = grid_bytes(plane1[2u * idx]) * signs4(sg, 0u);
                hi = grid_bytes(plane1[2u * idx + 1u]) * signs4(sg, 4u);
            }
            case KIND_IQ2_XS: {
                let v = u16_at(base + 2u + 2u * (4u * ib + l));
                let idx = v & 511u;
                let sg = ksigns(v >> 9u);
                lo = grid_bytes(plane1[2u * idx]) * signs4(sg, 0u);
                hi = grid_bytes(plane1[2u * idx + 1u]) * signs4(sg, 4u);
            }
            case KIND_IQ2_S: {
                let idx = p0_u8_at(base + 2u + 4u * ib + l) | ((p0_u8_at(base + 66u + ib) << (8u - 2u * l)) & 0x300u);
                let sg = p0_u8_at(base + 34u + 4u * ib + l);
                lo = grid_bytes(plane1[2u * idx]) * signs4(sg, 0u);
                hi = grid_bytes(plane1[2u * idx + 1u]) * signs4(sg, 4u);
            }
            case KIND_IQ3_XXS: {
                let sg = ksigns((p0_u32_at(base + 66u + 4u * ib) >> (7u * l)) & 127u);
                lo = grid_bytes(plane1[p0_u8_at(base + 2u + 8u * ib + 2u * l)]) * signs4(sg, 0u);
                hi = grid_bytes(plane1[p0_u8_at(base + 2u + 8u * ib + 2u * l + 1u)]) * signs4(sg, 4u);
            }
            case KIND_IQ3_S: {
                let qh = p0_u8_at(base + 66u + ib);
                let i1 = p0_u8_at(base + 2u + 8u * ib + 2u * l) | ((qh << (8u - 2u * l)) & 256u);
                let i2 = p0_u8_at(base + 2u + 8u * ib + 2u * l + 1u) | ((qh << (7u - 2u * l)) & 256u);
                let sg = p0_u8_at(base + 74u + 4u * ib + l);
                lo = grid_bytes(plane1[i1]) * signs4(sg, 0u);
                hi = grid_bytes(plane1[i2]) * signs4(sg, 4u);
            }
            case KIND_IQ1_S: {
                let qh = u16_at(base + 34u + 2u * ib);
                let idx = p0_u8_at(base + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8u);
                let delta = select(0.125, -0.125, (qh & 0x8000u) != 0u);
                lo = grid_ternary(plane1[2u * idx]) + vec4<f32>(delta);
                hi = grid_ternary(plane1[2u * idx + 1u]) + vec4<f32>(delta);
            }
            case KIND_IQ1_M: {
                // Grid index bits 8..10 and the delta's sign: nibble l of the two qh bytes.
                let h = p0_u8_at(base + 32u + 2u * ib + l / 2u) >> (4u * (l % 2u));
                let idx = p0_u8_at(base + 4u * ib + l) | ((h & 7u) << 8u);
                let delta = select(0.125, -0.125, (h & 8u) != 0u);
                lo = grid_ternary(plane1[2u * idx]) + vec4<f32>(delta);
                hi = grid_ternary(plane1[2u * idx + 1u]) + vec4<f32>(delta);
            }
            default: {
                // iq4_xs: lanes 0..15 are the low nibbles of the sub-block's 16 bytes, 16..31 the
                // high ones; group l covers lanes 8l..8l+7.
                let half = l / 2u;
                let w0 = p0_u32_at(base + 8u + 16u * ib + 8u * (l % 2u));
                let w1 = p0_u32_at(base + 8u + 16u * ib + 8u * (l % 2u) + 4u);
                let shift = vec4<u32>(0u, 8u, 16u, 24u) + vec4<u32>(4u * half);
                let n0 = (vec4<u32>(w0) >> shift) & vec4<u32>(15u);
                let n1 = (vec4<u32>(w1) >> shift) & vec4<u32>(15u);
                lo = vec4<f32>(kvalue_iq4nl(n0.x), kvalue_iq4nl(n0.y), kvalue_iq4nl(n0.z), kvalue_iq4nl(n0.w));
                hi = vec4<f32>(kvalue_iq4nl(n1.x), kvalue_iq4nl(n1.y), kvalue_iq4nl(n1.z), kvalue_iq4nl(n1.w));
            }
        }
        q[2u * l] = lo;
        q[2u * l + 1u] = hi;
    }
    return q;
}
