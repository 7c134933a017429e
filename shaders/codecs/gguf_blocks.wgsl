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

fn is_kquant() -> bool {
    return GGUF_KIND >= KIND_Q4_K;
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

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    if is_kquant() {
        let q = kquant_levels(row, c);
        let f = kquant_affine(row, c);
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
    if is_kquant() {
        // Σ (a q - b) x = a Σ q x - b Σ x, per 16-lane half.
        let q = kquant_levels(row, c);
        let f = kquant_affine(row, c);
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
