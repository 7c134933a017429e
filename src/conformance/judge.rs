//! Judging a product's outputs against the oracle by its profile's criterion, for the suite's
//! cases, the bound-op cases ([`super::engine`]) and `verify` alike.

use super::criteria::{judge_a8, judge_matmul, rel_l2, MatmulCase};
use super::{blank, CaseResult, MIN_NORMAL};
use crate::error::Result;
use crate::gpu::{Gpu, Op, Variant};
use crate::oracle::{self, Dequantized};
use crate::tensor::EncodedTensor;

/// A product case: `columns` activation columns `xs`, the op (its profile) and variant.
pub(super) struct Product<'a> {
    pub xs: &'a [f32],
    pub columns: usize,
    pub op: Op,
    pub variant: Variant,
}

/// Judges `got`, the product `p`, against the oracle by its profile's criterion.
pub(super) fn judge_product(gpu: &Gpu, tensor: &EncodedTensor<'_>, p: &Product<'_>, got: &[f32]) -> Result<CaseResult> {
    let Product { xs, columns, op, variant } = *p;
    let format = tensor.format();
    let mut result = blank(format, op, variant, tensor.shape());
    result.columns = columns;
    let reference = oracle::matmul(tensor, xs, columns)?;
    if op == Op::MatmulA8 {
        result.criterion = "A8 (q8_1)".into();
        let model = oracle::matmul_a8_model(tensor, xs, columns)?;
        let k = *tensor.shape().last().unwrap_or(&1);
        let j = judge_a8(&reference, &model, k, got);
        (result.verdict, result.of_bound, result.l2_parts, result.max_parts, result.detail) =
            (j.verdict, j.of_bound, j.l2_parts, j.max_parts, j.detail);
        result.max_error = result.of_bound;
        result.rel_l2 = rel_l2(result.l2_parts);
        return Ok(result);
    }
    result.criterion = "A32".into();
    let k = *tensor.shape().last().unwrap_or(&1);
    let probe = flushes(gpu).then(|| "probe: 2^-100 * 2^-30 returned 0, not the subnormal 2^-130".to_string());
    let case = MatmulCase {
        format,
        k,
        xs,
        reference: &reference,
        touches_subnormals: subnormal_outputs(tensor, xs, &reference)?,
        flushes: probe,
    };
    (result.verdict, result.max_error, result.l2_parts, result.detail) = judge_matmul(&case, got);
    result.of_bound = result.max_error;
    result.rel_l2 = rel_l2(result.l2_parts);
    Ok(result)
}

/// Whether a subnormal the oracle has may come back flushed: only where the device's probe saw
/// its multiply flush (see `gpu::platform::Probes`).
pub(super) fn flushes(gpu: &Gpu) -> bool {
    gpu.platform().probes.flushes_subnormal_results == Some(true)
}

/// Per output of every column: whether a flushing device may lose precision there (a
/// subnormal weight or product in the row, or an exact output below 2^-126).
pub(super) fn subnormal_outputs(
    tensor: &EncodedTensor,
    xs: &[f32],
    reference: &oracle::MatvecReference,
) -> Result<Vec<bool>> {
    let Dequantized::F32(w) = oracle::dequant(tensor)? else { return Ok(vec![false; reference.y.len()]) };
    let k = *tensor.shape().last().unwrap_or(&1);
    let mut out = Vec::with_capacity(reference.y.len());
    for (x, y) in xs.chunks_exact(k.max(1)).zip(reference.y.chunks(reference.y.len() / (xs.len() / k.max(1)).max(1))) {
        for (row, &yr) in w.chunks_exact(k.max(1)).zip(y) {
            let tiny = |v: f64| v != 0.0 && v.abs() < MIN_NORMAL;
            out.push(tiny(yr) || row.iter().zip(x).any(|(&wv, &xv)| tiny(wv as f64) || tiny(wv as f64 * xv as f64)));
        }
    }
    Ok(out)
}
