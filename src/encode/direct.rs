//! Direct formats: bit-identical persistence when no conversion is asked for, and the one
//! explicit conversion the reference names, FP32 → BF16 with round-to-nearest-even.

use super::{Encoded, Provenance};
use crate::error::{Error, Result};
use crate::format::Format;
use crate::layout::Layout;
use crate::numeric;
use crate::tensor::EncodedTensor;
use crate::words::{DirectWords, LogicalWords};

/// Source words of a direct tensor, by their own type.
#[derive(Debug, Clone, Copy)]
pub enum DirectSource<'a> {
    F32(&'a [f32]),
    Bf16(&'a [u16]),
    F16(&'a [u16]),
    I32(&'a [i32]),
}

impl DirectSource<'_> {
    fn type_name(&self) -> &'static str {
        match self {
            DirectSource::F32(_) => "f32",
            DirectSource::Bf16(_) => "bf16",
            DirectSource::F16(_) => "f16",
            DirectSource::I32(_) => "i32",
        }
    }
}

fn store(format: Format, shape: &[usize], words: Vec<u32>, provenance: Provenance) -> Result<Encoded> {
    let tensor = EncodedTensor::encode(
        &LogicalWords::Direct(DirectWords { format, shape: shape.to_vec(), words }),
        Layout::ContiguousLeV1,
    )?;
    Ok(Encoded { tensor, provenance })
}

/// Persists words of the same type bit for bit: f32 → fp32, bf16 → bf16, f16 → fp16, i32 → int32. Any other
/// pairing is refused: a conversion between types is never implicit.
pub fn persist(format: Format, shape: &[usize], source: DirectSource) -> Result<Encoded> {
    let words: Vec<u32> = match (format, source) {
        (Format::Fp32, DirectSource::F32(v)) => v.iter().map(|x| x.to_bits()).collect(),
        (Format::Bf16, DirectSource::Bf16(v)) | (Format::Fp16, DirectSource::F16(v)) => {
            v.iter().map(|&w| w as u32).collect()
        }
        (Format::Int32, DirectSource::I32(v)) => v.iter().map(|&i| i as u32).collect(),
        (target, source) => {
            return Err(Error::Unsupported(format!(
                "no implicit conversion from {} to {target}: persist keeps words bit for bit; name a conversion method (f32_to_bf16 for FP32 → BF16)",
                source.type_name()
            )))
        }
    };
    store(format, shape, words, Provenance::new("persist").with("source_type", source.type_name()))
}

/// FP32 → BF16, round to nearest, ties to even. Finite values that round past the largest bf16
/// become ±inf (IEEE rounding; bf16 can hold them); NaN stays NaN with its sign and high payload
/// bits and the quiet bit set, so no NaN can truncate into an infinity.
pub fn f32_to_bf16(shape: &[usize], values: &[f32]) -> Result<Encoded> {
    let words = values.iter().map(|&x| numeric::f32_to_bf16(x) as u32).collect();
    store(
        Format::Bf16,
        shape,
        words,
        Provenance::new("f32_to_bf16")
            .with("rounding", "nearest_even")
            .with("nan", "quiet, sign and high payload kept"),
    )
}
