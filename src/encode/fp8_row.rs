//! fp8_row_maxabs: BF16-staged rows to E4M3FN codes with one multiplier per row (bf16 for
//! `fp8_e4m3fn_row_bf16` in row_scale_v1, binary16 for `fp8_e4m3fn_row_fp16` in
//! row_interleaved_v1), exactly as the format reference describes.

use super::{check_matrix, Encoded, Provenance, Source};
use crate::error::{Error, Result};
use crate::format::{Format, Geometry, ScaleWord};
use crate::numeric::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_e4m3fn, f32_to_f16};
use crate::tensor::EncodedTensor;
use crate::words::{Fp8RowWords, LogicalWords};

/// E4M3FN's largest finite magnitude: the scale denominator and the clamp.
const E4M3_MAX: f32 = 448.0;

/// The row multiplier: `binary32(max|row| / 448)` rounded to the scale type with ties to even, a
/// positive result rounded to zero rescued as the smallest subnormal, overflow refused.
fn row_scale(amax: f32, scale: ScaleWord) -> Result<u16> {
    let raw = amax / E4M3_MAX;
    let (word, inf_bits) = match scale {
        ScaleWord::Bf16 => (f32_to_bf16(raw), 0x7F80),
        ScaleWord::Binary16 => (f32_to_f16(raw), 0x7C00),
    };
    if word & inf_bits == inf_bits {
        return Err(Error::Numeric {
            target: "fp8 row scale",
            value: raw as f64,
            rule: "max|row| / 448 overflows the scale type; refused, not clipped",
        });
    }
    Ok(if word == 0 { 0x0001 } else { word })
}

/// Encodes one row; `out` receives its K codes.
fn encode_row(row: &[f32], scale: ScaleWord, out: &mut Vec<u8>) -> Result<u16> {
    let amax = row.iter().fold(0f32, |m, x| m.max(x.abs()));
    if amax == 0.0 {
        // All-zero rows use positive-zero codes and scale, whatever the zeros' signs.
        out.extend(std::iter::repeat_n(0u8, row.len()));
        return Ok(0x0000);
    }
    let s = row_scale(amax, scale)?;
    let s32 = match scale {
        ScaleWord::Bf16 => bf16_to_f32(s),
        ScaleWord::Binary16 => f16_to_f32(s),
    };
    let inv = 1.0f32 / s32;
    if !inv.is_finite() {
        // Only a bf16-subnormal multiplier below 2^-128 does this; multiplying a zero by the
        // infinite reciprocal would produce a NaN code, so the row is refused instead.
        return Err(Error::Numeric {
            target: "fp8 row reciprocal",
            value: s32 as f64,
            rule: "1 / scale overflows binary32 (row maximum is a tiny bf16 subnormal)",
        });
    }
    for &x in row {
        out.push(f32_to_e4m3fn((x * inv).clamp(-E4M3_MAX, E4M3_MAX))?);
    }
    Ok(s)
}

/// fp8_row_maxabs for `fp8_e4m3fn_row_bf16` or `fp8_e4m3fn_row_fp16`. Sources are first staged
/// as BF16 (f32 sources rounded to nearest even; bf16 sources kept; binary16 sources rounded to
/// bf16 too), and each row is encoded independently of any chunking.
pub fn fp8_row_maxabs(format: Format, n: usize, k: usize, source: Source) -> Result<Encoded> {
    let Geometry::RowScaled { scale } = format.spec().geometry else {
        return Err(Error::Unsupported(format!(
            "fp8_row_maxabs targets fp8_e4m3fn_row_bf16 and fp8_e4m3fn_row_fp16, not {format}"
        )));
    };
    check_matrix("fp8_row_maxabs", n, k, source.len())?;
    let staged: Vec<f32> = match source {
        Source::Bf16(words) => words.iter().map(|&w| bf16_to_f32(w)).collect(),
        Source::F32(_) | Source::F16(_) => {
            source.to_finite_f32("fp8_row_maxabs")?.into_iter().map(|x| bf16_to_f32(f32_to_bf16(x))).collect()
        }
    };
    if let Some(i) = staged.iter().position(|x| !x.is_finite()) {
        return Err(Error::Words(format!(
            "fp8_row_maxabs: source element {i} is {} after BF16 staging: non-finite values are refused",
            staged[i]
        )));
    }
    let mut codes = Vec::with_capacity(n * k);
    let mut scales = Vec::with_capacity(n);
    for (r, row) in staged.chunks_exact(k).enumerate() {
        scales.push(
            encode_row(row, scale, &mut codes).map_err(|e| Error::Words(format!("fp8_row_maxabs: row {r}: {e}")))?,
        );
    }
    let tensor =
        EncodedTensor::encode(&LogicalWords::Fp8Row(Fp8RowWords { format, n, k, codes, scales }), format.layout())?;
    Ok(Encoded {
        tensor,
        provenance: Provenance::new("fp8_row_maxabs")
            .with("format", format.name())
            .with("source_type", source.type_name())
            .with("staging", "bf16"),
    })
}
