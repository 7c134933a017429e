//! The CPU reference forward of every architecture `arch.rs` describes: the oracle's exact
//! weights, f64 arithmetic, the graph llama.cpp builds (the facts, from its graphs): embedding
//! rows (gemma: scaled by sqrt(width)); per block an RMS norm, q, k and v (plus their biases where
//! the file has them), RMS norms of each query and key head (qwen3, gemma3), RoPE of the block's
//! base and scale with the architecture's pairing (and Llama 3.1's frequency factors), queries
//! scaled, causal attention (soft-capped scores for gemma2; local blocks: only the last
//! `sliding_window` positions) over grouped-query heads, the output product, a post-attention
//! norm (gemma2, gemma3) and the residual; then a norm, act(gate)·up (SiLU or GELU), down, a
//! post-feed-forward norm (gemma2, gemma3) and the residual; a final norm, the head (its own or
//! the embedding table) and the final soft-cap where there is one.
//!
//! The model-level oracle: slow (a token costs every weight once, in f64), exact up to f64
//! rounding. Its logits and greedy continuations judge the GPU forward, and llama.cpp's are
//! judged against it (tests/gemma/, docs/judging.md#a-models-logits).

use super::arch::{Activation, Norms, Pairing};
use super::config::{ModelConfig, ROPE_FACTORS};
use super::weights::exact_values;
use super::Keep;
use crate::error::Result;
use crate::gguf::reader::GgufFile;
use std::collections::HashMap;

/// The model's weights as exact values, by tensor name.
pub struct Reference {
    config: ModelConfig,
    weights: HashMap<String, Vec<f32>>,
}

fn rms_norm(x: &[f64], w: &[f32], eps: f64) -> Vec<f64> {
    let mean = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let scale = 1.0 / (mean + eps).sqrt();
    x.iter().zip(w).map(|(v, &g)| v * scale * g as f64).collect()
}

/// `W x` for a row-major [n, k] matrix, its rows shared among the machine's cores (the head's
/// 168 M products per token are most of a reference token's time).
fn product(w: &[f32], x: &[f64]) -> Vec<f64> {
    let rows = w.len() / x.len().max(1);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(rows.div_ceil(1024)).max(1);
    let per = rows.div_ceil(threads) * x.len();
    let dot = |row: &[f32]| row.iter().zip(x).map(|(&a, b)| a as f64 * b).sum::<f64>();
    if threads == 1 {
        return w.chunks_exact(x.len()).map(dot).collect();
    }
    std::thread::scope(|s| {
        let parts: Vec<_> = w
            .chunks(per)
            .map(|part| s.spawn(move || part.chunks_exact(x.len()).map(dot).collect::<Vec<f64>>()))
            .collect();
        parts.into_iter().flat_map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

/// GELU's tanh form, as ggml's gelu computes it.
fn gelu(x: f64) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// The angle of pair `i` of a head of `d` at `pos`: scale · pos · base^(-2i/d) / factor_i.
pub(super) fn rope_angle(pos: usize, i: usize, d: usize, base: f32, scale: f32, factor: f32) -> f64 {
    scale as f64 * pos as f64 * (base as f64).powf(-2.0 * i as f64 / d as f64) / factor as f64
}

/// Which two dimensions of a head of `d` pair `i` turns.
pub(super) fn rope_pair(pairing: Pairing, i: usize, d: usize) -> (usize, usize) {
    match pairing {
        Pairing::Adjacent => (2 * i, 2 * i + 1),
        Pairing::Halves => (i, i + d / 2),
    }
}

/// RoPE of one head at `pos`: each pair rotated by its angle.
fn rope(head: &mut [f64], pos: usize, c: &ModelConfig, local: bool, factors: &[f32]) {
    let d = head.len();
    let (base, scale) =
        if local { (c.rope_base_local, c.rope_scale_local) } else { (c.rope_base_global, c.rope_scale_global) };
    for i in 0..d / 2 {
        let theta = rope_angle(pos, i, d, base, scale, factors.get(i).copied().unwrap_or(1.0));
        let (s, co) = theta.sin_cos();
        let (ia, ib) = rope_pair(c.pairing, i, d);
        let (a, b) = (head[ia], head[ib]);
        head[ia] = a * co - b * s;
        head[ib] = a * s + b * co;
    }
}

impl Reference {
    /// Every tensor the forward pass reads, dequantized by the oracle.
    pub fn load(file: &GgufFile, config: &ModelConfig) -> Result<Reference> {
        super::weights::check_model(file, config)?;
        let mut weights = HashMap::new();
        for (name, _) in config.tensors() {
            let values = exact_values(file, &name)?;
            weights.insert(name, values);
        }
        Ok(Reference { config: config.clone(), weights })
    }

    fn w(&self, name: &str) -> &[f32] {
        // Every name the forward pass asks for was loaded from `config.tensors()`.
        self.weights.get(name).map_or(&[], |v| v.as_slice())
    }

    /// Teacher-forced logits of every position of `tokens`: [position][vocab].
    pub fn logits(&self, tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
        let mut session = self.session();
        tokens.iter().map(|&t| session.step(t)).collect()
    }

    /// A run from position 0 over the model's whole context, keeping every block's keys and
    /// values.
    pub fn session(&self) -> Session<'_> {
        let blocks = self.config.blocks;
        let context = self.config.context_length;
        Session { model: self, context, keys: vec![Vec::new(); blocks], values: vec![Vec::new(); blocks] }
    }

    /// A run of at most `context` positions (0: the GPU forward's default), refused as the GPU
    /// forward refuses it.
    pub fn session_of(&self, context: usize) -> Result<Session<'_>> {
        let context = super::forward::run_context(&self.config, context)?;
        Ok(Session { context, ..self.session() })
    }
}

/// A reference run in progress: the keys and values of every position so far, per block.
pub struct Session<'r> {
    model: &'r Reference,
    /// Positions the run may take.
    context: usize,
    keys: Vec<Vec<Vec<f64>>>,
    values: Vec<Vec<Vec<f64>>>,
}

impl Session<'_> {
    /// Tokens seen so far: the next token's position.
    pub fn position(&self) -> usize {
        self.keys.first().map_or(0, |k| k.len())
    }

    /// Positions the run may take.
    pub fn context(&self) -> usize {
        self.context
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.model.config
    }

    /// Runs `tokens` from the current position, checked whole before the first runs (as the GPU
    /// forward checks them): the last token's logits ([`Keep::Last`]) or every token's, back to
    /// back ([`Keep::All`]).
    pub fn run(&mut self, tokens: &[u32], keep: Keep) -> Result<Vec<f32>> {
        super::forward::check_run(&self.model.config, tokens, self.position(), self.context)?;
        let mut out = Vec::new();
        for (i, &t) in tokens.iter().enumerate() {
            let logits = self.step(t)?;
            if keep == Keep::All || i + 1 == tokens.len() {
                out.extend(logits);
            }
        }
        Ok(out)
    }

    /// The logits after `token` at the next position.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>> {
        let model = self.model;
        let c = &model.config;
        let pos = self.position();
        super::forward::check_run(c, &[token], pos, self.context)?;
        let (width, kl, vl) = (c.width, c.key_length, c.value_length);
        let eps = c.rms_epsilon as f64;
        let group = c.heads / c.kv_heads;
        let embd = model.w("token_embd.weight");
        let (keys, values) = (&mut self.keys, &mut self.values);
        let row = &embd[token as usize * width..][..width];
        let mut x: Vec<f64> = row.iter().map(|&v| v as f64 * c.embedding_scale as f64).collect();
        let factors = model.w(ROPE_FACTORS);
        let sandwich = c.norms == Norms::Sandwich;
        for b in 0..c.blocks {
            let name = |s: &str| format!("blk.{b}.{s}.weight");
            let with_bias = |mut y: Vec<f64>, part: &str| {
                if let Some(bias) = model.weights.get(&format!("blk.{b}.attn_{part}.bias")) {
                    y.iter_mut().zip(bias).for_each(|(y, &b)| *y += b as f64);
                }
                y
            };
            let h = rms_norm(&x, model.w(&name("attn_norm")), eps);
            let mut q = with_bias(product(model.w(&name("attn_q")), &h), "q");
            let mut k = with_bias(product(model.w(&name("attn_k")), &h), "k");
            let v = with_bias(product(model.w(&name("attn_v")), &h), "v");
            for head in q.chunks_exact_mut(kl) {
                if c.qk_norm {
                    let normed = rms_norm(head, model.w(&name("attn_q_norm")), eps);
                    head.copy_from_slice(&normed);
                }
                rope(head, pos, c, c.local[b], factors);
                head.iter_mut().for_each(|v| *v *= c.attention_scale as f64);
            }
            for head in k.chunks_exact_mut(kl) {
                if c.qk_norm {
                    let normed = rms_norm(head, model.w(&name("attn_k_norm")), eps);
                    head.copy_from_slice(&normed);
                }
                rope(head, pos, c, c.local[b], factors);
            }
            keys[b].push(k);
            values[b].push(v);
            // Local blocks see the last `sliding_window` positions, global ones all.
            let first = match (c.local[b], c.sliding_window) {
                (true, Some(w)) => (pos + 1).saturating_sub(w),
                _ => 0,
            };
            let mut attended = vec![0.0f64; c.heads * vl];
            for hd in 0..c.heads {
                let kv = hd / group;
                let qh = &q[hd * kl..][..kl];
                let score = |s: usize| {
                    let dot: f64 = keys[b][s][kv * kl..][..kl].iter().zip(qh).map(|(a, b)| a * b).sum();
                    match c.attention_softcap {
                        Some(cap) => cap as f64 * (dot / cap as f64).tanh(),
                        None => dot,
                    }
                };
                let scores: Vec<f64> = (first..=pos).map(score).collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                let total: f64 = exps.iter().sum();
                let oh = &mut attended[hd * vl..][..vl];
                for (e, s) in exps.iter().zip(first..=pos) {
                    let vs = &values[b][s][kv * vl..][..vl];
                    oh.iter_mut().zip(vs).for_each(|(o, v)| *o += e / total * v);
                }
            }
            let mut o = product(model.w(&name("attn_output")), &attended);
            if sandwich {
                o = rms_norm(&o, model.w(&name("post_attention_norm")), eps);
            }
            x.iter_mut().zip(&o).for_each(|(x, o)| *x += o);
            let f = rms_norm(&x, model.w(&name("ffn_norm")), eps);
            let gate = product(model.w(&name("ffn_gate")), &f);
            let up = product(model.w(&name("ffn_up")), &f);
            let act = match c.activation {
                Activation::GeluTanh => gelu,
                Activation::Silu => silu,
            };
            let a: Vec<f64> = gate.iter().zip(&up).map(|(g, u)| act(*g) * u).collect();
            let mut d = product(model.w(&name("ffn_down")), &a);
            if sandwich {
                d = rms_norm(&d, model.w(&name("post_ffw_norm")), eps);
            }
            x.iter_mut().zip(&d).for_each(|(x, d)| *x += d);
        }
        let x = rms_norm(&x, model.w("output_norm.weight"), eps);
        let head = model.weights.get("output.weight").map_or(embd, |v| v.as_slice());
        let mut logits: Vec<f32> = product(head, &x).into_iter().map(|v| v as f32).collect();
        if let Some(cap) = c.final_logit_softcap {
            let cap = cap as f64;
            logits.iter_mut().for_each(|z| *z = (cap * (*z as f64 / cap).tanh()) as f32);
        }
        super::weights::check_logits(&logits, c.vocab, pos)?;
        Ok(logits)
    }
}
