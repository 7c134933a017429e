//! ggml's q8_1 activation quantization (`quantize_row_q8_1_ref`): per 32 values one binary16
//! scale `d = amax / 127`, 32 int8 codes `roundf(x / d)` (computed as `x * (1/d)`), and the
//! binary16 `s = d * Σ codes`. This is how NInfer's gguf products see the activation.

use crate::error::{Error, Result};
use crate::numeric::{f16_to_f32, f32_to_f16};

/// Values per q8_1 block.
pub const QK8_1: usize = 32;

/// block_q8_1 { ggml_half d; ggml_half s; int8_t qs[32]; }.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockQ8_1 {
    pub d: u16,
    pub s: u16,
    pub qs: [i8; QK8_1],
}

impl BlockQ8_1 {
    /// The activation values this block stands for: `d * q` (binary32).
    pub fn values(&self) -> [f32; QK8_1] {
        let d = f16_to_f32(self.d);
        self.qs.map(|q| q as f32 * d)
    }
}

/// Quantizes `x` (a multiple of 32 long, finite) exactly as ggml does.
pub fn quantize(x: &[f32]) -> Result<Vec<BlockQ8_1>> {
    if !x.len().is_multiple_of(QK8_1) {
        return Err(Error::Words(format!("q8_1 quantizes whole blocks of {QK8_1} values; got {}", x.len())));
    }
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(Error::Words(format!("q8_1: activation element {i} is {}", x[i])));
    }
    Ok(x.chunks_exact(QK8_1)
        .map(|block| {
            let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
            let d = amax / 127.0;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            let mut qs = [0i8; QK8_1];
            let mut sum = 0i32;
            for (q, &v) in qs.iter_mut().zip(block) {
                // C's roundf: half away from zero.
                *q = (v * id).round() as i8;
                sum += *q as i32;
            }
            BlockQ8_1 { d: f32_to_f16(d), s: f32_to_f16(sum as f32 * d), qs }
        })
        .collect())
}

/// The A8 (q8_1) criterion of criteria.md: `Σ(y - y_ref)^2 / Σ y_ref^2 <= 5e-4` and
/// `max|y - y_ref| <= 0.06 * max|y_ref| + 1/256`. Returns `(passed, ratio, max_error)`.
pub fn a8_criterion(y: &[f32], y_ref: &[f64]) -> (bool, f64, f64) {
    let (mut num, mut den, mut max_err, mut max_ref) = (0f64, 0f64, 0f64, 0f64);
    for (&a, &b) in y.iter().zip(y_ref) {
        let e = a as f64 - b;
        num += e * e;
        den += b * b;
        max_err = max_err.max(e.abs());
        max_ref = max_ref.max(b.abs());
    }
    let ratio = if den > 0.0 { num / den } else { num };
    let ok = y.len() == y_ref.len()
        && y.iter().all(|v| v.is_finite())
        && ratio <= 5e-4
        && max_err <= 0.06 * max_ref + 1.0 / 256.0;
    (ok, ratio, max_err)
}
