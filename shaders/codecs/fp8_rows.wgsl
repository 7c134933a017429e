// fp8 rows — row_scale_v1 (bf16 multipliers after the code plane) and row_interleaved_v1
// (binary16 multiplier after each row's codes): E4M3FN codes at plane0 byte off0 + row*stride0 + k,
// the row multiplier at plane1 byte off1 + row*stride1. Rows need not be 4-byte aligned.
// Constant prepended by the host: SCALE_BF16 (true: bf16 multiplier, false: binary16).
//
// Dequant builds binary32(c32 * s32) with integer operations: the exact product of a 4-bit and
// an 8- or 11-bit significand always fits binary32 (a bf16-subnormal multiplier can make it an
// f32 subnormal, which an f32 multiply may flush), so the word is assembled, never computed.

// Significand (integer) and exponent of an E4M3FN word: value = sig * 2^exp.
fn e4m3_sig_exp(c: u32) -> vec2<i32> {
    let e = i32((c >> 3u) & 0xfu);
    let m = i32(c & 7u);
    if e == 0 {
        return vec2<i32>(m, -9);
    }
    return vec2<i32>(8 + m, e - 10);
}

// Significand and exponent of the row multiplier.
fn scale_sig_exp(h: u32) -> vec2<i32> {
    if SCALE_BF16 {
        let e = i32((h >> 7u) & 0xffu);
        let m = i32(h & 0x7fu);
        if e == 0 {
            return vec2<i32>(m, -133);
        }
        return vec2<i32>(128 + m, e - 134);
    }
    let e = i32((h >> 10u) & 0x1fu);
    let m = i32(h & 0x3ffu);
    if e == 0 {
        return vec2<i32>(m, -24);
    }
    return vec2<i32>(1024 + m, e - 25);
}

// The exact binary32 word of sig * 2^exp (sig < 2^24; the value is representable or overflows).
fn exact_word(sign: u32, sig: u32, exp: i32) -> u32 {
    if sig == 0u {
        return sign;
    }
    let msb = 31 - i32(countLeadingZeros(sig));
    let top = msb + exp;
    if top > 127 {
        return sign | 0x7f800000u;
    }
    if top >= -126 {
        return sign | (u32(top + 127) << 23u) | ((sig << u32(23 - msb)) & 0x7fffffu);
    }
    // Subnormal: the fraction is sig * 2^(exp + 149), an exact left shift (exp >= -142).
    return sign | (sig << u32(exp + 149));
}

fn code_at(row: u32, k: u32) -> u32 {
    let b = P.off0 + row * P.stride0 + k;
    return (plane0[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    let h = p1_u16_at(P.off1 + row * P.stride1);
    let s = scale_sig_exp(h);
    var out: ChunkBits;
    for (var i = 0u; i < 8u; i++) {
        var word = vec4<u32>(0u);
        for (var l = 0u; l < 4u; l++) {
            let code = code_at(row, c * 32u + 4u * i + l);
            let q = e4m3_sig_exp(code);
            word[l] = exact_word((code & 0x80u) << 24u, u32(q.x * s.x), q.y + s.y);
        }
        out[i] = word;
    }
    return out;
}

fn chunk_dot(row: u32, c: u32) -> f32 {
    let base = P.off0 + row * P.stride0 + c * 32u;
    let last = (c + 1u) * 32u > P.k;
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        let w = p0_u32_at(base + 4u * i);
        var v = vec4<f32>(e4m3fn_to_f32(w & 0xffu), e4m3fn_to_f32((w >> 8u) & 0xffu), e4m3fn_to_f32((w >> 16u) & 0xffu), e4m3fn_to_f32(w >> 24u));
        if last {
            // Bytes past K belong to the next row or the multipliers: mask them, since a NaN
            // code there times a zero x would still be NaN.
            let k = vec4<u32>(c * 32u + 4u * i) + vec4<u32>(0u, 1u, 2u, 3u);
            v = select(v, vec4<f32>(0.0), k >= vec4<u32>(P.k));
        }
        acc += v * x4(c, i);
    }
    // The multiplier as significand times 2^exp: a bf16-subnormal multiplier is an f32
    // subnormal, which a platform may flush when fed to a multiply.
    let s = scale_sig_exp(p1_u16_at(P.off1 + row * P.stride1));
    return scale_pow2((acc.x + acc.y + acc.z + acc.w) * f32(s.x), s.y);
}

fn row_finish(row: u32, acc: f32) -> f32 {
    return acc;
}
