//! Conformance: every format × op × variant on one adapter, against the scalar oracle, judged
//! by the named criteria of `criteria.md` on fresh random words (seed printed by the caller).
//! Ops: dequant (exact or bounded), matmul with J ∈ [`COLUMNS`] activation columns (A32, J = 1
//! is matvec) and gather with repeated and last rows (judged like dequant). Async, like the GPU
//! API it drives.

use crate::error::Result;
use crate::format::{Format, Geometry};
use crate::gpu::capability::{self, Status};
use crate::gpu::{Gpu, GpuTensor, Op, Platform, Variant, POISON};
use crate::oracle::{self, Dequantized};
use crate::tensor::EncodedTensor;
use crate::testgen::{random_activation, random_words, Rng, Words};
use serde::{Deserialize, Serialize};

mod report;
pub use report::{compare, summarize, Difference, NotRun, Report, SummaryRow, TensorOutcome, VerifyReport};

/// Which shapes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Awkward small shapes: every CI run.
    Fast,
    /// Adds K >= 14336 and N >= 4096 (minutes on a CPU adapter).
    Slow,
}

/// The verdict of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// The platform flushed an f32 subnormal result (found by its probe): reported, not a pass.
    PlatformDeviation,
}

/// The activation column counts every conformance run covers.
pub const COLUMNS: [usize; 4] = [1, 2, 3, 8];

/// The smallest positive normal binary32, 2^-126.
const MIN_NORMAL: f64 = 1.1754943508222875e-38;

/// One case's outcome, with the measured error next to its bound. Owned text, so a saved
/// `--json` report reads back (`conformance --compare`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    pub format: String,
    pub op: String,
    pub variant: String,
    pub shape: Vec<usize>,
    /// Activation columns (matmul), gathered rows (gather), 0 for dequant.
    pub columns: usize,
    pub criterion: String,
    pub verdict: Verdict,
    /// Largest error seen: ULPs for bounded dequant, error/bound ratio for A32, 0 for exact.
    #[serde(with = "report::unbounded")]
    pub max_error: f64,
    /// The largest error as a fraction of its criterion's bound (1 = at the bound): ULPs / 3 for
    /// bounded dequant, `max_error` for A32, 0 for an exact pass, infinite for a broken one.
    #[serde(with = "report::unbounded", default)]
    pub of_bound: f64,
    /// Relative L2 error over the output (matvec).
    #[serde(with = "report::unbounded")]
    pub rel_l2: f64,
    /// `Σ (y - y_ref)^2` and `Σ y_ref^2`, for the relative L2 check over several cases.
    #[serde(skip, default)]
    pub l2_parts: (f64, f64),
    /// A8: `max|y - y_ref|` and `max|y_ref|`, for judging small cases together.
    #[serde(skip, default)]
    pub max_parts: (f64, f64),
    pub detail: String,
}

/// The shapes of a format's cases.
pub fn shapes(format: Format, tier: Tier) -> Vec<Vec<usize>> {
    let mut s: Vec<Vec<usize>> = match format.spec().geometry {
        Geometry::BlockScaled { .. } => vec![vec![128, 64], vec![256, 128], vec![384, 192]],
        Geometry::Direct { .. } => {
            vec![vec![1, 1], vec![3, 5], vec![5, 33], vec![9, 1000], vec![2, 3, 5], vec![], vec![7]]
        }
        Geometry::Grouped { .. } | Geometry::RowScaled { .. } => {
            vec![vec![1, 1], vec![1, 64], vec![3, 65], vec![6, 200], vec![67, 1000], vec![13, 4304]]
        }
        Geometry::Block { values, .. } => {
            vec![vec![1, values], vec![3, 2 * values], vec![67, 1024], vec![5, 4096 + values]]
        }
    };
    if tier == Tier::Slow && !s.is_empty() {
        // N >= 4096 and K >= 14336; divisible by nvfp4's 128 rows and 64 columns and by every
        // ggml block.
        s.push(vec![4096, 14336]);
    }
    s
}

/// The divisors used for an nvfp4 shape: one per 128 rows up to three, to cover stacking.
fn divisors(format: Format, shape: &[usize]) -> usize {
    match (format, shape) {
        (Format::Nvfp4, [n, _]) => [3, 2, 1].into_iter().find(|d| n % (128 * d) == 0).unwrap_or(1),
        _ => 1,
    }
}

/// Units in the last place of a finite binary32 `x`: 2^(exponent - 23), and 2^-149 for zero and
/// subnormals (f32::MAX included: its ULP is 2^104).
fn ulp(x: f32) -> f64 {
    let exponent = ((x.to_bits() >> 23) & 0xFF) as i32;
    2f64.powi(exponent.max(1) - 127 - 23)
}

/// Whether a format's dequant is exact (bit for bit) or bounded (nvfp4's division).
fn dequant_bound_ulps(format: Format) -> Option<f64> {
    match format {
        // Oracle: correctly rounded (0.5 ULP); WGSL f32 division: 2.5 ULP. Their distance is at
        // most 3 ULP of the result.
        Format::Nvfp4 => Some(3.0),
        _ => None,
    }
}

/// Judges dequant-like words (dequant, gather) against the oracle's. A short or long output is a
/// failure naming both lengths: comparing only the words both have would pass a truncated one.
fn judge_dequant(format: Format, flushes: bool, expect: &[u32], got: &[u32]) -> (Verdict, f64, String) {
    if got.len() != expect.len() {
        return (Verdict::Fail, f64::INFINITY, format!("{} words back, {} expected", got.len(), expect.len()));
    }
    let bound = dequant_bound_ulps(format);
    let mut worst = 0f64;
    let mut deviation = None;
    for (i, (&e, &g)) in expect.iter().zip(got).enumerate() {
        if g == POISON && e != POISON {
            return (Verdict::Fail, f64::INFINITY, format!("element {i} was never written"));
        }
        if e == g {
            continue;
        }
        let (ef, gf) = (f32::from_bits(e), f32::from_bits(g));
        let subnormal_flushed =
            ef != 0.0 && ef.is_subnormal() && gf == 0.0 && ef.is_sign_negative() == gf.is_sign_negative();
        if subnormal_flushed && flushes {
            deviation.get_or_insert(format!("element {i}: subnormal {e:#010x} flushed to {g:#010x}"));
            continue;
        }
        match bound {
            Some(b) if ef.is_finite() && gf.is_finite() => {
                let err = ((gf as f64) - (ef as f64)).abs() / ulp(ef);
                worst = worst.max(err);
                if err > b {
                    return (Verdict::Fail, err, format!("element {i}: {gf:e} vs oracle {ef:e}: {err:.2} ULP > {b}"));
                }
            }
            _ => {
                return (
                    Verdict::Fail,
                    f64::INFINITY,
                    format!("element {i}: {g:#010x} ({gf:e}) vs oracle {e:#010x} ({ef:e}): must be bit-exact"),
                )
            }
        }
    }
    match deviation {
        Some(d) => (Verdict::PlatformDeviation, worst, d),
        None => (Verdict::Pass, worst, String::new()),
    }
}

/// Outputs below which one case's relative L2 error is not judged alone: with a handful of
/// outputs a single cancelling sum (|y| far below Σ|W x|) dominates it, which says nothing about
/// bias. Such cases are judged together per (format, op, variant) in [`run`].
pub const L2_MIN_OUTPUTS: usize = 64;
/// criteria.md's relative L2 bound for A32.
pub const A32_REL_L2: f64 = 1e-5;
/// criteria.md's A8 (q8_1) bounds: `Σ(y - y_ref)^2 / Σ y_ref^2` (not its square root), and the
/// largest error as a fraction of the largest exact output plus an absolute term.
pub const A8_SQUARED_L2: f64 = 5e-4;
pub const A8_MAX_RELATIVE: f64 = 0.06;
pub const A8_MAX_ABSOLUTE: f64 = 1.0 / 256.0;

/// What the matmul judge needs besides the outputs.
struct MatmulCase<'a> {
    format: Format,
    k: usize,
    xs: &'a [f32],
    reference: &'a oracle::MatvecReference,
    /// Per output: the row has a subnormal weight or a subnormal product, or the exact output
    /// is below 2^-126 — where a flushing device may lose up to the flush-aware bound.
    touches_subnormals: Vec<bool>,
    /// The device flushes subnormal results (its probe), described for the report.
    flushes: Option<String>,
}

fn judge_matmul(case: &MatmulCase, got: &[f32]) -> (Verdict, f64, (f64, f64), String) {
    let k = case.k;
    let gamma = (k as f64 + 2.0) * 2f64.powi(-24);
    // The relative bound assumes no underflow. IEEE-754's model with gradual underflow,
    // fl(a op b) = (a op b)(1 + d) + e with |e| <= 2^-150, adds at most 2^-150 per operation:
    // (K + 2) of them per output. It matters only for outputs near the subnormal range (an fp8
    // row whose bf16 multiplier is subnormal), and is below 1e-38 for every K here.
    let underflow = (k as f64 + 2.0) * 2f64.powi(-150);
    // nvfp4's division adds at most 3 ULP of each product, i.e. 3 * 2^-23 relative.
    let dequant = dequant_bound_ulps(case.format).map(|u| u * 2f64.powi(-23)).unwrap_or(0.0);
    let n = case.reference.y.len() / (case.xs.len() / k.max(1)).max(1);
    // The outputs are zipped with the reference below: a short output would pass on what it has.
    if got.len() != case.reference.y.len() {
        return (
            Verdict::Fail,
            f64::INFINITY,
            (f64::INFINITY, 1.0),
            format!("{} outputs back, {} expected", got.len(), case.reference.y.len()),
        );
    }
    let (mut worst, mut num, mut den) = (0f64, 0f64, 0f64);
    let mut deviation: Option<String> = None;
    for (i, (&y, (&yr, &abs))) in got.iter().zip(case.reference.y.iter().zip(&case.reference.abs)).enumerate() {
        let (j, row) = (i / n.max(1), i % n.max(1));
        if y.to_bits() == POISON {
            return (
                Verdict::Fail,
                f64::INFINITY,
                (f64::INFINITY, 1.0),
                format!("column {j} output {row} was never written"),
            );
        }
        if !y.is_finite() {
            return (Verdict::Fail, f64::INFINITY, (f64::INFINITY, 1.0), format!("column {j} output {row} is {y}"));
        }
        let err = (y as f64 - yr).abs();
        let bound = (gamma + dequant) * abs + underflow;
        num += err * err;
        den += yr * yr;
        let ratio = if bound > 0.0 {
            err / bound
        } else if err == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        if ratio <= 1.0 {
            worst = worst.max(ratio);
            continue;
        }
        // criteria.md's flush-aware bound: a flushed weight costs at most 2^-126 |x[k]|, a
        // flushed product or partial sum at most 2^-126.
        if let (Some(probe), true) = (&case.flushes, case.touches_subnormals[i]) {
            let x = &case.xs[j * k..(j + 1) * k];
            let flush_bound = bound + MIN_NORMAL * x.iter().map(|v| v.abs() as f64 + 1.0).sum::<f64>();
            if err <= flush_bound {
                deviation.get_or_insert(format!(
                    "column {j} output {row}: |{y:e} - {yr:e}| = {err:e} > A32 bound {bound:e} but within the flush-aware bound {flush_bound:e} ({probe})"
                ));
                continue;
            }
        }
        return (
            Verdict::Fail,
            ratio,
            (num, den),
            format!("column {j} output {row}: |{y:e} - {yr:e}| = {err:e} > bound {bound:e}"),
        );
    }
    if let Some(d) = deviation {
        return (Verdict::PlatformDeviation, worst, (num, den), d);
    }
    let rel = rel_l2((num, den));
    if got.len() >= L2_MIN_OUTPUTS && rel > A32_REL_L2 {
        return (Verdict::Fail, worst, (num, den), format!("relative L2 error {rel:e} > {A32_REL_L2:e}"));
    }
    (Verdict::Pass, worst, (num, den), String::new())
}

/// The A8 criterion over one case's outputs (every column): the largest error against
/// `0.06 max|y_ref| + 1/256` and the squared relative L2 error against 5e-4. `of_bound` is the
/// larger of the two fractions. A case with fewer than [`L2_MIN_OUTPUTS`] outputs is judged
/// with the others of its (format, op, variant) instead (`judge_l2_together`): with one or two
/// outputs a single cancelling sum (|y_ref| far below Σ|w x|) turns the activation's rounding
/// noise into a large fraction of |y_ref|, which says nothing about the arithmetic.
///
/// Every output must also agree with [`oracle::A8Model`] — the exact weights times the q8_1
/// activation — within the f32 rounding of the kernel's own steps: per chunk at most 6
/// roundings, then at most K/32 sequential adds and 6 tree levels, each on magnitudes bounded
/// by `2 Σ (|w| + m) |x̃|` (the offset terms `a Σ code x̃` and `b Σ x̃` may each exceed Σ|w x̃|),
/// plus the model's slack for codes near a rounding tie and scales near a binary16 boundary
/// (where a device's division may round the other way) and 2^-126 per step for flushing devices.
/// This is what catches a wrong code, which the A8 bound alone could hide in the noise.
fn judge_a8(reference: &oracle::MatvecReference, model: &oracle::A8Model, k: usize, got: &[f32]) -> A8Judgement {
    let n = reference.y.len();
    let broken = |detail: String| A8Judgement {
        verdict: Verdict::Fail,
        of_bound: f64::INFINITY,
        l2_parts: (f64::INFINITY, 1.0),
        max_parts: (f64::INFINITY, 1.0),
        detail,
    };
    if got.len() != n {
        return broken(format!("{} outputs back, {n} expected", got.len()));
    }
    if let Some(i) = got.iter().position(|y| y.to_bits() == POISON || !y.is_finite()) {
        let what = if got[i].to_bits() == POISON { "was never written".to_string() } else { format!("is {}", got[i]) };
        return broken(format!("output {i} {what}"));
    }
    let steps = (k / 32 + 16) as f64;
    // γ = steps · 2^-24 relative per rounding chain, doubled as a margin for the compounding of
    // the per-chunk steps with the accumulation; the magnitude bound is 2 Σ (|w| + m) |x̃|.
    let gamma = 2.0 * steps * 2f64.powi(-24);
    for (i, &y) in got.iter().enumerate() {
        let bound = gamma * 2.0 * model.magnitude[i] + model.slack[i] + steps * MIN_NORMAL;
        let e = (y as f64 - model.y[i]).abs();
        if e > bound {
            return broken(format!(
                "output {i}: {y:e} differs from the q8_1 model of A8 arithmetic ({:e}) by {e:e} > its rounding bound {bound:e}: a wrong code or map",
                model.y[i]
            ));
        }
    }
    let max_ref = reference.y.iter().fold(0f64, |m, y| m.max(y.abs()));
    let bound = A8_MAX_RELATIVE * max_ref + A8_MAX_ABSOLUTE;
    let (mut num, mut den, mut worst, mut at) = (0f64, 0f64, 0f64, 0);
    for (i, (&y, &yr)) in got.iter().zip(&reference.y).enumerate() {
        let e = y as f64 - yr;
        (num, den) = (num + e * e, den + yr * yr);
        if e.abs() > worst {
            (worst, at) = (e.abs(), i);
        }
    }
    let l2 = if den > 0.0 { num / den } else { num };
    let of_bound = (worst / bound).max(l2 / A8_SQUARED_L2);
    let mut j = A8Judgement {
        verdict: Verdict::Pass,
        of_bound,
        l2_parts: (num, den),
        max_parts: (worst, max_ref),
        detail: String::new(),
    };
    if n < L2_MIN_OUTPUTS {
        return j;
    }
    if worst > bound {
        j.verdict = Verdict::Fail;
        j.detail = format!(
            "output {at}: |{:e} - {:e}| = {worst:e} > 0.06 max|y_ref| + 1/256 = {bound:e}",
            got[at], reference.y[at]
        );
    } else if l2 > A8_SQUARED_L2 {
        j.verdict = Verdict::Fail;
        j.detail = format!("Σ(y - y_ref)² / Σ y_ref² = {l2:e} > {A8_SQUARED_L2:e}");
    }
    j
}

struct A8Judgement {
    verdict: Verdict,
    of_bound: f64,
    l2_parts: (f64, f64),
    max_parts: (f64, f64),
    detail: String,
}

fn rel_l2((num, den): (f64, f64)) -> f64 {
    if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    }
}

fn oracle_words(t: &EncodedTensor) -> Result<Vec<u32>> {
    Ok(match oracle::dequant(t)? {
        Dequantized::F32(v) => v.into_iter().map(f32::to_bits).collect(),
        Dequantized::I32(v) => v.into_iter().map(|i| i as u32).collect(),
    })
}

fn blank(format: Format, op: Op, variant: Variant, shape: &[usize]) -> CaseResult {
    CaseResult {
        format: format.name().into(),
        op: op.name().into(),
        variant: variant.name().into(),
        shape: shape.to_vec(),
        columns: 0,
        criterion: String::new(),
        verdict: Verdict::Fail,
        max_error: 0.0,
        of_bound: 0.0,
        rel_l2: 0.0,
        l2_parts: (0.0, 0.0),
        max_parts: (0.0, 0.0),
        detail: String::new(),
    }
}

/// Whether a subnormal the oracle has may come back flushed: only where the device's probe saw
/// its multiply flush (see `gpu::platform::Probes`).
fn flushes(gpu: &Gpu) -> bool {
    gpu.platform().probes.flushes_subnormal_results == Some(true)
}

/// The criterion dequant and gather are judged by.
fn dequant_criterion(format: Format) -> String {
    match dequant_bound_ulps(format) {
        Some(b) => format!("bounded ({b} ULP)"),
        None => "exact".into(),
    }
}

/// Judges dequant-like words (dequant, gather) and records the error against the bound.
fn judge_words(result: &mut CaseResult, flushes: bool, format: Format, expect: &[u32], got: &[u32]) {
    result.criterion = dequant_criterion(format);
    (result.verdict, result.max_error, result.detail) = judge_dequant(format, flushes, expect, got);
    result.of_bound = result.max_error / dequant_bound_ulps(format).unwrap_or(1.0);
}

/// Dequantizes `tensor` on the GPU and judges it against the oracle (exact, or bounded for nvfp4).
pub async fn check_dequant(gpu: &Gpu, tensor: &EncodedTensor<'_>) -> Result<CaseResult> {
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    dequant_on(gpu, tensor, &uploaded).await
}

async fn dequant_on(gpu: &Gpu, tensor: &EncodedTensor<'_>, uploaded: &GpuTensor) -> Result<CaseResult> {
    let format = tensor.format();
    let mut result = blank(format, Op::Dequant, Variant::Workgroup, tensor.shape());
    let expect = oracle_words(tensor)?;
    let got = gpu.dequant(uploaded).await?;
    judge_words(&mut result, flushes(gpu), format, &expect, &got);
    Ok(result)
}

/// Gathers `rows` on the GPU and judges them like dequant of those rows.
pub async fn check_gather(gpu: &Gpu, tensor: &EncodedTensor<'_>, rows: &[u32]) -> Result<CaseResult> {
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    gather_on(gpu, tensor, &uploaded, rows).await
}

async fn gather_on(gpu: &Gpu, tensor: &EncodedTensor<'_>, uploaded: &GpuTensor, rows: &[u32]) -> Result<CaseResult> {
    let format = tensor.format();
    let mut result = blank(format, Op::Gather, Variant::Workgroup, tensor.shape());
    result.columns = rows.len();
    let expect = match oracle::gather(tensor, rows)? {
        Dequantized::F32(v) => v.into_iter().map(f32::to_bits).collect::<Vec<_>>(),
        Dequantized::I32(v) => v.into_iter().map(|i| i as u32).collect(),
    };
    let got = gpu.gather(uploaded, rows).await?;
    judge_words(&mut result, flushes(gpu), format, &expect, &got);
    Ok(result)
}

/// Per output of every column: whether a flushing device may lose precision there (a
/// subnormal weight or product in the row, or an exact output below 2^-126).
fn subnormal_outputs(tensor: &EncodedTensor, xs: &[f32], reference: &oracle::MatvecReference) -> Result<Vec<bool>> {
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

/// `Y = W X` on the GPU with `variant` for `columns` activation vectors, judged by A32 against
/// the f64 oracle, output by output.
pub async fn check_matmul(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    xs: &[f32],
    columns: usize,
    variant: Variant,
) -> Result<CaseResult> {
    check_product(gpu, tensor, xs, columns, Op::Matmul, variant).await
}

/// A product op (A32 `matmul` or A8 `matmul_a8`) judged by its profile's criterion.
pub async fn check_product(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    xs: &[f32],
    columns: usize,
    op: Op,
    variant: Variant,
) -> Result<CaseResult> {
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    matmul_on(gpu, tensor, &uploaded, xs, columns, op, variant).await
}

async fn matmul_on(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    uploaded: &GpuTensor,
    xs: &[f32],
    columns: usize,
    op: Op,
    variant: Variant,
) -> Result<CaseResult> {
    let format = tensor.format();
    let mut result = blank(format, op, variant, tensor.shape());
    result.columns = columns;
    let reference = oracle::matmul(tensor, xs, columns)?;
    let got = gpu.product(uploaded, xs, columns, op, variant).await?;
    if op == Op::MatmulA8 {
        result.criterion = "A8 (q8_1)".into();
        let model = oracle::matmul_a8_model(tensor, xs, columns)?;
        let k = *tensor.shape().last().unwrap_or(&1);
        let j = judge_a8(&reference, &model, k, &got);
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
    (result.verdict, result.max_error, result.l2_parts, result.detail) = judge_matmul(&case, &got);
    result.of_bound = result.max_error;
    result.rel_l2 = rel_l2(result.l2_parts);
    Ok(result)
}

/// `y = W x`: matmul with one column.
pub async fn check_matvec(gpu: &Gpu, tensor: &EncodedTensor<'_>, x: &[f32], variant: Variant) -> Result<CaseResult> {
    check_matmul(gpu, tensor, x, 1, variant).await
}

/// Rows for a gather case of N rows: the last row, the first, repeats and random rows.
pub fn gather_rows(n: usize, rng: &mut Rng) -> Vec<u32> {
    let last = n.saturating_sub(1) as u32;
    let mut rows = vec![last, 0, last];
    for _ in 0..(2 * n).min(40) {
        rows.push(rng.below(n as u64) as u32);
    }
    rows.push(rows[3 % rows.len()]);
    rows
}

/// Runs one (format, op, variant, shape) case on fresh random words; `columns` is matmul's J.
pub async fn run_case(
    gpu: &Gpu,
    format: Format,
    op: Op,
    variant: Variant,
    shape: &[usize],
    columns: usize,
    rng: &mut Rng,
) -> Result<CaseResult> {
    let words = match op {
        Op::Dequant | Op::Gather => Words::All,
        Op::Matmul | Op::MatmulA8 => Words::Finite,
    };
    let logical = random_words(format, shape, divisors(format, shape), rng, words)?;
    let tensor = EncodedTensor::encode(&logical, format.layout())?;
    match op {
        Op::Dequant => check_dequant(gpu, &tensor).await,
        Op::Gather => {
            let rows = gather_rows(shape[0], rng);
            check_gather(gpu, &tensor, &rows).await
        }
        Op::Matmul | Op::MatmulA8 => {
            let xs = random_activation(*shape.last().unwrap_or(&1) * columns, rng);
            check_product(gpu, &tensor, &xs, columns, op, variant).await
        }
    }
}

/// One case of a conformance run: a (format, op, variant), a shape, and matmul's J (1 for the
/// other ops).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedCase {
    pub format: Format,
    pub op: Op,
    pub variant: Variant,
    pub shape: Vec<usize>,
    pub columns: usize,
}

/// Every case a run of `formats` on `platform` owes, in run order: each (op, variant) the
/// capability table supports, each shape of the tier (products and gather on rank-2 shapes
/// only), each column count of a product. Pure, so a report can hold [`run`] to it: fewer
/// results than planned cases is a failure, not a smaller pass (see [`Report::shortfall`]).
pub fn plan(formats: &[Format], platform: &Platform, tier: Tier) -> Vec<PlannedCase> {
    let mut planned = Vec::new();
    for &format in formats {
        let layout = format.layout();
        for op in Op::ALL {
            for variant in Variant::ALL {
                if capability::status(format, layout, op, variant, Some(platform)) != Status::Supported {
                    continue;
                }
                let column_set: &[usize] = match op {
                    Op::Matmul | Op::MatmulA8 => &COLUMNS,
                    Op::Dequant | Op::Gather => &[1],
                };
                for shape in shapes(format, tier) {
                    let runs = match op {
                        Op::Dequant => true,
                        Op::Matmul | Op::MatmulA8 | Op::Gather => shape.len() == 2,
                    };
                    if runs {
                        planned.extend(column_set.iter().map(|&columns| PlannedCase {
                            format,
                            op,
                            variant,
                            shape: shape.clone(),
                            columns,
                        }));
                    }
                }
            }
        }
    }
    planned
}

/// Runs every case of `planned` (from [`plan`]) on this adapter, one result per case: errors
/// become failing cases.
pub async fn run(
    gpu: &Gpu,
    planned: &[PlannedCase],
    seed: u64,
    mut progress: impl FnMut(&CaseResult),
) -> Vec<CaseResult> {
    let mut rng = Rng::new(seed);
    let mut results = Vec::new();
    for (i, case) in planned.iter().enumerate() {
        let PlannedCase { format, op, variant, ref shape, columns } = *case;
        let r = run_case(gpu, format, op, variant, shape, columns, &mut rng).await.unwrap_or_else(|e| CaseResult {
            criterion: "error".into(),
            max_error: f64::INFINITY,
            of_bound: f64::INFINITY,
            rel_l2: f64::INFINITY,
            l2_parts: (f64::INFINITY, 1.0),
            detail: e.to_string(),
            columns,
            ..blank(format, op, variant, shape)
        });
        progress(&r);
        results.push(r);
        // A (format, op, variant)'s cases are consecutive: judge them together after its last.
        let last = planned.get(i + 1).is_none_or(|next| (next.format, next.op, next.variant) != (format, op, variant));
        if op.is_product() && last {
            judge_l2_together(&mut results, format, op, variant);
        }
    }
    results
}

/// The relative L2 check over all outputs of one (format, product op, variant): the small cases
/// that were not judged alone are judged here, together with the rest (A32: the relative L2
/// error against 1e-5; A8: its square against 5e-4, and the small cases' largest error against
/// 0.06 times their largest exact output plus 1/256).
fn judge_l2_together(results: &mut [CaseResult], format: Format, op: Op, variant: Variant) {
    let group = |r: &CaseResult| r.format == format.name() && r.op == op.name() && r.variant == variant.name();
    if op == Op::MatmulA8 {
        let small = |r: &CaseResult| group(r) && r.shape.first().map_or(0, |n| n * r.columns) < L2_MIN_OUTPUTS;
        let (worst, max_ref) = results
            .iter()
            .filter(|r| small(r))
            .fold((0f64, 0f64), |(w, m), r| (w.max(r.max_parts.0), m.max(r.max_parts.1)));
        let bound = A8_MAX_RELATIVE * max_ref + A8_MAX_ABSOLUTE;
        // A small case's own ratio is not what it is judged by (one output near zero after
        // cancellation makes it any size): it reports the ratio of the checks it takes, the
        // small cases' largest error and the group's L2 (below).
        let parts =
            results.iter().filter(|r| group(r)).fold((0.0, 0.0), |(n, d), r| (n + r.l2_parts.0, d + r.l2_parts.1));
        let of_bound = (worst / bound).max(rel_l2(parts).powi(2) / A8_SQUARED_L2);
        for r in results.iter_mut().filter(|r| small(r) && r.of_bound.is_finite()) {
            (r.of_bound, r.max_error) = (of_bound, of_bound);
        }
        if worst > bound {
            for r in results.iter_mut().filter(|r| small(r) && r.verdict == Verdict::Pass) {
                r.verdict = Verdict::Fail;
                r.detail = format!(
                    "over the small {format} matmul_a8 {} cases together: max|y - y_ref| = {worst:e} > 0.06 max|y_ref| + 1/256 = {bound:e}",
                    variant.name()
                );
            }
        }
    }
    let parts = results.iter().filter(|r| group(r)).fold((0.0, 0.0), |(n, d), r| (n + r.l2_parts.0, d + r.l2_parts.1));
    let rel = rel_l2(parts);
    let (value, bound, what) = match op {
        Op::MatmulA8 => (rel * rel, A8_SQUARED_L2, "squared relative L2 error"),
        Op::Matmul | Op::Dequant | Op::Gather => (rel, A32_REL_L2, "relative L2 error"),
    };
    if value > bound {
        for r in results.iter_mut().filter(|r| group(r) && r.verdict == Verdict::Pass) {
            r.verdict = Verdict::Fail;
            r.detail =
                format!("{what} over all {format} {} {} outputs is {value:e} > {bound:e}", op.name(), variant.name());
        }
    }
}

#[cfg(test)]
mod judge_tests;

/// Activation columns `verify` multiplies a user's matrix by.
pub const VERIFY_COLUMNS: usize = 2;

/// One tensor of a user's file checked on a GPU: its results per op, or why it was not run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TensorReport {
    pub name: String,
    pub format: String,
    pub shape: Vec<usize>,
    pub bytes: usize,
    pub results: Vec<CaseResult>,
    /// Ops the capability table rules out for this tensor on this device, with the reason.
    pub not_run: Vec<(String, String)>,
}

impl TensorReport {
    pub fn failed(&self) -> bool {
        self.results.iter().any(|r| r.verdict == Verdict::Fail)
    }
}

/// Checks one tensor of a user's file against the oracle on `gpu`: dequant by its format's
/// criterion, and for rank-2 float tensors gather (last, first, repeated and random rows) and
/// matmul with [`VERIFY_COLUMNS`] fresh random columns by A32, with the fastest variant. The
/// tensor is validated first; an invalid one is an error naming the rule.
pub async fn verify_tensor(gpu: &Gpu, name: &str, tensor: &EncodedTensor<'_>, rng: &mut Rng) -> Result<TensorReport> {
    // Validated and uploaded once; every op then runs on the same device buffers.
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    let format = tensor.format();
    let mut report = TensorReport {
        name: name.to_string(),
        format: format.name().into(),
        shape: tensor.shape().to_vec(),
        bytes: tensor.payload().len(),
        results: Vec::new(),
        not_run: Vec::new(),
    };
    for op in Op::ALL {
        let variant = capability::best_variant(format, op, gpu.platform());
        if let Status::Unsupported(reason) =
            capability::status(format, tensor.layout(), op, variant, Some(gpu.platform()))
        {
            report.not_run.push((op.name().to_string(), reason));
            continue;
        }
        let result = match (op, tensor.shape()) {
            (Op::Dequant, _) => dequant_on(gpu, tensor, &uploaded).await?,
            (Op::Gather, [n, _]) => gather_on(gpu, tensor, &uploaded, &gather_rows(*n, rng)).await?,
            (Op::Matmul | Op::MatmulA8, [_, k]) => {
                let xs = random_activation(k * VERIFY_COLUMNS, rng);
                matmul_on(gpu, tensor, &uploaded, &xs, VERIFY_COLUMNS, op, variant).await?
            }
            (Op::Gather | Op::Matmul | Op::MatmulA8, shape) => {
                report.not_run.push((op.name().to_string(), format!("needs a rank-2 tensor, shape is {shape:?}")));
                continue;
            }
        };
        report.results.push(result);
    }
    Ok(report)
}
