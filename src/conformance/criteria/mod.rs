//! The criteria of `criteria.md` as judges: each takes the oracle's reference and a device's
//! output and returns a verdict with the error against its bound. Pure functions, tested
//! without a GPU (`tests.rs`).

use super::{CaseResult, Verdict, MIN_NORMAL};
use crate::format::Format;
use crate::gpu::{Op, Variant, POISON};
use crate::oracle;

#[cfg(test)]
mod tests;

/// Units in the last place of a finite binary32 `x`: 2^(exponent - 23), and 2^-149 for zero and
/// subnormals (f32::MAX included: its ULP is 2^104).
pub(super) fn ulp(x: f32) -> f64 {
    let exponent = ((x.to_bits() >> 23) & 0xFF) as i32;
    2f64.powi(exponent.max(1) - 127 - 23)
}

/// Whether a format's dequant is exact (bit for bit) or bounded (nvfp4's division).
pub(super) fn dequant_bound_ulps(format: Format) -> Option<f64> {
    match format {
        // Oracle: correctly rounded (0.5 ULP); WGSL f32 division: 2.5 ULP. Their distance is at
        // most 3 ULP of the result.
        Format::Nvfp4 => Some(3.0),
        _ => None,
    }
}

/// Judges dequant-like words (dequant, gather) against the oracle's. A short or long output is a
/// failure naming both lengths: comparing only the words both have would pass a truncated one.
pub(super) fn judge_dequant(format: Format, flushes: bool, expect: &[u32], got: &[u32]) -> (Verdict, f64, String) {
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
pub(super) struct MatmulCase<'a> {
    pub(super) format: Format,
    pub(super) k: usize,
    pub(super) xs: &'a [f32],
    pub(super) reference: &'a oracle::MatvecReference,
    /// Per output: the row has a subnormal weight or a subnormal product, or the exact output
    /// is below 2^-126 — where a flushing device may lose up to the flush-aware bound.
    pub(super) touches_subnormals: Vec<bool>,
    /// The device flushes subnormal results (its probe), described for the report.
    pub(super) flushes: Option<String>,
}

pub(super) fn judge_matmul(case: &MatmulCase, got: &[f32]) -> (Verdict, f64, (f64, f64), String) {
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
pub(super) fn judge_a8(
    reference: &oracle::MatvecReference,
    model: &oracle::A8Model,
    k: usize,
    got: &[f32],
) -> A8Judgement {
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

pub(super) struct A8Judgement {
    pub(super) verdict: Verdict,
    pub(super) of_bound: f64,
    pub(super) l2_parts: (f64, f64),
    pub(super) max_parts: (f64, f64),
    pub(super) detail: String,
}

pub(super) fn rel_l2((num, den): (f64, f64)) -> f64 {
    if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    }
}

/// The criterion dequant and gather are judged by.
pub(super) fn dequant_criterion(format: Format) -> String {
    match dequant_bound_ulps(format) {
        Some(b) => format!("bounded ({b} ULP)"),
        None => "exact".into(),
    }
}

/// The relative L2 check over all outputs of one (format, product op, variant): the small cases
/// that were not judged alone are judged here, together with the rest (A32: the relative L2
/// error against 1e-5; A8: its square against 5e-4, and the small cases' largest error against
/// 0.06 times their largest exact output plus 1/256).
pub(super) fn judge_l2_together(results: &mut [CaseResult], format: Format, op: Op, variant: Variant) {
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

/// Judges dequant-like words (dequant, gather) and records the error against the bound.
pub(super) fn judge_words(result: &mut CaseResult, flushes: bool, format: Format, expect: &[u32], got: &[u32]) {
    result.criterion = dequant_criterion(format);
    (result.verdict, result.max_error, result.detail) = judge_dequant(format, flushes, expect, got);
    result.of_bound = result.max_error / dequant_bound_ulps(format).unwrap_or(1.0);
}
