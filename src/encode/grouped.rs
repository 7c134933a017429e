//! grouped_absmax — the canonical reference encoder of section 7 for q4/q5/q6/q8, bit for bit —
//! and grouped_search, which keeps that result unless a candidate scale is strictly better.

use super::{check_matrix, Encoded, Provenance, Source};
use crate::error::{Error, Result};
use crate::format::{CodeMapping, Format};
use crate::layout::Layout;
use crate::numeric::{f16_to_f32, f32_to_f16};
use crate::tensor::EncodedTensor;
use crate::words::{GroupedWords, LogicalWords};

/// The grouped facts of a target the reference encoders accept (q4, q5, q6, q8).
fn target(method: &'static str, format: Format) -> Result<(usize, i32, i32)> {
    match format.grouped() {
        Some((_, _, _, CodeMapping::OffsetOne)) => Err(Error::Unsupported(format!("{method} refuses {format}: floating-point-to-Q2 quantization is outside the conversion contract (import GSQ Q2_0 codes instead)"))),
        Some((_, -1, 1, _)) => Err(Error::Unsupported(format!("{method} refuses {format}: ternary weights are imported, never quantized"))),
        Some((group, qmin, qmax, CodeMapping::TwosComplement)) => Ok((group, qmin, qmax)),
        None => Err(Error::Unsupported(format!("{method} targets q4/q5/q6/q8 only, not {format}"))),
    }
}

/// Section 7.2's scale: `round_f16(round_f32(amax / qmax))`, with the 0x0001 rescue and an
/// overflow error. `amax` is positive.
fn absmax_scale(amax: f32, qmax: i32) -> Result<u16> {
    let raw = amax / qmax as f32;
    let s16 = match f32_to_f16(raw) {
        0x0000 => 0x0001,
        s => s,
    };
    if s16 & 0x7C00 == 0x7C00 {
        return Err(Error::Numeric {
            target: "binary16 group scale",
            value: raw as f64,
            rule: "amax / qmax overflows binary16; the encoder fails rather than store or clip it",
        });
    }
    Ok(s16)
}

/// Codes by the normative reciprocal multiply: `inv32 = round_f32(1 / s32)`, then
/// `round_ties_even(round_f32(x * inv32))`, clamped after rounding.
fn codes_for(values: &[f32], scale: u16, qmin: i32, qmax: i32, out: &mut Vec<i8>) {
    let inv = 1.0f32 / f16_to_f32(scale);
    out.extend(values.iter().map(|&x| ((x * inv).round_ties_even() as i32).clamp(qmin, qmax) as i8));
}

/// One group by section 7.2: `(scale, codes)`.
fn absmax_group(values: &[f32], qmin: i32, qmax: i32, codes: &mut Vec<i8>) -> Result<u16> {
    let amax = values.iter().fold(0f32, |m, x| m.max(x.abs()));
    if amax == 0.0 {
        codes.extend(std::iter::repeat_n(0i8, values.len()));
        return Ok(0x0000);
    }
    let scale = absmax_scale(amax, qmax)?;
    codes_for(values, scale, qmin, qmax, codes);
    Ok(scale)
}

fn encode_groups(
    method: &'static str,
    format: Format,
    n: usize,
    k: usize,
    source: Source,
    mut group_fn: impl FnMut(&[f32], usize, &mut Vec<i8>) -> Result<u16>,
) -> Result<EncodedTensor<'static>> {
    let (group, ..) = target(method, format)?;
    check_matrix(method, n, k, source.len())?;
    let values = source.to_finite_f32(method)?;
    let mut codes = Vec::with_capacity(n * k);
    let mut scales = Vec::with_capacity(n * k.div_ceil(group));
    for (r, row) in values.chunks_exact(k).enumerate() {
        for (g, chunk) in row.chunks(group).enumerate() {
            // A partial last group is encoded from its logical values only.
            let scale = group_fn(chunk, g * group, &mut codes)
                .map_err(|e| Error::Words(format!("{method}: row {r}, group {g}: {e}")))?;
            scales.push(scale);
        }
    }
    EncodedTensor::encode(&LogicalWords::Grouped(GroupedWords { format, n, k, codes, scales }), Layout::RowSplitK128V1)
}

/// The canonical reference encoder (section 7) into `row_split_k128_v1`.
pub fn grouped_absmax(format: Format, n: usize, k: usize, source: Source) -> Result<Encoded> {
    let (_, qmin, qmax) = target("grouped_absmax", format)?;
    let tensor = encode_groups("grouped_absmax", format, n, k, source, |values, _, codes| {
        absmax_group(values, qmin, qmax, codes)
    })?;
    Ok(Encoded {
        tensor,
        provenance: Provenance::new("grouped_absmax")
            .with("format", format.name())
            .with("source_type", source.type_name()),
    })
}

/// Options of grouped_search.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchOptions<'a> {
    /// One weight per input channel (K values); uniform without.
    pub importance: Option<&'a [f32]>,
    /// Let negative scales compete (a negative scale maps a positive extreme onto qmin).
    pub negative_scales: bool,
}

/// Multipliers of the max-abs and full-range scales: 0.70, 0.72, …, 1.18 (25 values).
fn multipliers() -> impl Iterator<Item = f32> {
    (0..25).map(|i| 0.70 + 0.02 * i as f32)
}

/// `Σ imp[k] (w[k] - s q[k])^2` in f64.
fn weighted_error(values: &[f32], imp: &[f32], scale: u16, codes: &[i8]) -> f64 {
    let s = f16_to_f32(scale) as f64;
    values.iter().zip(imp).zip(codes).map(|((&w, &i), &q)| i as f64 * (w as f64 - s * q as f64).powi(2)).sum()
}

/// A computed candidate rounded through binary32 to binary16 as in section 7.2; `None` where
/// it cannot be a valid nonzero scale (zero, non-finite, overflow, or negative when disabled).
fn candidate(value: f64, negative_scales: bool) -> Option<u16> {
    let v32 = value as f32;
    if !v32.is_finite() || v32 == 0.0 || (v32 < 0.0 && !negative_scales) {
        return None;
    }
    let s = match f32_to_f16(v32) {
        0x0000 => 0x0001,
        0x8000 => 0x8001,
        s => s,
    };
    (s & 0x7C00 != 0x7C00).then_some(s)
}

/// The weighted least-squares scale of fixed codes, `Σ imp q w / Σ imp q^2`.
fn least_squares(values: &[f32], imp: &[f32], codes: &[i8]) -> Option<f64> {
    let (mut num, mut den) = (0f64, 0f64);
    for ((&w, &i), &q) in values.iter().zip(imp).zip(codes) {
        num += i as f64 * q as f64 * w as f64;
        den += i as f64 * (q as f64).powi(2);
    }
    (den > 0.0).then(|| num / den)
}

/// binary16 neighbours of a scale word (one step each way, same sign).
fn neighbours(s: u16) -> [u16; 2] {
    [s.wrapping_sub(1), s.wrapping_add(1)]
}

/// The best (scale, codes) of a group so far, by weighted squared error.
struct Best {
    scale: u16,
    codes: Vec<i8>,
    error: f64,
}

impl Best {
    /// Replaces the current choice only when `scale` is strictly better.
    fn offer(&mut self, scale: u16, values: &[f32], imp: &[f32], qmin: i32, qmax: i32, scratch: &mut Vec<i8>) {
        // Never a zero (+0 needs all-zero codes; -0 is invalid) or non-finite scale.
        if scale & 0x7FFF == 0 || scale & 0x7C00 == 0x7C00 {
            return;
        }
        scratch.clear();
        codes_for(values, scale, qmin, qmax, scratch);
        let error = weighted_error(values, imp, scale, scratch);
        if error < self.error {
            self.scale = scale;
            self.error = error;
            std::mem::swap(&mut self.codes, scratch);
        }
    }
}

fn search_group(values: &[f32], imp: &[f32], qmin: i32, qmax: i32, negative: bool, codes: &mut Vec<i8>) -> Result<u16> {
    let mut absmax_codes = Vec::with_capacity(values.len());
    let scale = absmax_group(values, qmin, qmax, &mut absmax_codes)?;
    if scale == 0x0000 {
        // An all-zero group keeps the unique +0 / zero-code representation.
        codes.extend(absmax_codes);
        return Ok(scale);
    }
    let amax = values.iter().fold(0f32, |m, x| m.max(x.abs()));
    // The signed value of largest magnitude; extreme / qmin maps it onto the most negative code.
    let extreme = values.iter().copied().fold(0f32, |m, x| if x.abs() > m.abs() { x } else { m });
    let absmax = amax as f64 / qmax as f64;
    let full_range = extreme as f64 / qmin as f64;
    let mut pool: Vec<u16> = Vec::new();
    for m in multipliers() {
        pool.extend(candidate(absmax * m as f64, negative));
        pool.extend(candidate(full_range * m as f64, negative));
    }
    for p in [0.25, 0.5, 2.0, 4.0] {
        pool.extend(candidate(absmax * p, negative));
    }
    pool.extend(neighbours(scale));
    if let Some(ls) = least_squares(values, imp, &absmax_codes).and_then(|v| candidate(v, negative)) {
        pool.push(ls);
        pool.extend(neighbours(ls));
    }
    let error = weighted_error(values, imp, scale, &absmax_codes);
    let mut best = Best { scale, codes: absmax_codes, error };
    let mut scratch = Vec::with_capacity(values.len());
    for s in pool {
        best.offer(s, values, imp, qmin, qmax, &mut scratch);
    }
    // Then the least-squares scale of the winning codes, with its neighbours.
    if let Some(ls) = least_squares(values, imp, &best.codes).and_then(|v| candidate(v, negative)) {
        for s in [ls, ls.wrapping_sub(1), ls.wrapping_add(1)] {
            best.offer(s, values, imp, qmin, qmax, &mut scratch);
        }
    }
    codes.extend(best.codes);
    Ok(best.scale)
}

/// grouped_search (section 7.3) into `row_split_k128_v1`. Valid words always.
pub fn grouped_search(format: Format, n: usize, k: usize, source: Source, options: SearchOptions) -> Result<Encoded> {
    let (_, qmin, qmax) = target("grouped_search", format)?;
    let uniform = vec![1f32; k];
    let imp = match options.importance {
        Some(imp) if imp.len() != k => {
            return Err(Error::Words(format!("grouped_search: importance has {} weights, K is {k}", imp.len())))
        }
        Some(imp) if imp.iter().any(|v| !v.is_finite() || *v < 0.0) => {
            return Err(Error::Words("grouped_search: importance weights are finite and non-negative".into()))
        }
        Some(imp) => imp,
        None => &uniform,
    };
    let tensor = encode_groups("grouped_search", format, n, k, source, |values, k0, codes| {
        search_group(values, &imp[k0..k0 + values.len()], qmin, qmax, options.negative_scales, codes)
    })?;
    let provenance = Provenance::new("grouped_search")
        .with("format", format.name())
        .with("source_type", source.type_name())
        .with("importance", options.importance.is_some())
        .with("negative_scales", options.negative_scales);
    Ok(Encoded { tensor, provenance })
}
