//! Exact numeric words: every E2M1 and E4M3FN word, binary16 classes, bf16 NaN payloads and
//! round-to-nearest-even ties. Expected values come from the reference's equations written out
//! here in f64, not from the code under test.

use ninfer_wgpu::numeric::*;

/// Section 3.3's E4M3FN table, evaluated in f64.
fn e4m3fn_reference(w: u8) -> Option<f64> {
    let sign = if w & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = ((w >> 3) & 0xF, (w & 7) as f64);
    match (e, w & 7) {
        (15, 7) => None,
        (0, _) => Some(sign * m * 2f64.powi(-9)),
        (e, _) => Some(sign * (1.0 + m / 8.0) * 2f64.powi(e as i32 - 7)),
    }
}

#[test]
fn all_256_e4m3fn_words_decode_exactly() {
    for w in 0..=255u8 {
        let got = e4m3fn_to_f32(w);
        match e4m3fn_reference(w) {
            None => assert!(got.is_nan() && e4m3fn_is_nan(w), "{w:#04x} is NaN"),
            Some(v) => {
                assert!(!e4m3fn_is_nan(w));
                assert_eq!(got as f64, v, "{w:#04x}");
                assert_eq!(got.is_sign_negative(), w & 0x80 != 0, "{w:#04x} keeps its sign (0x80 is -0)");
            }
        }
    }
    // Known anchors: largest finite, smallest subnormal, smallest normal, one.
    assert_eq!(e4m3fn_to_f32(0x7E), 448.0);
    assert_eq!(e4m3fn_to_f32(0x01), 2f32.powi(-9));
    assert_eq!(e4m3fn_to_f32(0x08), 2f32.powi(-6));
    assert_eq!(e4m3fn_to_f32(0x38), 1.0);
    assert!(e4m3fn_to_f32(0x7F).is_nan() && e4m3fn_to_f32(0xFF).is_nan(), "0x7f/0xff are NaN, no infinities");
}

#[test]
fn every_finite_e4m3fn_word_encodes_back_to_itself() {
    for w in (0..=255u8).filter(|&w| !e4m3fn_is_nan(w)) {
        assert_eq!(f32_to_e4m3fn(e4m3fn_to_f32(w)), Ok(w), "{w:#04x}");
    }
}

#[test]
fn e4m3fn_rounds_midpoints_to_the_even_word() {
    // Between adjacent positive words the word's low bit is the mantissa's, so "even" is w & 1 == 0.
    for w in 0..0x7Eu8 {
        let (lo, hi) = (e4m3fn_to_f32(w), e4m3fn_to_f32(w + 1));
        let mid = (lo + hi) / 2.0;
        let even = if w & 1 == 0 { w } else { w + 1 };
        assert_eq!(f32_to_e4m3fn(mid), Ok(even), "tie between {w:#04x} and {:#04x}", w + 1);
        assert_eq!(f32_to_e4m3fn(-mid), Ok(even | 0x80), "negative tie");
        assert_eq!(f32_to_e4m3fn(mid.next_up()), Ok(w + 1), "just above the tie");
        assert_eq!(f32_to_e4m3fn(mid.next_down()), Ok(w), "just below the tie");
    }
}

#[test]
fn e4m3fn_refuses_what_would_need_an_infinity() {
    // 464 is the tie between 448 (even) and the missing 480: it rounds down.
    assert_eq!(f32_to_e4m3fn(464.0), Ok(0x7E));
    assert!(f32_to_e4m3fn(464.0f32.next_up()).is_err(), "rounds to 480, which is not a word");
    assert!(f32_to_e4m3fn(-1e9).is_err());
    assert!(f32_to_e4m3fn(f32::INFINITY).is_err());
    assert!(f32_to_e4m3fn(f32::NAN).is_err(), "NaN is refused, not encoded");
    assert_eq!(f32_to_e4m3fn(-0.0), Ok(0x80), "signed zero kept");
    assert_eq!(f32_to_e4m3fn(2f32.powi(-10)), Ok(0x00), "half the smallest subnormal ties to zero");
    assert_eq!(f32_to_e4m3fn(1e-30), Ok(0x00));
}

#[test]
fn all_16_e2m1_words() {
    const POSITIVE: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for w in 0..16u8 {
        let v = e2m1_to_f32(w);
        let expect = if w & 8 != 0 { -POSITIVE[(w & 7) as usize] } else { POSITIVE[w as usize] };
        assert_eq!(v, expect, "{w:#x}");
        assert_eq!(v.is_sign_negative(), w & 8 != 0, "{w:#x} sign (0x8 is -0)");
        assert_eq!(f32_to_e2m1(v), Ok(w), "{w:#x} round trip");
    }
}

#[test]
fn e2m1_ties_go_to_the_even_word() {
    // (input, expected word): each input is the midpoint of two neighbouring words.
    for (x, w) in [(0.25, 0u8), (0.75, 2), (1.25, 2), (1.75, 4), (2.5, 4), (3.5, 6), (5.0, 6), (6.5, 7)] {
        assert_eq!(f32_to_e2m1(x), Ok(w), "{x}");
        assert_eq!(f32_to_e2m1(-x), Ok(w | 8), "-{x}");
    }
    assert!(f32_to_e2m1(7.0).is_err(), "7 ties to the missing 8");
    assert!(f32_to_e2m1(f32::NAN).is_err());
}

#[test]
fn binary16_classes_decode_exactly() {
    assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24), "smallest subnormal 0b0_00000_0000000001");
    assert_eq!(f16_to_f32(0x03FF), 1023.0 * 2f32.powi(-24), "largest subnormal");
    assert_eq!(f16_to_f32(0x0400), 2f32.powi(-14), "smallest normal");
    assert_eq!(f16_to_f32(0x7BFF), 65504.0, "largest finite");
    assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000, "-0");
    assert_eq!(f16_to_f32(0x0000).to_bits(), 0);
    assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
    assert_eq!(f16_to_f32(0xFC00), f32::NEG_INFINITY);
    assert!(f16_to_f32(0x7E00).is_nan() && f16_to_f32(0xFC01).is_nan());
    // Every finite binary16 word survives f16 -> f32 -> f16.
    for w in 0..=0xFFFFu16 {
        if f16_is_finite(w) {
            assert_eq!(f32_to_f16(f16_to_f32(w)), w, "{w:#06x}");
        }
    }
}

#[test]
fn binary16_rounding_is_nearest_even() {
    let one = 1.0f32;
    assert_eq!(f32_to_f16(one + 2f32.powi(-11)), 0x3C00, "tie below odd: stays at 1.0 (even)");
    assert_eq!(f32_to_f16(one + 3.0 * 2f32.powi(-11)), 0x3C02, "tie above odd 0x3C01: up to even");
    assert_eq!(f32_to_f16(one + 2f32.powi(-11) + 2f32.powi(-20)), 0x3C01, "above the tie");
    assert_eq!(f32_to_f16(2f32.powi(-25)), 0x0000, "half the smallest subnormal ties to 0");
    assert_eq!(f32_to_f16(3.0 * 2f32.powi(-25)), 0x0002, "subnormal tie to even");
    assert_eq!(f32_to_f16(65519.0), 0x7BFF);
    assert_eq!(f32_to_f16(65520.0), 0x7C00, "the tie at 65520 overflows to +inf");
    assert_eq!(f32_to_f16(-0.0), 0x8000);
}

#[test]
fn bf16_words_expand_exactly_with_nan_payloads() {
    assert_eq!(bf16_to_f32(0x7F81).to_bits(), 0x7F81_0000, "signalling NaN payload kept");
    assert_eq!(bf16_to_f32(0xFFC3).to_bits(), 0xFFC3_0000, "negative quiet NaN payload kept");
    assert_eq!(bf16_to_f32(0x8000).to_bits(), 0x8000_0000, "-0");
    assert_eq!(bf16_to_f32(0x0001), 2f32.powi(-133), "smallest subnormal");
    for w in 0..=0xFFFFu16 {
        assert_eq!(bf16_to_f32(w).to_bits() >> 16, w as u32);
        assert_eq!(bf16_to_f32(w).to_bits() & 0xFFFF, 0);
        if !bf16_to_f32(w).is_nan() {
            assert_eq!(f32_to_bf16(bf16_to_f32(w)), w, "{w:#06x} round trip");
        }
    }
}

#[test]
fn f32_to_bf16_rounds_nearest_even_and_keeps_nans_nan() {
    for (bits, expect) in [
        (0x3F80_8000u32, 0x3F80u16), // tie, kept part even: down
        (0x3F81_8000, 0x3F82),       // tie, kept part odd: up
        (0x3F80_8001, 0x3F81),       // above the tie
        (0x3F80_7FFF, 0x3F80),       // below the tie
        (0x7F7F_8000, 0x7F80),       // tie at the top, odd: overflows to +inf
        (0x8000_0000, 0x8000),       // -0
        (0x0000_8000, 0x0000),       // subnormal tie, even: down to +0
    ] {
        assert_eq!(f32_to_bf16(f32::from_bits(bits)), expect, "{bits:#010x}");
    }
    // A NaN whose payload sits only in the low bits must stay NaN, not become +inf.
    assert_eq!(f32_to_bf16(f32::from_bits(0x7F80_0001)), 0x7FC0);
    assert_eq!(f32_to_bf16(f32::from_bits(0xFF81_2345)), 0xFFC1, "sign and high payload kept, quiet bit set");
}
