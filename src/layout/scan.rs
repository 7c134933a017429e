//! Pieces shared by the layouts' fast validity scans (`Geometry::scan` in each layout file).
//!
//! A scan answers one question — does this payload break any rule? — over whole byte runs, in
//! loops the compiler vectorizes, without building logical words. It never explains: a payload
//! it finds fault with goes through the reference validator, which names the rule and the place.

use crate::format::{Format, Geometry, ScaleWord};
use crate::numeric::{bf16_is_finite, e4m3fn_is_nan, f16_is_finite};

/// Every byte is zero (plane gaps, zero-scale groups).
pub(super) fn all_zero(bytes: &[u8]) -> bool {
    // OR-folding in fixed chunks vectorizes; `iter().all` stops early and does not.
    let mut chunks = bytes.chunks_exact(64);
    let body = chunks.by_ref().fold(0u8, |acc, c| acc | c.iter().fold(0u8, |a, &b| a | b));
    body | chunks.remainder().iter().fold(0u8, |a, &b| a | b) == 0
}

/// No byte for which `bad` holds; checked without branching per byte.
pub(super) fn none(bytes: &[u8], bad: impl Fn(u8) -> bool) -> bool {
    let mut chunks = bytes.chunks_exact(64);
    let body = chunks.by_ref().fold(false, |acc, c| acc | c.iter().fold(false, |a, &b| a | bad(b)));
    !(body | chunks.remainder().iter().any(|&b| bad(b)))
}

/// One fp8 row: finite E4M3FN codes, a finite multiplier with sign bit zero, and a +0 multiplier
/// only over signed-zero codes (words.rs `Fp8RowWords::validate` states the rules).
pub(super) fn fp8_row_clean(codes: &[u8], scale: u16, word: ScaleWord) -> bool {
    let finite = match word {
        ScaleWord::Bf16 => bf16_is_finite(scale),
        ScaleWord::Binary16 => f16_is_finite(scale),
    };
    finite && scale & 0x8000 == 0 && (scale != 0 || none(codes, |c| c & 0x7F != 0))
}

/// The E4M3FN codes of fp8 rows are never NaN.
pub(super) fn fp8_codes_clean(codes: &[u8]) -> bool {
    none(codes, e4m3fn_is_nan)
}

/// The multiplier word of a row-scaled fp8 format.
pub(super) fn row_scale_word(format: Format) -> Option<ScaleWord> {
    match format.spec().geometry {
        Geometry::RowScaled { scale } => Some(scale),
        Geometry::Direct { .. } | Geometry::Grouped { .. } | Geometry::BlockScaled { .. } | Geometry::Block { .. } => {
            None
        }
    }
}
