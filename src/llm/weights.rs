//! The weights a model runs on are finite. The format reference's validity rules already refuse a
//! non-finite scale in its own formats, but a float word (fp32, fp16, bf16) may be any value, and
//! ggml defines a value for every binary16 scale of its blocks, infinities and NaN included. A
//! model with such a weight computes NaN or infinite logits, so the GPU forward and the CPU
//! reference refuse it at load, naming the tensor, with the same message; the check reads each
//! float word, or each block's binary16 fields (where the registry says they are), once.

use super::ModelConfig;
use crate::error::{Error, Result};
use crate::format::{DirectWord, F16Fields, Geometry};
use crate::gguf::reader::GgufFile;
use crate::numeric::{bf16_is_finite, f16_is_finite};
use crate::tensor::EncodedTensor;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn refused(name: &str, what: String) -> Error {
    Error::Model(format!("tensor `{}` holds {what}: a model's weights must be finite", crate::error::clip(name)))
}

/// Refuses a tensor holding a non-finite float weight or block scale.
pub fn check_finite(name: &str, tensor: &EncodedTensor) -> Result<()> {
    check_finite_from(name, tensor, 0)
}

/// [`check_finite`] of rows of a tensor that come after `first` elements (a float tensor) or
/// blocks of it: a refusal points into the whole tensor.
pub fn check_finite_from(name: &str, tensor: &EncodedTensor, first: usize) -> Result<()> {
    let payload = tensor.payload();
    match tensor.format().spec().geometry {
        Geometry::Direct { bytes, word } => {
            let finite: fn(&[u8]) -> bool = match word {
                DirectWord::Binary32 => |w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]).is_finite(),
                DirectWord::Binary16 => |w| f16_is_finite(u16_at(w, 0)),
                DirectWord::Bf16 => |w| bf16_is_finite(u16_at(w, 0)),
                DirectWord::Int32 => return Ok(()),
            };
            match payload.chunks_exact(bytes).position(|w| !finite(w)) {
                Some(i) => Err(refused(name, format!("a non-finite weight (element {})", first + i))),
                None => Ok(()),
            }
        }
        Geometry::Block { bytes, .. } => {
            let Some(t) = tensor.format().gguf() else { return Ok(()) };
            let scale_finite = |b: &[u8]| match t.f16 {
                F16Fields::At(at) => at.iter().all(|&o| f16_is_finite(u16_at(b, o))),
                // iq1_m: ggml's block_iq1_m spreads its binary16 scale over four top nibbles.
                F16Fields::TopNibbles(o) => {
                    let top = |i: usize| u16_at(b, o + 2 * i) & 0xF000;
                    f16_is_finite(top(0) >> 12 | top(1) >> 8 | top(2) >> 4 | top(3))
                }
                // An E8M0 exponent is a finite power of two for every byte (ggml's rule).
                F16Fields::E8m0(_) => true,
            };
            match payload.chunks_exact(bytes).position(|b| !scale_finite(b)) {
                Some(i) => Err(refused(name, format!("a non-finite binary16 scale (block {})", first + i))),
                None => Ok(()),
            }
        }
        // Validation refuses every non-finite scale of these (src/words.rs).
        Geometry::Grouped { .. } | Geometry::BlockScaled { .. } | Geometry::RowScaled { .. } => Ok(()),
    }
}

/// A tensor's exact values, dequantized by the oracle: every weight of the CPU reference, and
/// the norm vectors the GPU forward uploads as f32.
pub(crate) fn exact_values(file: &GgufFile, name: &str) -> Result<Vec<f32>> {
    values_of(name, &file.tensor(name)?)
}

/// [`exact_values`] of a tensor in hand.
pub(crate) fn values_of(name: &str, tensor: &EncodedTensor) -> Result<Vec<f32>> {
    match crate::oracle::dequant(tensor)? {
        crate::oracle::Dequantized::F32(v) => Ok(v),
        crate::oracle::Dequantized::I32(_) => Err(Error::Model(format!("tensor `{name}` holds integers, not weights"))),
    }
}

/// Refuses a model any of whose tensors the forward reads holds a non-finite weight or scale.
pub fn check_model(file: &GgufFile, config: &ModelConfig) -> Result<()> {
    for (name, _) in config.tensors() {
        check_finite(&name, &file.tensor(&name)?)?;
    }
    Ok(())
}

/// Refuses logits holding a NaN or an infinity, naming the position: `logits` are whole
/// positions of `vocab` values, the first at position `first`.
pub fn check_logits(logits: &[f32], vocab: usize, first: usize) -> Result<()> {
    let Some(i) = logits.iter().position(|z| !z.is_finite()) else { return Ok(()) };
    let what = if logits[i].is_nan() { "NaN" } else { "an infinity" };
    Err(Error::Model(format!(
        "the logits at position {} hold {what} (token {}): the model computes non-finite values",
        first + i / vocab.max(1),
        i % vocab.max(1)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::tensor::TensorDesc;

    fn tensor(format: Format, shape: &[usize], payload: &[u8]) -> Result<()> {
        let desc = TensorDesc::new(format, format.layout(), shape);
        check_finite("t", &EncodedTensor::new(desc, payload)?)
    }

    #[test]
    fn a_non_finite_float_word_or_block_scale_is_named() {
        let mut words: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(tensor(Format::Fp32, &[4], &words).is_ok());
        words[8..12].copy_from_slice(&f32::NAN.to_le_bytes());
        let e = tensor(Format::Fp32, &[4], &words).unwrap_err().to_string();
        assert!(e.contains("`t`") && e.contains("element 2"), "{e}");
        // q8_0: a binary16 d, 32 int8 codes; the second block's d is +inf.
        let mut blocks = vec![0u8; 68];
        blocks[0..2].copy_from_slice(&0x3C00u16.to_le_bytes());
        assert!(tensor(Format::GgufQ8_0, &[2, 32], &blocks).is_ok());
        blocks[34..36].copy_from_slice(&0x7C00u16.to_le_bytes());
        let e = tensor(Format::GgufQ8_0, &[2, 32], &blocks).unwrap_err().to_string();
        assert!(e.contains("block 1") && e.contains("binary16 scale"), "{e}");
        // iq1_m: the scale 0x7E00 (NaN) spread over the top nibbles of four words.
        let mut block = vec![0u8; 56];
        for (i, nibble) in [0x0u16, 0xE, 0xE, 0x7].iter().enumerate() {
            block[48 + 2 * i..50 + 2 * i].copy_from_slice(&(nibble << 12).to_le_bytes());
        }
        let e = tensor(Format::GgufIq1M, &[1, 256], &block).unwrap_err().to_string();
        assert!(e.contains("block 0"), "{e}");
    }

    #[test]
    fn non_finite_logits_name_their_position() {
        assert!(check_logits(&[0.0, 1.0, 2.0, 3.0], 2, 5).is_ok());
        let e = check_logits(&[0.0, 1.0, 2.0, f32::NAN], 2, 5).unwrap_err().to_string();
        assert!(e.contains("position 6") && e.contains("NaN") && e.contains("token 1"), "{e}");
        let e = check_logits(&[f32::INFINITY, 1.0], 2, 0).unwrap_err().to_string();
        assert!(e.contains("position 0") && e.contains("infinity"), "{e}");
    }
}
