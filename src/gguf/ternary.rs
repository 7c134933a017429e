//! ggml's ternary 256-value blocks (BitNet b1.58 models): tq1_0, base-3 packed, and tq2_0, two
//! bits a value, each with one binary16 scale `d` at the block's end. Every value is `d * (t - 1)`
//! with a digit t of at most 3: exact, as in ggml's `dequantize_row_tq*_0`.

use super::f16_at;

/// Digit n (0..5) of a tq1_0 byte, as ggml extracts it: the byte times 3^n modulo 256 is the
/// byte's fixed-point fraction shifted by n digits, and its top "trit" is `(q * 3) >> 8`.
pub fn tq1_digit(byte: u8, n: usize) -> u8 {
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    let q = byte.wrapping_mul(POW3[n]);
    ((q as u16 * 3) >> 8) as u8
}

/// block_tq1_0 { uint8_t qs[48]; uint8_t qh[4]; ggml_half d; } (54 bytes): values 0..159 are
/// digit n of qs[m] at 32n + m (m < 32); values 160..239 digit n of qs[32 + m] at 160 + 16n + m
/// (m < 16); values 240..255 digit n of qh[m] at 240 + 4n + m (n < 4); `y = (t - 1) * d`.
pub fn tq1_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 52);
    let value = |byte: u8, n: usize| (tq1_digit(byte, n) as i32 - 1) as f32 * d;
    for n in 0..5 {
        for m in 0..32 {
            y[32 * n + m] = value(b[m], n);
        }
        for m in 0..16 {
            y[160 + 16 * n + m] = value(b[32 + m], n);
        }
    }
    for n in 0..4 {
        for m in 0..4 {
            y[240 + 4 * n + m] = value(b[48 + m], n);
        }
    }
}

/// block_tq2_0 { uint8_t qs[64]; ggml_half d; } (66 bytes): value 128h + 32l + m is bits 2l..2l+2
/// of qs[32h + m]; `y = (t - 1) * d`, t in 0..=3.
pub fn tq2_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 64);
    for h in 0..2 {
        for l in 0..4 {
            for m in 0..32 {
                let t = (b[32 * h + m] >> (2 * l)) & 3;
                y[128 * h + 32 * l + m] = (t as i32 - 1) as f32 * d;
            }
        }
    }
}
