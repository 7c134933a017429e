//! ggml's k-quants (256-value super-blocks): q2_k, q3_k, q4_k, q5_k, q6_k. The arithmetic
//! follows `dequantize_row_q*_K` in ggml-quants.c expression by expression (unfused: a separate
//! rounding for every product and difference), since the value of a gguf weight is defined as
//! what that code computes.

use super::f16_at;

/// block_q2_K { uint8_t scales[16]; uint8_t qs[64]; ggml_half d; ggml_half dmin; }.
/// Per 16 values: `dl = d * (sc & 0xF)`, `ml = dmin * (sc >> 4)`, `y = dl * q - ml`.
pub fn q2_k(b: &[u8], y: &mut [f32]) {
    let (scales, qs) = (&b[0..16], &b[16..80]);
    let d = f16_at(b, 80);
    let dmin = f16_at(b, 82);
    let mut is = 0;
    let mut out = 0;
    for half in 0..2 {
        let q = &qs[32 * half..32 * half + 32];
        for shift in [0, 2, 4, 6] {
            for part in 0..2 {
                let sc = scales[is];
                is += 1;
                let dl = d * (sc & 0xF) as f32;
                let ml = dmin * (sc >> 4) as f32;
                for l in 0..16 {
                    y[out] = dl * ((q[16 * part + l] >> shift) & 3) as f32 - ml;
                    out += 1;
                }
            }
        }
    }
}

/// The 16 signed 6-bit scales of q3_K, unpacked as ggml does (low 4 bits from bytes 0..7, high
/// 2 bits from bytes 8..11), minus 32.
fn q3_k_scales(s: &[u8]) -> [i32; 16] {
    let mut out = [0i32; 16];
    for (i, v) in out.iter_mut().enumerate() {
        let low = if i < 8 { s[i] & 0x0F } else { s[i - 8] >> 4 };
        let high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        *v = (low | (high << 4)) as i32 - 32;
    }
    out
}

/// block_q3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; ggml_half d; }.
/// `dl = d * (scale - 32)`, `y = dl * (q2 - (hmask bit ? 0 : 4))`.
pub fn q3_k(b: &[u8], y: &mut [f32]) {
    let (hmask, qs) = (&b[0..32], &b[32..96]);
    let scales = q3_k_scales(&b[96..108]);
    let d = f16_at(b, 108);
    let mut is = 0;
    let mut out = 0;
    let mut m = 1u8;
    for half in 0..2 {
        let q = &qs[32 * half..32 * half + 32];
        for shift in [0, 2, 4, 6] {
            for part in 0..2 {
                let dl = d * scales[is] as f32;
                is += 1;
                for l in 0..16 {
                    let k = 16 * part + l;
                    let low = ((q[k] >> shift) & 3) as i32;
                    let sub = if hmask[k] & m != 0 { 0 } else { 4 };
                    y[out] = dl * (low - sub) as f32;
                    out += 1;
                }
            }
            m = m.wrapping_shl(1);
        }
    }
}

/// get_scale_min_k4: 6-bit scale and min `j` of the 12 packed bytes of q4_K/q5_K.
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// The two (scale, min) multipliers of 64-value chunk `j` of q4_K/q5_K: `d * sc`, `dmin * m`.
fn chunk_multipliers(j: usize, scales: &[u8], d: f32, dmin: f32) -> [(f32, f32); 2] {
    [2 * j, 2 * j + 1].map(|is| {
        let (sc, m) = scale_min_k4(is, scales);
        (d * sc as f32, dmin * m as f32)
    })
}

/// block_q4_K { ggml_half d; ggml_half dmin; uint8_t scales[12]; uint8_t qs[128]; }.
/// Per 32 values: `d1 = d * sc`, `m1 = dmin * m`, `y = d1 * q - m1`.
pub fn q4_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let dmin = f16_at(b, 2);
    let scales = &b[4..16];
    let qs = &b[16..144];
    for j in 0..4 {
        let [(d1, min1), (d2, min2)] = chunk_multipliers(j, scales, d, dmin);
        let q = &qs[32 * j..32 * j + 32];
        for l in 0..32 {
            y[64 * j + l] = d1 * (q[l] & 0xF) as f32 - min1;
            y[64 * j + 32 + l] = d2 * (q[l] >> 4) as f32 - min2;
        }
    }
}

/// block_q5_K { ggml_half d; ggml_half dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; }.
pub fn q5_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let dmin = f16_at(b, 2);
    let scales = &b[4..16];
    let qh = &b[16..48];
    let qs = &b[48..176];
    for j in 0..4 {
        let [(d1, min1), (d2, min2)] = chunk_multipliers(j, scales, d, dmin);
        let (u1, u2) = (1u8 << (2 * j), 2u8 << (2 * j));
        let q = &qs[32 * j..32 * j + 32];
        for l in 0..32 {
            let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
            let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
            y[64 * j + l] = d1 * ((q[l] & 0xF) + h1) as f32 - min1;
            y[64 * j + 32 + l] = d2 * ((q[l] >> 4) + h2) as f32 - min2;
        }
    }
}

/// block_q6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; ggml_half d; }.
/// `y = d * scale * q` evaluated left to right: `(d * scale) * q`.
pub fn q6_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 208);
    for n in 0..2 {
        let ql = &b[64 * n..64 * n + 64];
        let qh = &b[128 + 32 * n..128 + 32 * n + 32];
        let sc = &b[192 + 8 * n..192 + 8 * n + 8];
        for l in 0..32 {
            let is = l / 16;
            let q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i32 - 32;
            let q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
            let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
            let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
            let s = |i: usize| sc[is + i] as i8 as f32;
            y[128 * n + l] = d * s(0) * q1 as f32;
            y[128 * n + l + 32] = d * s(2) * q2 as f32;
            y[128 * n + l + 64] = d * s(4) * q3 as f32;
            y[128 * n + l + 96] = d * s(6) * q4 as f32;
        }
    }
}
