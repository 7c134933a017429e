//! GGUF: ggml's block formats in the oracle (bit for bit with ggml's `dequantize_row_*`), the
//! GGUF file reader, and ggml's q8_1 activation quantization.

pub mod iquants;
pub mod kquants;
pub mod legacy;
pub mod q8_1;
pub mod reader;
pub mod tables;
pub mod ternary;

use crate::error::{Error, Result};
use crate::format::{Format, Geometry};
use crate::numeric::f16_to_f32;

/// The binary16 at byte `at` of a block, exactly as binary32 (ggml's GGML_FP16_TO_FP32).
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// A block decoder: one block's bytes to its `block_values` values.
type BlockFn = fn(&[u8], &mut [f32]);

/// The decoder of each gguf_* format; `None` for the native formats.
pub fn block_decoder(format: Format) -> Option<BlockFn> {
    use Format::*;
    Some(match format {
        GgufQ8_0 => legacy::q8_0,
        GgufQ4_0 => legacy::q4_0,
        GgufQ5_0 => legacy::q5_0,
        GgufQ4_1 => legacy::q4_1,
        GgufQ5_1 => legacy::q5_1,
        GgufQ2_0 => legacy::q2_0,
        GgufMxfp4 => legacy::mxfp4,
        GgufTq1_0 => ternary::tq1_0,
        GgufTq2_0 => ternary::tq2_0,
        GgufIq4Nl => legacy::iq4_nl,
        GgufQ2K => kquants::q2_k,
        GgufQ3K => kquants::q3_k,
        GgufQ4K => kquants::q4_k,
        GgufQ5K => kquants::q5_k,
        GgufQ6K => kquants::q6_k,
        GgufIq2Xxs => iquants::iq2_xxs,
        GgufIq2Xs => iquants::iq2_xs,
        GgufIq2S => iquants::iq2_s,
        GgufIq3Xxs => iquants::iq3_xxs,
        GgufIq3S => iquants::iq3_s,
        GgufIq1S => iquants::iq1_s,
        GgufIq1M => iquants::iq1_m,
        GgufIq4Xs => iquants::iq4_xs,
        Bf16 | Fp32 | Int32 | Q2G64Fp16 | Q4G64Fp16 | Q5G64Fp16 | Q6G64Fp16 | Q8G32Fp16 | T2G128Fp16 | Nvfp4
        | Fp8E4m3fnRowBf16 | Fp8E4m3fnRowFp16 | Fp16 => return None,
    })
}

/// Decodes whole blocks of `format` to binary32, in order, as ggml's `dequantize_row_*` does.
pub fn dequantize_blocks(format: Format, blocks: &[u8]) -> Result<Vec<f32>> {
    let (Geometry::Block { values, bytes }, Some(decode)) = (format.spec().geometry, block_decoder(format)) else {
        return Err(Error::Unsupported(format!("{format} is not a GGUF block format")));
    };
    if !blocks.len().is_multiple_of(bytes) {
        return Err(Error::Words(format!(
            "{format}: {} bytes is not a whole number of {bytes}-byte blocks",
            blocks.len()
        )));
    }
    let mut out = vec![0f32; blocks.len() / bytes * values];
    for (block, y) in blocks.chunks_exact(bytes).zip(out.chunks_exact_mut(values)) {
        decode(block, y);
    }
    for v in out.iter_mut().filter(|v| v.is_nan()) {
        *v = f32::from_bits(COMPUTED_NAN);
    }
    Ok(out)
}

/// The word of every NaN a gguf block computes (a NaN or infinite binary16 scale): the format
/// reference fixes no payload for computed values, and hardware differs (x86's default NaN is
/// 0xffc00000, GPUs' 0x7fc00000), so CPU and GPU both write this one quiet NaN.
pub const COMPUTED_NAN: u32 = 0x7fc0_0000;
