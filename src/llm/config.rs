//! A model's configuration from its GGUF metadata (`<arch>.*` keys) and tensor names and
//! shapes, validated before anything is uploaded: a missing, mistyped or inconsistent key is an
//! error naming it, and an architecture outside [`Architecture::ALL`] is refused naming the
//! supported ones. The architecture's facts come from its row in `arch.rs`.
//!
//! Where a key is absent, the value is the one llama.cpp's loader assumes (facts, from its
//! hyperparameter loader): RoPE base 10000 (local layers: 10000 for gemma3, the global base for
//! gemma2), key and value heads of width / heads, no RoPE scaling, gemma3's sliding-window
//! pattern of 6 and gemma2's window of 4096 over a pattern of 2, gemma2's soft-caps of 50 and
//! 30. gemma-3-270m's file carries neither the local base nor the pattern.

use super::arch::{Activation, Architecture, Norms, Pairing, Window};
use crate::error::{Error, Result};
use crate::gguf::reader::{Array, GgufHeader, Value};

/// The largest context a configuration may declare: 2^20 positions (gemma3's largest models
/// declare 131072). A KV cache is sized by the context a run asks for, not by this.
pub const MAX_CONTEXT: usize = 1 << 20;
/// The largest width, head length, feed-forward width, head count or block count a
/// configuration may declare: far above every model of these families (8192, 256, 29568, 64,
/// 80), low enough that no product of two overflows.
pub const MAX_DIMENSION: usize = 1 << 20;
/// llama.cpp's default RoPE base when `rope.freq_base` is absent, and gemma3's local base.
const DEFAULT_ROPE_BASE: f32 = 10_000.0;

/// Where a model's metadata and tensor shapes come from (a GGUF file; a table in tests).
pub trait Source {
    fn value(&self, key: &str) -> Option<&Value>;
    /// A tensor's logical shape ([rows, values per row] for a matrix), if it exists.
    fn shape(&self, name: &str) -> Option<Vec<usize>>;
    /// Every tensor's name, in the file's order.
    fn names(&self) -> Vec<&str>;
}

impl Source for GgufHeader {
    fn value(&self, key: &str) -> Option<&Value> {
        self.metadata(key)
    }

    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.info(name).map(|t| t.shape())
    }

    fn names(&self) -> Vec<&str> {
        self.tensors.iter().map(|t| t.name.as_str()).collect()
    }
}

/// A model's shape and constants, its architecture's facts ([`Description`]) resolved against
/// the file's keys and tensors.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub architecture: Architecture,
    pub blocks: usize,
    /// The residual stream's width (n_embd).
    pub width: usize,
    pub feed_forward: usize,
    pub heads: usize,
    /// Key and value heads (grouped-query attention: `heads` is a multiple).
    pub kv_heads: usize,
    pub key_length: usize,
    pub value_length: usize,
    pub context_length: usize,
    pub vocab: usize,
    pub rms_epsilon: f32,
    pub norms: Norms,
    /// Query and key heads RMS-normed before RoPE (`attn_q_norm`, `attn_k_norm`).
    pub qk_norm: bool,
    /// Which of q, k and v add a bias (`blk.N.attn_q.bias`, …), the same in every block.
    pub qkv_bias: [bool; 3],
    pub pairing: Pairing,
    pub activation: Activation,
    /// RoPE base of the global (full-attention) layers.
    pub rope_base_global: f32,
    /// RoPE base of the local (sliding-window) layers.
    pub rope_base_local: f32,
    /// Positions are multiplied by this before RoPE (linear scaling: 1 / `rope.scaling.factor`)
    /// in global layers, and by `rope_scale_local` in local ones.
    pub rope_scale_global: f32,
    pub rope_scale_local: f32,
    /// `rope_freqs.weight` divides each pair's angle (Llama 3.1's frequency factors).
    pub rope_factors: bool,
    /// The sliding window of local layers, in positions; `None`: every layer is global.
    pub sliding_window: Option<usize>,
    /// Per block: whether it attends through the sliding window (local) or to every position.
    pub local: Vec<bool>,
    /// Attention scores soft-capped to ±cap by `cap · tanh(s / cap)`.
    pub attention_softcap: Option<f32>,
    /// Logits soft-capped to ±cap by `cap · tanh(z / cap)`, where the file says so.
    pub final_logit_softcap: Option<f32>,
    /// A separate `output.weight` head; else the embedding table is the head (tied).
    pub separate_head: bool,
    /// The factor queries are scaled by before attention: 1 / sqrt(key_length) (gemma2 and
    /// gemma3 27B: 1 / sqrt(width / heads)).
    pub attention_scale: f32,
    /// The factor the embedding rows are scaled by: sqrt(width) for gemma, else 1.
    pub embedding_scale: f32,
}

/// The name this configuration had while gemma3 was the one architecture.
pub type Gemma3Config = ModelConfig;

fn model_error(detail: String) -> Error {
    Error::Model(detail)
}

/// Reads one architecture's keys: `<arch>.<name>`.
struct Keys<'s, S: Source + ?Sized> {
    src: &'s S,
    arch: Architecture,
}

impl<S: Source + ?Sized> Keys<'_, S> {
    fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.arch.name())
    }

    /// An optional unsigned integer key, in 1..=max.
    fn count_or(&self, name: &str, max: usize) -> Result<Option<usize>> {
        let k = self.key(name);
        let Some(v) = self.src.value(&k) else { return Ok(None) };
        let n =
            integer(v).ok_or_else(|| model_error(format!("`{k}` must be an unsigned integer, found {}", kind(v))))?;
        if n == 0 || n > max as u64 {
            return Err(model_error(format!("`{k}` = {n} is outside 1..={max}")));
        }
        Ok(Some(n as usize))
    }

    /// A required unsigned integer key, in 1..=max.
    fn count(&self, name: &str, max: usize) -> Result<usize> {
        self.count_or(name, max)?.ok_or_else(|| model_error(format!("metadata key `{}` is missing", self.key(name))))
    }

    /// An optional positive, finite float key.
    fn positive(&self, name: &str) -> Result<Option<f32>> {
        positive(self.src, &self.key(name))
    }

    /// A head length: the key, else width / heads where that divides (llama.cpp's default).
    fn head_length(&self, name: &str, width: usize, heads: usize) -> Result<usize> {
        match self.count_or(name, MAX_DIMENSION)? {
            Some(n) => Ok(n),
            None if width.is_multiple_of(heads) => Ok(width / heads),
            None => Err(model_error(format!(
                "`{}` is missing and `{}` = {width} is not a multiple of `{}` = {heads}",
                self.key(name),
                self.key("embedding_length"),
                self.key("attention.head_count")
            ))),
        }
    }
}

/// A required or optional positive, finite float key.
fn positive<S: Source + ?Sized>(src: &S, k: &str) -> Result<Option<f32>> {
    let Some(v) = src.value(k) else { return Ok(None) };
    let x = match v {
        Value::F32(x) => *x as f64,
        Value::F64(x) => *x,
        other => return Err(model_error(format!("`{k}` must be a float, found {}", kind(other)))),
    };
    if !(x.is_finite() && x > 0.0 && x <= f32::MAX as f64) {
        return Err(model_error(format!("`{k}` = {x} must be a positive, finite float")));
    }
    Ok(Some(x as f32))
}

fn integer(v: &Value) -> Option<u64> {
    match *v {
        Value::U8(n) => Some(n as u64),
        Value::U16(n) => Some(n as u64),
        Value::U32(n) => Some(n as u64),
        Value::U64(n) => Some(n),
        Value::I8(n) => u64::try_from(n).ok(),
        Value::I16(n) => u64::try_from(n).ok(),
        Value::I32(n) => u64::try_from(n).ok(),
        Value::I64(n) => u64::try_from(n).ok(),
        Value::F32(_) | Value::F64(_) | Value::Bool(_) | Value::String(_) | Value::Array(_) => None,
    }
}

/// A value's GGUF type, for errors.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::U8(_) => "u8",
        Value::I8(_) => "i8",
        Value::U16(_) => "u16",
        Value::I16(_) => "i16",
        Value::U32(_) => "u32",
        Value::I32(_) => "i32",
        Value::F32(_) => "f32",
        Value::Bool(_) => "bool",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::U64(_) => "u64",
        Value::I64(_) => "i64",
        Value::F64(_) => "f64",
    }
}

/// Which blocks are local: llama.cpp's rule for a pattern of n, every n-th block (the last of
/// each run of n) global; a pattern of 0 makes every block local.
fn pattern_layers(blocks: usize, n: usize) -> Vec<bool> {
    (0..blocks).map(|il| n == 0 || il % n < n - 1).collect()
}

/// The file's architecture, refused unless it is one this runs.
fn architecture<S: Source + ?Sized>(src: &S) -> Result<Architecture> {
    match src.value("general.architecture") {
        Some(Value::String(a)) => Architecture::from_name(a).ok_or_else(|| {
            model_error(format!(
                "architecture `{}` is not supported: this runs {}",
                crate::error::clip(a),
                Architecture::supported()
            ))
        }),
        Some(other) => Err(model_error(format!("`general.architecture` must be a string, found {}", kind(other)))),
        None => Err(model_error("metadata key `general.architecture` is missing".into())),
    }
}

/// The sliding window and which blocks use it: the file's window (or the architecture's
/// default), over a per-block array, a period, or the architecture's pattern.
fn window<S: Source + ?Sized>(keys: &Keys<'_, S>, rule: Window, blocks: usize) -> Result<(Option<usize>, Vec<bool>)> {
    let window_key = keys.key("attention.sliding_window");
    let declared = match keys.src.value(&window_key) {
        None => None,
        Some(v) => match integer(v) {
            // llama.cpp has no "0 means none" rule; the key's absence is how a file says so.
            Some(0) => {
                return Err(model_error(format!(
                    "`{window_key}` = 0 is a window of no positions (a file without a window leaves the key out)"
                )))
            }
            Some(n) if n <= MAX_CONTEXT as u64 => Some(n as usize),
            Some(n) => return Err(model_error(format!("`{window_key}` = {n} is over {MAX_CONTEXT}"))),
            None => return Err(model_error(format!("`{window_key}` must be an unsigned integer, found {}", kind(v)))),
        },
    };
    let (window, default_pattern) = match (rule, declared) {
        (Window::None, _) => return Ok((None, vec![false; blocks])),
        (Window::IfDeclared { .. }, None) => return Ok((None, vec![false; blocks])),
        (Window::IfDeclared { pattern }, Some(w)) => (w, pattern),
        (Window::Always { window, pattern }, w) => (w.unwrap_or(window), pattern),
    };
    let pattern_key = keys.key("attention.sliding_window_pattern");
    let local = match keys.src.value(&pattern_key) {
        None => pattern_layers(blocks, default_pattern),
        Some(Value::Array(Array::Bool(each))) if each.len() == blocks => each.clone(),
        Some(Value::Array(a)) => {
            return Err(model_error(format!(
                "`{pattern_key}` must be {blocks} bools, one per block; found an array of {}",
                a.len()
            )))
        }
        Some(v) => match integer(v) {
            Some(n) if n <= blocks as u64 => pattern_layers(blocks, n as usize),
            _ => {
                return Err(model_error(format!(
                    "`{pattern_key}` must be a period of at most {blocks} blocks or {blocks} bools"
                )))
            }
        },
    };
    Ok((Some(window), local))
}

/// The positions' scale of linear RoPE scaling: 1 / `rope.scaling.factor` (or the older
/// `rope.scale_linear`) unless `rope.scaling.type` is `none`; YaRN and LongRoPE are refused.
fn rope_scale<S: Source + ?Sized>(keys: &Keys<'_, S>) -> Result<f32> {
    let type_key = keys.key("rope.scaling.type");
    let kind_of = match keys.src.value(&type_key) {
        None => "linear",
        Some(Value::String(t)) => t.as_str(),
        Some(other) => return Err(model_error(format!("`{type_key}` must be a string, found {}", kind(other)))),
    };
    let factor = match keys.positive("rope.scaling.factor")? {
        Some(f) => Some(f),
        None => keys.positive("rope.scale_linear")?,
    };
    match kind_of {
        "none" => Ok(1.0),
        "linear" => Ok(factor.map_or(1.0, |f| 1.0 / f)),
        other => Err(model_error(format!(
            "`{type_key}` = `{}` is not supported: this runs RoPE scaling `none` and `linear`",
            crate::error::clip(other)
        ))),
    }
}

/// The vocabulary's size, from the tokenizer's token list.
fn vocabulary<S: Source + ?Sized>(src: &S) -> Result<usize> {
    match src.value("tokenizer.ggml.tokens") {
        Some(Value::Array(Array::String(tokens))) if tokens.len() > super::tokenizer::MAX_VOCAB => {
            Err(model_error(format!(
                "`tokenizer.ggml.tokens` holds {} tokens, over the {} this reads",
                tokens.len(),
                super::tokenizer::MAX_VOCAB
            )))
        }
        Some(Value::Array(Array::String(tokens))) if !tokens.is_empty() => Ok(tokens.len()),
        Some(Value::Array(a)) => Err(model_error(format!(
            "`tokenizer.ggml.tokens` must be a non-empty array of strings (found {} elements of another type or none)",
            a.len()
        ))),
        Some(other) => {
            Err(model_error(format!("`tokenizer.ggml.tokens` must be an array of strings, found {}", kind(other))))
        }
        None => Err(model_error("metadata key `tokenizer.ggml.tokens` is missing".into())),
    }
}

impl ModelConfig {
    /// Reads and checks the configuration of a GGUF.
    pub fn from_gguf(file: &GgufHeader) -> Result<ModelConfig> {
        ModelConfig::from_source(file)
    }

    /// Reads and checks the configuration from any [`Source`].
    pub fn from_source<S: Source + ?Sized>(src: &S) -> Result<ModelConfig> {
        let config = ModelConfig::read(src)?;
        config.check_tensors(src)?;
        Ok(config)
    }

    /// The configuration the keys describe, before the tensors are checked against it.
    fn read<S: Source + ?Sized>(src: &S) -> Result<ModelConfig> {
        let architecture = architecture(src)?;
        let facts = architecture.description();
        let keys = Keys { src, arch: architecture };
        let blocks = keys.count("block_count", MAX_DIMENSION)?;
        let width = keys.count("embedding_length", MAX_DIMENSION)?;
        let feed_forward = keys.count("feed_forward_length", MAX_DIMENSION)?;
        let heads = keys.count("attention.head_count", MAX_DIMENSION)?;
        let kv_heads = keys.count("attention.head_count_kv", MAX_DIMENSION)?;
        let key_length = keys.head_length("attention.key_length", width, heads)?;
        let value_length = keys.head_length("attention.value_length", width, heads)?;
        let context_length = keys.count("context_length", MAX_CONTEXT)?;
        if heads % kv_heads != 0 {
            return Err(model_error(format!(
                "`{}` = {heads} is not a multiple of `{}` = {kv_heads}",
                keys.key("attention.head_count"),
                keys.key("attention.head_count_kv")
            )));
        }
        // RoPE turns every dimension of a head, in pairs: a partial rotation is another graph.
        if let Some(n) = keys.count_or("rope.dimension_count", MAX_DIMENSION)? {
            if n != key_length {
                return Err(model_error(format!(
                    "`{}` = {n} rotates part of a head of {key_length}: this runs RoPE over whole heads",
                    keys.key("rope.dimension_count")
                )));
            }
        }
        if !key_length.is_multiple_of(2) {
            return Err(model_error(format!("a key head of {key_length} has no RoPE pairs: it must be even")));
        }
        let eps_key = keys.key("attention.layer_norm_rms_epsilon");
        let rms_epsilon = keys
            .positive("attention.layer_norm_rms_epsilon")?
            .ok_or_else(|| model_error(format!("metadata key `{eps_key}` is missing")))?;
        let rope_base_global = keys.positive("rope.freq_base")?.unwrap_or(DEFAULT_ROPE_BASE);
        let rope_scale_global = rope_scale(&keys)?;
        // Local layers: gemma2 keeps the global base and scale, gemma3 has its own base, unscaled.
        let (local_base, rope_scale_local) = match architecture {
            Architecture::Gemma2 => (rope_base_global, rope_scale_global),
            _ => (DEFAULT_ROPE_BASE, 1.0),
        };
        let rope_base_local = keys.positive("rope.freq_base_swa")?.unwrap_or(local_base);
        let attention_softcap = match facts.attention_softcap {
            Some(default) => Some(keys.positive("attn_logit_softcapping")?.unwrap_or(default)),
            None => None,
        };
        let final_logit_softcap = match facts.final_softcap {
            Some(default) => Some(keys.positive("final_logit_softcapping")?.unwrap_or(default)),
            None if architecture == Architecture::Gemma3 => keys.positive("final_logit_softcapping")?,
            None => None,
        };
        let (sliding_window, local) = window(&keys, facts.window, blocks)?;
        let vocab = vocabulary(src)?;
        let bias = |t: &str| src.shape(&format!("blk.0.attn_{t}.bias")).is_some();
        let query_scale_width = match facts.width_scaled_queries_at {
            Some(n) if n == blocks => width / heads,
            _ => key_length,
        };
        Ok(ModelConfig {
            architecture,
            blocks,
            width,
            feed_forward,
            heads,
            kv_heads,
            key_length,
            value_length,
            context_length,
            vocab,
            rms_epsilon,
            norms: facts.norms,
            qk_norm: facts.qk_norm,
            qkv_bias: [bias("q"), bias("k"), bias("v")],
            pairing: facts.pairing,
            activation: facts.activation,
            rope_base_global,
            rope_base_local,
            rope_scale_global,
            rope_scale_local,
            rope_factors: facts.rope_factors && src.shape(ROPE_FACTORS).is_some(),
            sliding_window,
            local,
            attention_softcap,
            final_logit_softcap,
            separate_head: facts.separate_head && src.shape("output.weight").is_some(),
            attention_scale: 1.0 / (query_scale_width as f32).sqrt(),
            embedding_scale: if facts.scaled_embedding { (width as f32).sqrt() } else { 1.0 },
        })
    }

    /// The `<arch>.<name>` key of this configuration's architecture.
    pub fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.architecture.name())
    }

    /// Every tensor the forward pass reads, with the shape the configuration implies: the
    /// output head is `output.weight` where the file has one, else the embedding table (tied).
    pub fn tensors(&self) -> Vec<(String, Vec<usize>)> {
        let (w, ff) = (self.width, self.feed_forward);
        let (q, k, v) =
            (self.heads * self.key_length, self.kv_heads * self.key_length, self.kv_heads * self.value_length);
        let mut t =
            vec![("token_embd.weight".to_string(), vec![self.vocab, w]), ("output_norm.weight".into(), vec![w])];
        if self.separate_head {
            t.push(("output.weight".into(), vec![self.vocab, w]));
        }
        if self.rope_factors {
            t.push((ROPE_FACTORS.into(), vec![self.key_length / 2]));
        }
        for b in 0..self.blocks {
            let name = |s: &str| format!("blk.{b}.{s}.weight");
            t.extend([
                (name("attn_norm"), vec![w]),
                (name("attn_q"), vec![q, w]),
                (name("attn_k"), vec![k, w]),
                (name("attn_v"), vec![v, w]),
                (name("attn_output"), vec![w, self.heads * self.value_length]),
            ]);
            for ((&on, part), n) in self.qkv_bias.iter().zip(["q", "k", "v"]).zip([q, k, v]) {
                if on {
                    t.push((format!("blk.{b}.attn_{part}.bias"), vec![n]));
                }
            }
            if self.qk_norm {
                t.extend([(name("attn_q_norm"), vec![self.key_length]), (name("attn_k_norm"), vec![self.key_length])]);
            }
            if self.norms == Norms::Sandwich {
                t.push((name("post_attention_norm"), vec![w]));
            }
            t.extend([
                (name("ffn_norm"), vec![w]),
                (name("ffn_gate"), vec![ff, w]),
                (name("ffn_up"), vec![ff, w]),
                (name("ffn_down"), vec![w, ff]),
            ]);
            if self.norms == Norms::Sandwich {
                t.push((name("post_ffw_norm"), vec![w]));
            }
        }
        t
    }

    /// Refuses a missing tensor, one whose shape the configuration does not imply, and one the
    /// model would not use (a `block_count` lower than the file's blocks, a bias in one block
    /// only, an output bias: llama.cpp refuses the first, and this forward has no place for the
    /// others).
    fn check_tensors<S: Source + ?Sized>(&self, src: &S) -> Result<()> {
        let expected = self.tensors();
        let known: std::collections::HashSet<&str> = expected.iter().map(|(n, _)| n.as_str()).collect();
        let names = src.names();
        let unused: Vec<&str> = names.iter().copied().filter(|n| !known.contains(n)).collect();
        if let Some(first) = unused.first() {
            return Err(model_error(format!(
                "tensor `{}` is not used by a {} of {} blocks (`{}`){}",
                crate::error::clip(first),
                self.architecture,
                self.blocks,
                self.key("block_count"),
                match unused.len() {
                    1 => String::new(),
                    n => format!(", nor are {} more", n - 1),
                }
            )));
        }
        for (name, want) in expected {
            match src.shape(&name) {
                None => return Err(model_error(format!("tensor `{name}` is missing"))),
                Some(got) if got != want => {
                    return Err(model_error(format!(
                        "tensor `{name}` has shape {got:?}; the configuration implies {want:?}"
                    )))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Llama 3.1's RoPE frequency factors, one per pair of a head.
pub const ROPE_FACTORS: &str = "rope_freqs.weight";

#[cfg(test)]
mod tests;
