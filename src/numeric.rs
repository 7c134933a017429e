//! Exact scalar words: binary16, bf16, E4M3FN and E2M1.
//!
//! Decoding is exact: every word of these formats is a binary32 value (or NaN). Encoding from
//! binary32 rounds to nearest, ties to even — the one rounding rule of the reference — and refuses
//! (rather than saturates) a value beyond a format's largest finite word when the format has no
//! infinity: saturation is a conversion method's decision (fp8_row_maxabs clamps first).

use crate::error::{Error, Result};
use half::f16;

/// binary16 bits to binary32, exactly (subnormals, signed zeros, infinities; NaN stays NaN).
pub fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}

/// fp16's words as ggml widens them (docs/ggml-formats.md#fp16): values exactly, as
/// [`f16_to_f32`]; a NaN keeps its sign and payload (the significand shifted up by 13) with
/// the quiet bit set, as F16C's `vcvtph2ps` and ggml's portable conversion both do. Spelled
/// out rather than left to `half`, since the GPU codec writes the same word by bit operations.
pub fn binary16_to_f32(bits: u16) -> f32 {
    let bits = bits as u32;
    if bits & 0x7C00 == 0x7C00 && bits & 0x3FF != 0 {
        return f32::from_bits(((bits & 0x8000) << 16) | 0x7FC0_0000 | ((bits & 0x3FF) << 13));
    }
    f16_to_f32(bits as u16)
}

/// binary32 to binary16 with round-to-nearest-even; overflow gives ±inf and underflow a subnormal
/// or ±0, as IEEE-754 says. Callers that must refuse those outcomes check the result.
pub fn f32_to_f16(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

/// bf16 bits to binary32: the word becomes the high half of the binary32 word (section 3.1), so
/// every bf16 word, NaN payloads included, expands exactly.
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// binary32 to bf16 with round-to-nearest-even on the low 16 bits.
///
/// NaN: the high 16 bits are kept and the quiet bit (0x0040) is set, so a NaN whose payload lives
/// only in the low bits cannot truncate into an infinity. Finite values that round past the largest
/// bf16 become ±inf, as IEEE-754 rounding requires.
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) as u16) | 0x0040;
    }
    // Nearest, ties to even: add 0x7FFF plus the lowest kept bit, then truncate. Below the halfway
    // point nothing carries; above it the carry rounds up; exactly at it the carry happens only
    // when the kept part is odd.
    let lsb = (bits >> 16) & 1;
    (bits.wrapping_add(0x7FFF + lsb) >> 16) as u16
}

/// A small binary floating-point format without infinities, described by the facts rounding needs.
struct MiniFloat {
    name: &'static str,
    mantissa_bits: i32,
    /// Exponent of the smallest normal value; subnormals share its quantum.
    min_normal_exp: i32,
    /// Sign bit of the word.
    sign: u8,
    /// Positive words in increasing value order are `0..=max_word` (the NaN word excluded).
    max_word: u8,
    decode: fn(u8) -> f32,
}

impl MiniFloat {
    /// Rounds `x` to nearest, ties to even, and returns the word holding that value.
    fn encode(&self, x: f32) -> Result<u8> {
        if x.is_nan() {
            return Err(Error::Numeric { target: self.name, value: x as f64, rule: "NaN is not an encodable value" });
        }
        let sign = if x.is_sign_negative() { self.sign } else { 0 };
        let a = (x as f64).abs();
        if a == 0.0 {
            return Ok(sign);
        }
        // Every binary32 magnitude is a normal f64, so its unbiased exponent is in the bits.
        let exp = ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023;
        let quantum = 2f64.powi(exp.max(self.min_normal_exp) - self.mantissa_bits);
        // Division by a power of two and the product below are exact in f64.
        let rounded = (a / quantum).round_ties_even() * quantum;
        let max = (self.decode)(self.max_word) as f64;
        if rounded > max {
            return Err(Error::Numeric {
                target: self.name,
                value: x as f64,
                rule: "magnitude rounds beyond the largest finite word (the format has no infinity)",
            });
        }
        // The positive words are ordered by value, so the rounded value is one of them.
        (0..=self.max_word).find(|&w| (self.decode)(w) as f64 == rounded).map(|w| w | sign).ok_or(Error::Numeric {
            target: self.name,
            value: x as f64,
            rule: "rounded value has no word (internal rounding error)",
        })
    }
}

/// E4M3FN: sign bit 7, exponent bits 6:3 with bias 7, fraction bits 2:0; no infinities; 0x7f and
/// 0xff are NaN (section 3.3).
pub fn e4m3fn_to_f32(word: u8) -> f32 {
    let negative = word & 0x80 != 0;
    let e = ((word >> 3) & 0xF) as i32;
    let m = (word & 0x7) as f32;
    let magnitude = match (e, word & 0x7) {
        (15, 7) => f32::NAN,
        (0, _) => m * 2f32.powi(-9),
        _ => (1.0 + m / 8.0) * 2f32.powi(e - 7),
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// Whether an E4M3FN word is one of the two NaN words.
pub const fn e4m3fn_is_nan(word: u8) -> bool {
    word & 0x7F == 0x7F
}

const E4M3FN: MiniFloat = MiniFloat {
    name: "E4M3FN",
    mantissa_bits: 3,
    min_normal_exp: -6,
    sign: 0x80,
    max_word: 0x7E,
    decode: e4m3fn_to_f32,
};

/// binary32 to E4M3FN, nearest with ties to even. Magnitudes that round past 448 and NaN are
/// errors: E4M3FN has no infinity, and saturating would silently clip.
pub fn f32_to_e4m3fn(x: f32) -> Result<u8> {
    E4M3FN.encode(x)
}

/// E2M1 (a 4-bit word): sign bit 3, exponent bits 2:1, mantissa bit 0. Positive words 0..7 are
/// 0, 0.5, 1, 1.5, 2, 3, 4, 6; every word is valid, 0x8 is negative zero.
pub fn e2m1_to_f32(word: u8) -> f32 {
    let e = ((word >> 1) & 0x3) as i32;
    let m = (word & 0x1) as f32;
    let magnitude = if e == 0 { m * 0.5 } else { (1.0 + m / 2.0) * 2f32.powi(e - 1) };
    if word & 0x8 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

const E2M1: MiniFloat =
    MiniFloat { name: "E2M1", mantissa_bits: 1, min_normal_exp: 0, sign: 0x8, max_word: 0x7, decode: e2m1_to_f32 };

/// binary32 to E2M1, nearest with ties to even; beyond ±6 after rounding (from 7 up) is an error.
pub fn f32_to_e2m1(x: f32) -> Result<u8> {
    E2M1.encode(x)
}

/// binary16 word classes the validators name.
pub fn f16_is_finite(bits: u16) -> bool {
    bits & 0x7C00 != 0x7C00
}

/// bf16 word classes the validators name.
pub fn bf16_is_finite(bits: u16) -> bool {
    bits & 0x7F80 != 0x7F80
}
