// block_scale_k16_m128x4_v1 (nvfp4): E2M1 nibbles row-major in plane0 (K/2 bytes per row),
// E4M3FN scale words in 128x4 swizzled tiles in plane1 (the pass starts on a 128-row tile), and
// the FP32 divisors in plane2 (off2 = byte offset of divisor 0).
// aux0 = K / 64 (scale tiles per 128-row band), aux1 = N / divisors (rows per source matrix).
//
// Weight = (e2m1 * e4m3) / d_w: the product of the two minifloats is exact (at most 6
// significant bits, never subnormal), and the division is the one rounding. Any finite positive
// d_w is legal, subnormal or near 2^128, but WGSL promises 2.5 ULP only for divisors in
// [2^-126, 2^126]: divide_by_word divides by d_w's significand and applies its exponent exactly.
// That 2.5 ULP is why nvfp4 dequant is judged by the bounded criterion.

fn scale_at(row: u32, g: u32) -> f32 {
    let band = row / 128u;
    let ri = row % 128u;
    let tile = band * P.aux0 + g / 4u;
    return e4m3fn_to_f32(p1_u8_at(P.off1 + tile * 512u + (ri % 32u) * 16u + (ri / 32u) * 4u + g % 4u));
}

fn divisor_word(row: u32) -> u32 {
    return plane2[(P.off2 / 4u) + (P.row0 + row) / P.aux1];
}

// Chunk c holds two 16-value groups, 2c and 2c + 1.
fn chunk_values(row: u32, c: u32) -> Chunk {
    var v: Chunk;
    let base = (P.off0 + row * P.stride0) / 4u + c * 4u;
    for (var j = 0u; j < 4u; j++) {
        let w = plane0[base + j];
        for (var t = 0u; t < 2u; t++) {
            let s = 16u * t;
            v[j * 2u + t] = vec4<f32>(
                e2m1_to_f32((w >> s) & 15u),
                e2m1_to_f32((w >> (s + 4u)) & 15u),
                e2m1_to_f32((w >> (s + 8u)) & 15u),
                e2m1_to_f32((w >> (s + 12u)) & 15u));
        }
    }
    return v;
}

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    let v = chunk_values(row, c);
    let s0 = scale_at(row, 2u * c);
    let s1 = scale_at(row, 2u * c + 1u);
    let d = divisor_word(row);
    var out: ChunkBits;
    for (var i = 0u; i < 8u; i++) {
        let p = v[i] * select(s1, s0, i < 4u);
        out[i] = bitcast<vec4<u32>>(vec4<f32>(divide_by_word(p.x, d), divide_by_word(p.y, d), divide_by_word(p.z, d), divide_by_word(p.w, d)));
    }
    return out;
}

fn chunk_dot(row: u32, c: u32) -> f32 {
    let v = chunk_values(row, c);
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {
        a0 += v[i] * x4(c, i);
        a1 += v[i + 4u] * x4(c, i + 4u);
    }
    return (a0.x + a0.y + a0.z + a0.w) * scale_at(row, 2u * c) + (a1.x + a1.y + a1.z + a1.w) * scale_at(row, 2u * c + 1u);
}

// The divisor is applied once per row, after the reduction.
fn row_finish(row: u32, acc: f32) -> f32 {
    return divide_by_word(acc, divisor_word(row));
}
