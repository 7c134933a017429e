//! ggml's 32- and 64-value blocks: q8_0, q4_0, q5_0, q4_1, q5_1, q2_0, iq4_nl and mxfp4. Each
//! value is one product of exactly representable factors, `d * q`, plus for q4_1 and q5_1 the
//! block's minimum `m` (one rounding), as in ggml's `dequantize_row_*`.

use super::{f16_at, tables::KVALUES_IQ4NL};

/// block_q8_0 { ggml_half d; int8_t qs[32]; }: `y = qs[j] * d`.
pub fn q8_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for (j, out) in y.iter_mut().enumerate().take(32) {
        *out = (b[2 + j] as i8) as f32 * d;
    }
}

/// block_q4_0 { ggml_half d; uint8_t qs[16]; }: low nibbles are values 0..15, high nibbles
/// 16..31; `y = ((nibble) - 8) * d`.
pub fn q4_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        y[j] = ((q & 0x0F) as i32 - 8) as f32 * d;
        y[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
    }
}

/// block_q5_0 { ggml_half d; uint8_t qh[4]; uint8_t qs[16]; }: bit j of qh is value j's fifth
/// bit (bit j + 16 for value j + 16); `y = (q - 16) * d`.
pub fn q5_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    for j in 0..16 {
        let xh0 = ((qh >> j) << 4) & 0x10;
        let xh1 = (qh >> (j + 12)) & 0x10;
        let q = b[6 + j] as u32;
        y[j] = (((q & 0x0F) | xh0) as i32 - 16) as f32 * d;
        y[j + 16] = (((q >> 4) | xh1) as i32 - 16) as f32 * d;
    }
}

/// block_q4_1 { ggml_half d; ggml_half m; uint8_t qs[16]; }: q4_0's nibbles unsigned,
/// `y = q * d + m` (the product is exact, so the addition is the one rounding).
pub fn q4_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    for j in 0..16 {
        let q = b[4 + j];
        y[j] = (q & 0x0F) as f32 * d + m;
        y[j + 16] = (q >> 4) as f32 * d + m;
    }
}

/// block_q5_1 { ggml_half d; ggml_half m; uint8_t qh[4]; uint8_t qs[16]; }: q5_0's five-bit
/// levels unsigned, `y = q * d + m`.
pub fn q5_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    for j in 0..16 {
        let xh0 = ((qh >> j) << 4) & 0x10;
        let xh1 = (qh >> (j + 12)) & 0x10;
        let q = b[8 + j] as u32;
        y[j] = ((q & 0x0F) | xh0) as f32 * d + m;
        y[j + 16] = ((q >> 4) | xh1) as f32 * d + m;
    }
}

/// gguf_q2_0 (ggml type 42, layouts.md): binary16 d, then 16 bytes of 2-bit codes, value j at
/// `(qs[j/4] >> 2*(j%4)) & 3`; `y = d * (c - 1)`.
pub fn q2_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for (j, out) in y.iter_mut().enumerate().take(64) {
        let c = (b[2 + j / 4] >> (2 * (j % 4))) & 3;
        *out = d * (c as i32 - 1) as f32;
    }
}

/// block_iq4_nl { ggml_half d; uint8_t qs[16]; }: `y = d * kvalues_iq4nl[nibble]`.
pub fn iq4_nl(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        y[j] = d * KVALUES_IQ4NL[(q & 0x0F) as usize] as f32;
        y[j + 16] = d * KVALUES_IQ4NL[(q >> 4) as usize] as f32;
    }
}

/// kvalues_mxfp4: the E2M1 values doubled, as integers (code 8, E2M1's -0, is 0 here: ggml
/// multiplies the int8 0, so it decodes to +0).
pub const KVALUES_MXFP4: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// ggml's GGML_E8M0_TO_FP32_HALF: half the E8M0 scale, `2^(e - 128)`, built on the bits — the
/// binary32 subnormals 2^-128 and 2^-127 for e = 0 and 1; e = 255, OCP MX's NaN, is 2^127 here
/// as in ggml (docs/ggml-formats.md#gguf_mxfp4).
pub fn e8m0_half(e: u8) -> f32 {
    f32::from_bits(match e {
        0 | 1 => 0x0020_0000 << e,
        _ => (e as u32 - 1) << 23,
    })
}

/// block_mxfp4 { uint8_t e; uint8_t qs[16]; }: nibbles as q4_0's; `y = kvalues_mxfp4[n] * d`
/// with `d = e8m0_half(e)` — exact where it does not overflow (e = 255 times |q| >= 2 is ±inf).
pub fn mxfp4(b: &[u8], y: &mut [f32]) {
    let d = e8m0_half(b[0]);
    for j in 0..16 {
        let q = b[1 + j];
        y[j] = KVALUES_MXFP4[(q & 0x0F) as usize] as f32 * d;
        y[j + 16] = KVALUES_MXFP4[(q >> 4) as usize] as f32 * d;
    }
}
