//! How a model's logits are judged against a reference's (docs/judging.md#a-models-logits):
//! per position, the KL divergence of ours from the reference's softmax, top-1 agreement, and
//! the negative log-likelihood of the next token (perplexity). Sums in f64.

/// log-softmax of one position's logits, in f64.
pub fn log_softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().fold(f64::NEG_INFINITY, |m, &z| m.max(z as f64));
    let total: f64 = logits.iter().map(|&z| (z as f64 - max).exp()).sum();
    let log_total = total.ln() + max;
    logits.iter().map(|&z| z as f64 - log_total).collect()
}

/// KL(P ‖ Q) of one position: P the reference's softmax, Q ours. A NaN anywhere makes it
/// infinite, so that NaN logits compared with NaN logits fail every limit (f64::max would turn
/// a NaN sum into 0).
pub fn kl_divergence(reference: &[f32], ours: &[f32]) -> f64 {
    let (p, q) = (log_softmax(reference), log_softmax(ours));
    let kld: f64 = p.iter().zip(&q).map(|(&lp, &lq)| lp.exp() * (lp - lq)).sum();
    match kld.is_nan() {
        true => f64::INFINITY,
        false => kld.max(0.0),
    }
}

/// The index of the largest logit (the first, where several are equal).
pub fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &z) in logits.iter().enumerate() {
        if z > logits[best] {
            best = i;
        }
    }
    best
}

/// −log p(`next`) under one position's logits.
pub fn nll(logits: &[f32], next: u32) -> f64 {
    -log_softmax(logits)[next as usize]
}

/// Two runs' logits over the same tokens, compared position by position.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Agreement {
    pub positions: usize,
    /// Mean KL(reference ‖ ours) over the positions.
    pub mean_kld: f64,
    pub max_kld: f64,
    /// Positions where both pick the same top token, as a fraction.
    pub top1: f64,
}

/// Compares `ours` with `reference`, both [position][vocab] back to back. Logits of another
/// length than the reference's fail every limit (an infinite divergence, no agreement).
pub fn agreement(reference: &[f32], ours: &[f32], vocab: usize) -> Agreement {
    let mut tally = Tally::default();
    tally.add(reference, ours, vocab);
    tally.agreement()
}

/// An [`Agreement`] summed a run of positions at a time, so no run holds every position's
/// logits.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    positions: usize,
    sum: f64,
    max: f64,
    same: usize,
    /// A run whose lengths disagreed: the agreement fails.
    mismatched: bool,
}

impl Tally {
    /// Adds the positions of one run of both.
    pub fn add(&mut self, reference: &[f32], ours: &[f32], vocab: usize) {
        if reference.len() != ours.len() || vocab == 0 || !reference.len().is_multiple_of(vocab) {
            self.positions += reference.len() / vocab.max(1);
            self.mismatched = true;
            return;
        }
        for (r, o) in reference.chunks_exact(vocab).zip(ours.chunks_exact(vocab)) {
            let kld = kl_divergence(r, o);
            self.sum += kld;
            self.max = self.max.max(kld);
            self.same += (argmax(r) == argmax(o)) as usize;
            self.positions += 1;
        }
    }

    pub fn agreement(&self) -> Agreement {
        let positions = self.positions;
        if self.mismatched {
            return Agreement { positions, mean_kld: f64::INFINITY, max_kld: f64::INFINITY, top1: 0.0 };
        }
        let n = positions.max(1) as f64;
        Agreement { positions, mean_kld: self.sum / n, max_kld: self.max, top1: self.same as f64 / n }
    }
}

/// ‖ours − reference‖ / ‖reference‖ over every logit: where a model's distributions are
/// nearly flat (tiny random weights), a KL divergence hides much that this shows. NaN where
/// either side holds one.
pub fn relative_l2(reference: &[f32], ours: &[f32]) -> f64 {
    let (mut diff, mut norm) = (0.0, 0.0);
    for (&e, &o) in reference.iter().zip(ours) {
        diff += (o as f64 - e as f64).powi(2);
        norm += (e as f64).powi(2);
    }
    (diff / norm).sqrt()
}

/// exp(mean −log p(next token)) over every position but the last: the perplexity of `tokens`
/// under teacher-forced `logits` ([position][vocab]).
pub fn perplexity(logits: &[f32], tokens: &[u32], vocab: usize) -> f64 {
    let scored = tokens.len().saturating_sub(1).max(1);
    let next = tokens.get(1..).unwrap_or_default();
    let total: f64 = logits.chunks_exact(vocab).zip(next).map(|(l, &next)| nll(l, next)).sum();
    (total / scored as f64).exp()
}

/// The largest mean KL divergence `verify --forward` and the tests pass against the exact CPU
/// reference. A32 must be closer to the exact forward than llama.cpp's own Vulkan backend is;
/// A8 quantizes every product's activation to q8_1, as llama.cpp's CPU backend does. The
/// measurements behind both: docs/judging.md#a-models-logits.
pub fn forward_limit(profile: crate::gpu::Profile) -> f64 {
    match profile {
        crate::gpu::Profile::A32 => 5e-4,
        crate::gpu::Profile::A8 => 5e-3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kld_is_zero_for_equal_and_positive_otherwise() {
        let a = [1.0f32, 2.0, 3.0, -1.0];
        assert!(kl_divergence(&a, &a).abs() < 1e-15);
        // A shift of every logit is the same distribution.
        let shifted: Vec<f32> = a.iter().map(|z| z + 5.0).collect();
        assert!(kl_divergence(&a, &shifted) < 1e-12);
        let b = [1.0f32, 2.5, 3.0, -1.0];
        let kld = kl_divergence(&a, &b);
        // By hand: p = softmax(a), q = softmax(b), Σ p (ln p − ln q).
        let p: Vec<f64> = log_softmax(&a).iter().map(|l| l.exp()).collect();
        let by_hand: f64 = (0..4).map(|i| p[i] * (log_softmax(&a)[i] - log_softmax(&b)[i])).sum();
        assert!((kld - by_hand).abs() < 1e-15 && kld > 0.01, "{kld} vs {by_hand}");
    }

    #[test]
    fn perplexity_of_a_uniform_model_is_the_vocabulary() {
        let vocab = 8;
        let logits = vec![0.25f32; vocab * 4];
        let p = perplexity(&logits, &[1, 2, 3, 4], vocab);
        assert!((p - 8.0).abs() < 1e-9, "{p}");
        let r = agreement(&logits, &logits, vocab);
        assert_eq!((r.positions, r.top1), (4, 1.0));
        let short = agreement(&logits, &logits[..vocab * 3], vocab);
        assert!(short.mean_kld.is_infinite() && short.top1 == 0.0, "{short:?}");
    }

    #[test]
    fn nan_logits_fail_even_against_nan_logits() {
        let nan = [f32::NAN, 1.0, 2.0, 3.0];
        assert!(kl_divergence(&nan, &nan).is_infinite());
        let a = agreement(&nan, &nan, 4);
        assert!(a.mean_kld.is_infinite() && a.mean_kld > forward_limit(crate::gpu::Profile::A8), "{a:?}");
        assert!(kl_divergence(&[0.0, 1.0], &[f32::NAN, 1.0]).is_infinite());
    }

    #[test]
    fn a_tally_over_runs_equals_the_agreement_of_the_whole() {
        let (r, o): (Vec<f32>, Vec<f32>) = (0..24).map(|i| ((i % 5) as f32, (i % 7) as f32 * 0.5)).unzip();
        let mut t = Tally::default();
        t.add(&r[..8], &o[..8], 4);
        t.add(&r[8..], &o[8..], 4);
        assert_eq!(t.agreement(), agreement(&r, &o, 4));
    }
}
