//! A gemma3 model's configuration from its GGUF metadata (`gemma3.*` keys) and tensor shapes,
//! validated before anything is uploaded: a missing, mistyped or inconsistent key is an error
//! naming it, and another architecture is refused.
//!
//! Where a key is absent, the value is the one llama.cpp's gemma3 loader assumes (facts, from
//! its gemma3 model loader and hyperparameter defaults): local layers' RoPE base 10000, a
//! sliding-window pattern of 6 (every sixth layer global, the rest local), no final logit
//! soft-capping. gemma-3-270m's file carries neither the local base nor the pattern.

use crate::error::{Error, Result};
use crate::gguf::reader::{Array, GgufFile, Value};

/// The architecture this reads.
pub const ARCHITECTURE: &str = "gemma3";
/// The largest context a configuration may declare: 2^20 positions (gemma3's largest models
/// declare 131072). A KV cache is sized by the context a run asks for, not by this.
pub const MAX_CONTEXT: usize = 1 << 20;
/// The largest width, head length, feed-forward width, head count or block count a
/// configuration may declare: far above every gemma3 (5376, 256, 21504, 32, 62), low enough
/// that no product of two overflows.
pub const MAX_DIMENSION: usize = 1 << 20;
/// llama.cpp's default sliding-window pattern for gemma3 when the file has none.
const DEFAULT_SWA_PATTERN: usize = 6;
/// llama.cpp's default RoPE base of sliding-window (local) layers.
const DEFAULT_LOCAL_ROPE_BASE: f32 = 10_000.0;
/// llama.cpp's default RoPE base when `rope.freq_base` is absent.
const DEFAULT_ROPE_BASE: f32 = 10_000.0;

/// Where a model's metadata and tensor shapes come from (a GGUF file; a table in tests).
pub trait Source {
    fn value(&self, key: &str) -> Option<&Value>;
    /// A tensor's logical shape ([rows, values per row] for a matrix), if it exists.
    fn shape(&self, name: &str) -> Option<Vec<usize>>;
    /// Every tensor's name, in the file's order.
    fn names(&self) -> Vec<&str>;
}

impl Source for GgufFile {
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

/// A gemma3 model's shape and constants.
#[derive(Debug, Clone, PartialEq)]
pub struct Gemma3Config {
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
    /// RoPE base of the global (full-attention) layers.
    pub rope_base_global: f32,
    /// RoPE base of the local (sliding-window) layers.
    pub rope_base_local: f32,
    /// The sliding window of local layers, in positions; `None`: every layer is global.
    pub sliding_window: Option<usize>,
    /// Per block: whether it attends through the sliding window (local) or to every position.
    pub local: Vec<bool>,
    /// Logits soft-capped to ±cap by `cap · tanh(z / cap)`, where the file says so.
    pub final_logit_softcap: Option<f32>,
    /// The factor queries are scaled by before attention: 1 / sqrt(key_length).
    pub attention_scale: f32,
    /// The factor the embedding rows are scaled by: sqrt(width).
    pub embedding_scale: f32,
}

fn model_error(detail: String) -> Error {
    Error::Model(detail)
}

fn key(name: &str) -> String {
    format!("{ARCHITECTURE}.{name}")
}

/// A required unsigned integer key, in 1..=max.
fn count<S: Source + ?Sized>(src: &S, name: &str, max: usize) -> Result<usize> {
    let k = key(name);
    let v = src.value(&k).ok_or_else(|| model_error(format!("metadata key `{k}` is missing")))?;
    let n = integer(v).ok_or_else(|| model_error(format!("`{k}` must be an unsigned integer, found {}", kind(v))))?;
    if n == 0 || n > max as u64 {
        return Err(model_error(format!("`{k}` = {n} is outside 1..={max}")));
    }
    Ok(n as usize)
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

impl Gemma3Config {
    /// Reads and checks the configuration of a gemma3 GGUF.
    pub fn from_gguf(file: &GgufFile) -> Result<Gemma3Config> {
        Gemma3Config::from_source(file)
    }

    /// Reads and checks the configuration from any [`Source`].
    pub fn from_source<S: Source + ?Sized>(src: &S) -> Result<Gemma3Config> {
        match src.value("general.architecture") {
            Some(Value::String(a)) if a == ARCHITECTURE => {}
            Some(Value::String(a)) => {
                return Err(model_error(format!(
                    "architecture `{}` is not supported: this reads {ARCHITECTURE}",
                    crate::error::clip(a)
                )))
            }
            Some(other) => {
                return Err(model_error(format!("`general.architecture` must be a string, found {}", kind(other))))
            }
            None => return Err(model_error("metadata key `general.architecture` is missing".into())),
        }
        let blocks = count(src, "block_count", MAX_DIMENSION)?;
        let width = count(src, "embedding_length", MAX_DIMENSION)?;
        let feed_forward = count(src, "feed_forward_length", MAX_DIMENSION)?;
        let heads = count(src, "attention.head_count", MAX_DIMENSION)?;
        let kv_heads = count(src, "attention.head_count_kv", MAX_DIMENSION)?;
        let key_length = count(src, "attention.key_length", MAX_DIMENSION)?;
        let value_length = count(src, "attention.value_length", MAX_DIMENSION)?;
        let context_length = count(src, "context_length", MAX_CONTEXT)?;
        if heads % kv_heads != 0 {
            return Err(model_error(format!(
                "`{}` = {heads} is not a multiple of `{}` = {kv_heads}",
                key("attention.head_count"),
                key("attention.head_count_kv")
            )));
        }
        let eps_key = key("attention.layer_norm_rms_epsilon");
        let rms_epsilon =
            positive(src, &eps_key)?.ok_or_else(|| model_error(format!("metadata key `{eps_key}` is missing")))?;
        let rope_base_global = positive(src, &key("rope.freq_base"))?.unwrap_or(DEFAULT_ROPE_BASE);
        let rope_base_local = positive(src, &key("rope.freq_base_swa"))?.unwrap_or(DEFAULT_LOCAL_ROPE_BASE);
        let final_logit_softcap = positive(src, &key("final_logit_softcapping"))?;

        // The sliding window, and which blocks use it: a per-block array, a period, or 6.
        let window_key = key("attention.sliding_window");
        let sliding_window = match src.value(&window_key) {
            None => None,
            Some(v) => match integer(v) {
                // llama.cpp has no "0 means none" rule; the key's absence is how a file says so.
                Some(0) => {
                    return Err(model_error(format!(
                        "`{window_key}` = 0 is a window of no positions (a file without a window leaves \
                         the key out)"
                    )))
                }
                Some(n) if n <= MAX_CONTEXT as u64 => Some(n as usize),
                Some(n) => return Err(model_error(format!("`{window_key}` = {n} is over {MAX_CONTEXT}"))),
                None => {
                    return Err(model_error(format!("`{window_key}` must be an unsigned integer, found {}", kind(v))))
                }
            },
        };
        let pattern_key = key("attention.sliding_window_pattern");
        let local = match (sliding_window, src.value(&pattern_key)) {
            (None, _) => vec![false; blocks],
            (Some(_), None) => pattern_layers(blocks, DEFAULT_SWA_PATTERN),
            (Some(_), Some(Value::Array(Array::Bool(each)))) if each.len() == blocks => each.clone(),
            (Some(_), Some(Value::Array(a))) => {
                return Err(model_error(format!(
                    "`{pattern_key}` must be {blocks} bools, one per block; found an array of {}",
                    a.len()
                )))
            }
            (Some(_), Some(v)) => match integer(v) {
                Some(n) if n <= blocks as u64 => pattern_layers(blocks, n as usize),
                _ => {
                    return Err(model_error(format!(
                        "`{pattern_key}` must be a period of at most {blocks} blocks or {blocks} bools"
                    )))
                }
            },
        };

        let vocab = match src.value("tokenizer.ggml.tokens") {
            Some(Value::Array(Array::String(tokens))) if tokens.len() > super::tokenizer::MAX_VOCAB => {
                return Err(model_error(format!(
                    "`tokenizer.ggml.tokens` holds {} tokens, over the {} this reads",
                    tokens.len(),
                    super::tokenizer::MAX_VOCAB
                )))
            }
            Some(Value::Array(Array::String(tokens))) if !tokens.is_empty() => tokens.len(),
            Some(Value::Array(a)) => {
                return Err(model_error(format!("`tokenizer.ggml.tokens` must be a non-empty array of strings (found {} elements of another type or none)", a.len())))
            }
            Some(other) => {
                return Err(model_error(format!("`tokenizer.ggml.tokens` must be an array of strings, found {}", kind(other))))
            }
            None => return Err(model_error("metadata key `tokenizer.ggml.tokens` is missing".into())),
        };
        let config = Gemma3Config {
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
            rope_base_global,
            rope_base_local,
            sliding_window,
            local,
            final_logit_softcap,
            attention_scale: 1.0 / (key_length as f32).sqrt(),
            embedding_scale: (width as f32).sqrt(),
        };
        config.check_tensors(src)?;
        Ok(config)
    }

    /// Every tensor the forward pass reads, with the shape the configuration implies; the
    /// output head is `output.weight` where present, else the embedding table (tied).
    pub fn tensors(&self) -> Vec<(String, Vec<usize>)> {
        let (w, q, kv) = (self.width, self.heads * self.key_length, self.kv_heads * self.key_length);
        let mut t =
            vec![("token_embd.weight".to_string(), vec![self.vocab, w]), ("output_norm.weight".into(), vec![w])];
        for b in 0..self.blocks {
            let name = |s: &str| format!("blk.{b}.{s}.weight");
            t.extend([
                (name("attn_norm"), vec![w]),
                (name("attn_q"), vec![q, w]),
                (name("attn_k"), vec![kv, w]),
                (name("attn_v"), vec![self.kv_heads * self.value_length, w]),
                (name("attn_output"), vec![w, self.heads * self.value_length]),
                (name("attn_q_norm"), vec![self.key_length]),
                (name("attn_k_norm"), vec![self.key_length]),
                (name("post_attention_norm"), vec![w]),
                (name("ffn_norm"), vec![w]),
                (name("ffn_gate"), vec![self.feed_forward, w]),
                (name("ffn_up"), vec![self.feed_forward, w]),
                (name("ffn_down"), vec![w, self.feed_forward]),
                (name("post_ffw_norm"), vec![w]),
            ]);
        }
        t
    }

    /// Tensors a gemma3 file may hold that the forward does not require: the separate output
    /// head (else the head is tied to the embedding table).
    pub const OPTIONAL_TENSORS: [&str; 1] = ["output.weight"];

    /// Refuses a missing tensor, one whose shape the configuration does not imply, and one the
    /// model would not use (a `block_count` lower than the file's blocks, say: llama.cpp refuses
    /// such a file too) unless it is optional.
    fn check_tensors<S: Source + ?Sized>(&self, src: &S) -> Result<()> {
        let expected = self.tensors();
        let known: std::collections::HashSet<&str> =
            expected.iter().map(|(n, _)| n.as_str()).chain(Self::OPTIONAL_TENSORS).collect();
        let names = src.names();
        let unused: Vec<&str> = names.iter().copied().filter(|n| !known.contains(n)).collect();
        if let Some(first) = unused.first() {
            return Err(model_error(format!(
                "tensor `{}` is not used by a gemma3 of {} blocks (`{}`){}",
                crate::error::clip(first),
                self.blocks,
                key("block_count"),
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
        if let Some(got) = src.shape("output.weight").filter(|s| *s != [self.vocab, self.width]) {
            return Err(model_error(format!(
                "tensor `output.weight` has shape {got:?}; the configuration implies {:?}",
                [self.vocab, self.width]
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
