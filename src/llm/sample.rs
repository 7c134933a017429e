//! Choosing the next token from a position's logits: greedy (the largest logit), or sampled at a
//! temperature from the top-k tokens whose probabilities reach top-p, with a seeded generator
//! so a run repeats.

use super::judge::argmax;
use crate::error::{Error, Result};
use crate::testgen::Rng;

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    Greedy,
    Random { temperature: f32, top_k: usize, top_p: f32, seed: u64 },
}

impl Sampling {
    /// Greedy without a temperature; with one, sampled from the top-k tokens reaching top-p,
    /// the settings checked (the CLI's and the browser's rule).
    pub fn checked(temperature: Option<f32>, top_k: usize, top_p: f32, seed: u64) -> Result<Sampling> {
        let Some(temperature) = temperature else { return Ok(Sampling::Greedy) };
        if !(temperature.is_finite() && temperature >= 0.0 && top_p > 0.0 && top_p <= 1.0) || top_k == 0 {
            return Err(Error::Model(format!(
                "sampling needs a temperature ≥ 0, top-k ≥ 1 and 0 < top-p ≤ 1 (got {temperature}, {top_k}, {top_p})"
            )));
        }
        Ok(Sampling::Random { temperature, top_k, top_p, seed })
    }
}

/// A sampling rule with its generator's state.
pub struct Sampler {
    rule: Sampling,
    rng: Rng,
}

impl Sampler {
    pub fn new(rule: Sampling) -> Sampler {
        let seed = match rule {
            Sampling::Random { seed, .. } => seed,
            Sampling::Greedy => 0,
        };
        Sampler { rule, rng: Rng::new(seed) }
    }

    /// The next token.
    pub fn pick(&mut self, logits: &[f32]) -> u32 {
        let (temperature, top_k, top_p) = match self.rule {
            Sampling::Greedy => return argmax(logits) as u32,
            Sampling::Random { temperature, top_k, top_p, .. } => (temperature, top_k, top_p),
        };
        if temperature <= 0.0 {
            return argmax(logits) as u32;
        }
        let mut order: Vec<usize> = (0..logits.len()).collect();
        let k = top_k.clamp(1, logits.len());
        // The k largest, largest first (ties by id, so a run repeats).
        order.select_nth_unstable_by(k - 1, |&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
        order.truncate(k);
        order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
        let top = logits[order[0]] as f64;
        let weights: Vec<f64> = order.iter().map(|&i| ((logits[i] as f64 - top) / temperature as f64).exp()).collect();
        let total: f64 = weights.iter().sum();
        // The smallest prefix whose probability reaches top_p.
        let mut kept = 0;
        let mut mass = 0.0;
        for w in &weights {
            kept += 1;
            mass += w / total;
            if mass >= top_p as f64 {
                break;
            }
        }
        let kept_total: f64 = weights[..kept].iter().sum();
        let mut u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * kept_total;
        for (i, w) in weights[..kept].iter().enumerate() {
            if u < *w {
                return order[i] as u32;
            }
            u -= w;
        }
        order[kept - 1] as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_and_top_k_one_take_the_largest() {
        let logits = [0.5f32, 3.0, -1.0, 2.9];
        assert_eq!(Sampler::new(Sampling::Greedy).pick(&logits), 1);
        let one = Sampling::Random { temperature: 1.0, top_k: 1, top_p: 1.0, seed: 7 };
        let mut s = Sampler::new(one);
        assert!((0..50).all(|_| s.pick(&logits) == 1));
    }

    #[test]
    fn sampling_stays_in_the_nucleus_and_repeats_with_its_seed() {
        // Probabilities ∝ e^3, e^2.9, e^0.5, e^-1: top_p 0.9 keeps only ids 1 and 3.
        let logits = [0.5f32, 3.0, -1.0, 2.9];
        let rule = Sampling::Random { temperature: 1.0, top_k: 4, top_p: 0.9, seed: 42 };
        let picks: Vec<u32> = {
            let mut s = Sampler::new(rule);
            (0..200).map(|_| s.pick(&logits)).collect()
        };
        assert!(picks.iter().all(|&p| p == 1 || p == 3), "{picks:?}");
        assert!(picks.contains(&1) && picks.contains(&3));
        let again: Vec<u32> = {
            let mut s = Sampler::new(rule);
            (0..200).map(|_| s.pick(&logits)).collect()
        };
        assert_eq!(picks, again);
    }

    #[test]
    fn sampling_settings_are_checked() {
        assert_eq!(Sampling::checked(None, 0, 7.0, 1).unwrap(), Sampling::Greedy);
        let ok = Sampling::checked(Some(0.8), 40, 0.95, 9).unwrap();
        assert_eq!(ok, Sampling::Random { temperature: 0.8, top_k: 40, top_p: 0.95, seed: 9 });
        for (t, k, p) in [
            (-0.1, 40, 0.9),
            (f32::NAN, 40, 0.9),
            (f32::INFINITY, 40, 0.9),
            (0.8, 0, 0.9),
            (0.8, 40, 0.0),
            (0.8, 40, 1.5),
        ] {
            let err = Sampling::checked(Some(t), k, p, 1).expect_err("refused").to_string();
            assert!(err.contains("sampling needs"), "{t} {k} {p}: {err}");
        }
    }
}
