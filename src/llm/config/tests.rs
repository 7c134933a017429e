//! The configuration from tables of metadata: gemma-3-270m's own values, then each way a file
//! can be wrong.

use super::*;
use crate::llm::testing::Table;

/// gemma-3-270m's metadata (as its GGUF holds it: no local RoPE base, no pattern) with a
/// vocabulary of 300 tokens, and every tensor the configuration implies.
fn gemma_270m() -> Table {
    let mut table = Table::default();
    let mut put = |k: &str, v: Value| {
        table.put(k, v);
    };
    put("general.architecture", Value::String("gemma3".into()));
    put("gemma3.context_length", Value::U32(32768));
    put("gemma3.embedding_length", Value::U32(640));
    put("gemma3.block_count", Value::U32(18));
    put("gemma3.feed_forward_length", Value::U32(2048));
    put("gemma3.attention.head_count", Value::U32(4));
    put("gemma3.attention.head_count_kv", Value::U32(1));
    put("gemma3.attention.key_length", Value::U32(256));
    put("gemma3.attention.value_length", Value::U32(256));
    put("gemma3.attention.layer_norm_rms_epsilon", Value::F32(1e-6));
    put("gemma3.rope.freq_base", Value::F32(1e6));
    put("gemma3.attention.sliding_window", Value::U32(512));
    put("tokenizer.ggml.tokens", Value::Array(Array::String((0..300).map(|i| format!("t{i}")).collect())));
    let config = ModelConfig {
        architecture: Architecture::Gemma3,
        norms: Norms::Sandwich,
        qk_norm: true,
        qkv_bias: [false; 3],
        pairing: Pairing::Halves,
        activation: Activation::GeluTanh,
        rope_scale_global: 1.0,
        rope_scale_local: 1.0,
        rope_factors: false,
        attention_softcap: None,
        separate_head: false,
        blocks: 18,
        width: 640,
        feed_forward: 2048,
        heads: 4,
        kv_heads: 1,
        key_length: 256,
        value_length: 256,
        context_length: 32768,
        vocab: 300,
        rms_epsilon: 1e-6,
        rope_base_global: 1e6,
        rope_base_local: 1e4,
        sliding_window: Some(512),
        local: Vec::new(),
        final_logit_softcap: None,
        attention_scale: 1.0 / 16.0,
        embedding_scale: 640f32.sqrt(),
    };
    table.shapes = config.tensors().into_iter().collect();
    table
}

fn refused(t: &Table, needles: &[&str]) {
    match ModelConfig::from_source(t) {
        Err(Error::Model(m)) => assert!(needles.iter().all(|n| m.contains(n)), "`{m}` lacks {needles:?}"),
        other => panic!("expected a model error with {needles:?}, got {other:?}"),
    }
}

#[test]
fn gemma_270m_reads_with_llama_cpps_defaults_for_what_its_file_omits() {
    let c = ModelConfig::from_source(&gemma_270m()).unwrap();
    assert_eq!((c.blocks, c.width, c.feed_forward, c.heads, c.kv_heads), (18, 640, 2048, 4, 1));
    assert_eq!((c.key_length, c.value_length, c.context_length, c.vocab), (256, 256, 32768, 300));
    assert_eq!((c.rope_base_global, c.rope_base_local, c.sliding_window), (1e6, 1e4, Some(512)));
    // A pattern of 6: blocks 5, 11 and 17 global, the rest local.
    let global: Vec<usize> = (0..18).filter(|&b| !c.local[b]).collect();
    assert_eq!(global, [5, 11, 17]);
    assert_eq!(c.attention_scale, 1.0 / 16.0);
    assert_eq!(c.final_logit_softcap, None);
}

#[test]
fn a_pattern_key_and_a_missing_window_change_which_blocks_are_local() {
    let mut t = gemma_270m();
    t.values.insert("gemma3.attention.sliding_window_pattern".into(), Value::U32(3));
    let c = ModelConfig::from_source(&t).unwrap();
    assert_eq!((0..18).filter(|&b| !c.local[b]).collect::<Vec<_>>(), [2, 5, 8, 11, 14, 17]);
    let each: Vec<bool> = (0..18).map(|b| b % 2 == 0).collect();
    t.values.insert("gemma3.attention.sliding_window_pattern".into(), Value::Array(Array::Bool(each.clone())));
    assert_eq!(ModelConfig::from_source(&t).unwrap().local, each);
    t.values.remove("gemma3.attention.sliding_window");
    let c = ModelConfig::from_source(&t).unwrap();
    assert_eq!((c.sliding_window, c.local.iter().any(|&l| l)), (None, false), "no window: every block global");
}

#[test]
fn another_architecture_is_refused_by_name() {
    let mut t = gemma_270m();
    t.values.insert("general.architecture".into(), Value::String("llama".into()));
    t.values.insert("general.architecture".into(), Value::String("phi3".into()));
    refused(&t, &["architecture `phi3` is not supported", "llama, qwen2, qwen3, gemma, gemma2, gemma3"]);
    t.values.remove("general.architecture");
    refused(&t, &["general.architecture", "missing"]);
}

#[test]
fn a_missing_mistyped_or_out_of_range_key_is_named() {
    for (k, v, needles) in [
        ("gemma3.block_count", None, vec!["gemma3.block_count", "missing"]),
        (
            "gemma3.embedding_length",
            Some(Value::F32(640.0)),
            vec!["gemma3.embedding_length", "unsigned integer", "f32"],
        ),
        ("gemma3.attention.head_count", Some(Value::I32(-4)), vec!["gemma3.attention.head_count", "i32"]),
        ("gemma3.attention.key_length", Some(Value::U32(0)), vec!["gemma3.attention.key_length", "= 0"]),
        ("gemma3.context_length", Some(Value::U64(1 << 40)), vec!["gemma3.context_length", "1048576"]),
        ("gemma3.attention.layer_norm_rms_epsilon", None, vec!["layer_norm_rms_epsilon", "missing"]),
        (
            "gemma3.attention.layer_norm_rms_epsilon",
            Some(Value::F32(f32::NAN)),
            vec!["layer_norm_rms_epsilon", "positive, finite"],
        ),
        ("gemma3.rope.freq_base", Some(Value::F32(-1.0)), vec!["gemma3.rope.freq_base", "positive"]),
        ("gemma3.rope.freq_base_swa", Some(Value::String("10000".into())), vec!["freq_base_swa", "a string"]),
        ("gemma3.attention.sliding_window", Some(Value::Bool(true)), vec!["sliding_window", "bool"]),
        (
            "gemma3.attention.sliding_window_pattern",
            Some(Value::Array(Array::Bool(vec![true; 17]))),
            vec!["18 bools", "17"],
        ),
        ("gemma3.attention.sliding_window_pattern", Some(Value::U32(19)), vec!["sliding_window_pattern", "at most 18"]),
        ("tokenizer.ggml.tokens", Some(Value::Array(Array::U32(vec![1, 2]))), vec!["tokenizer.ggml.tokens", "strings"]),
        ("tokenizer.ggml.tokens", None, vec!["tokenizer.ggml.tokens", "missing"]),
        (
            "tokenizer.ggml.tokens",
            Some(Value::Array(Array::String(vec![String::new(); crate::llm::tokenizer::MAX_VOCAB + 1]))),
            vec!["tokenizer.ggml.tokens", "holds 2097153 tokens, over the 2097152"],
        ),
    ] {
        let mut t = gemma_270m();
        match v {
            Some(v) => t.values.insert(k.to_string(), v),
            None => t.values.remove(k),
        };
        refused(&t, &needles);
    }
}

#[test]
fn heads_that_do_not_divide_are_refused_naming_both() {
    let mut t = gemma_270m();
    t.values.insert("gemma3.attention.head_count_kv".into(), Value::U32(3));
    refused(&t, &["head_count` = 4", "head_count_kv` = 3", "multiple"]);
}

#[test]
fn a_missing_tensor_or_one_of_another_shape_is_named() {
    let mut t = gemma_270m();
    t.shapes.remove("blk.7.ffn_down.weight");
    refused(&t, &["blk.7.ffn_down.weight", "missing"]);
    let mut t = gemma_270m();
    t.shapes.insert("blk.0.attn_k.weight".into(), vec![512, 640]);
    refused(&t, &["blk.0.attn_k.weight", "[512, 640]", "[256, 640]"]);
    let mut t = gemma_270m();
    t.shapes.insert("output.weight".into(), vec![299, 640]);
    refused(&t, &["output.weight", "[299, 640]"]);
    // The vocabulary is the tokenizer's: an embedding table of another length disagrees.
    let mut t = gemma_270m();
    t.values.insert("tokenizer.ggml.tokens".into(), Value::Array(Array::String(vec!["a".into(); 301])));
    refused(&t, &["token_embd.weight", "[300, 640]", "[301, 640]"]);
}

#[test]
fn tensors_the_model_would_not_use_are_refused() {
    // A block_count of 17 over a file holding 18 blocks of tensors: block 17's are unused.
    let mut t = gemma_270m();
    t.values.insert("gemma3.block_count".into(), Value::U32(17));
    refused(&t, &["blk.17.", "not used", "17 blocks", "gemma3.block_count", "nor are 12 more"]);
    // A stray tensor of any name.
    let mut t = gemma_270m();
    t.shapes.insert("rope_freqs.weight".into(), vec![128]);
    refused(&t, &["`rope_freqs.weight` is not used"]);
    // The separate head is optional: present (at its shape) or not, the file reads.
    let mut t = gemma_270m();
    t.shapes.insert("output.weight".into(), vec![300, 640]);
    assert!(ModelConfig::from_source(&t).is_ok());
}

#[test]
fn a_sliding_window_of_zero_is_refused() {
    let mut t = gemma_270m();
    t.values.insert("gemma3.attention.sliding_window".into(), Value::U32(0));
    refused(&t, &["gemma3.attention.sliding_window` = 0", "no positions"]);
}

/// A model of `arch` with every tensor its keys imply (SmolLM2-135M's shape for llama), the
/// keys llama.cpp's converter writes and nothing optional.
fn model(arch: &str, blocks: u32, width: u32, heads: u32, kv: u32) -> Table {
    let mut t = Table::default();
    let key = |k: &str| format!("{arch}.{k}");
    t.put("general.architecture", Value::String(arch.into()));
    for (k, v) in [
        ("context_length", 8192),
        ("embedding_length", width),
        ("block_count", blocks),
        ("feed_forward_length", 1536),
        ("attention.head_count", heads),
        ("attention.head_count_kv", kv),
    ] {
        t.put(&key(k), Value::U32(v));
    }
    t.put(&key("attention.layer_norm_rms_epsilon"), Value::F32(1e-5));
    t.put("tokenizer.ggml.tokens", Value::Array(Array::String((0..300).map(|i| format!("t{i}")).collect())));
    with_tensors(t)
}

/// `t` with the tensors its keys imply (and any `extra` named in `t.shapes` kept).
fn with_tensors(mut t: Table) -> Table {
    let config = ModelConfig::read(&t).unwrap();
    t.shapes.extend(config.tensors());
    t
}

#[test]
fn every_architecture_reads_its_facts() {
    let c = ModelConfig::from_source(&model("llama", 30, 576, 9, 3)).unwrap();
    assert_eq!((c.architecture, c.key_length, c.value_length), (Architecture::Llama, 64, 64));
    assert_eq!((c.norms, c.qk_norm, c.pairing, c.activation), (Norms::Pre, false, Pairing::Adjacent, Activation::Silu));
    assert_eq!((c.embedding_scale, c.attention_scale, c.separate_head), (1.0, 0.125, false));
    assert_eq!((c.sliding_window, c.attention_softcap, c.final_logit_softcap), (None, None, None));
    assert_eq!((c.rope_base_global, c.rope_scale_global, c.qkv_bias), (1e4, 1.0, [false; 3]));
    let c = ModelConfig::from_source(&model("qwen3", 28, 1024, 16, 8)).unwrap();
    assert_eq!((c.qk_norm, c.pairing), (true, Pairing::Halves));
    let c = ModelConfig::from_source(&model("gemma", 18, 2048, 8, 1)).unwrap();
    assert_eq!((c.activation, c.embedding_scale), (Activation::GeluTanh, 2048f32.sqrt()));
    // gemma2: a window of 4096 on every other block and soft-caps of 50 and 30 unless the file
    // says; the 27B's 46 blocks scale queries by 1/sqrt(width / heads) (4608 / 32 = 144).
    let c = ModelConfig::from_source(&model("gemma2", 46, 4608, 32, 16)).unwrap();
    assert_eq!(
        (c.norms, c.sliding_window, c.local[..3].to_vec()),
        (Norms::Sandwich, Some(4096), vec![true, false, true])
    );
    assert_eq!((c.attention_softcap, c.final_logit_softcap, c.attention_scale), (Some(50.0), Some(30.0), 1.0 / 12.0));
    assert_eq!(c.rope_base_local, c.rope_base_global, "gemma2's local layers keep the global base");
    // gemma3's linear RoPE scaling applies to its global layers only.
    let mut t = gemma_270m();
    t.put("gemma3.rope.scaling.type", Value::String("linear".into()));
    t.put("gemma3.rope.scaling.factor", Value::F32(8.0));
    let c = ModelConfig::from_source(&t).unwrap();
    assert_eq!((c.rope_scale_global, c.rope_scale_local), (0.125, 1.0));
    t.put("gemma3.rope.scaling.type", Value::String("none".into()));
    assert_eq!(ModelConfig::from_source(&t).unwrap().rope_scale_global, 1.0);
}

#[test]
fn biases_frequency_factors_and_heads_come_from_the_tensors() {
    // qwen2's q, k and v biases, in every block.
    let mut t = model("qwen2", 2, 896, 14, 2);
    for b in 0..2 {
        t.shapes.insert(format!("blk.{b}.attn_q.bias"), vec![896]);
        t.shapes.insert(format!("blk.{b}.attn_k.bias"), vec![128]);
        t.shapes.insert(format!("blk.{b}.attn_v.bias"), vec![128]);
    }
    assert_eq!(ModelConfig::from_source(&t).unwrap().qkv_bias, [true; 3]);
    // A bias of the wrong length, and one in the first block only.
    let mut wrong = t.clone();
    wrong.shapes.insert("blk.1.attn_k.bias".into(), vec![127]);
    refused(&wrong, &["blk.1.attn_k.bias", "[127]", "[128]"]);
    let mut first_only = t.clone();
    first_only.shapes.remove("blk.1.attn_v.bias");
    refused(&first_only, &["blk.1.attn_v.bias", "missing"]);
    let mut later_only = model("qwen2", 2, 896, 14, 2);
    later_only.shapes.insert("blk.1.attn_q.bias".into(), vec![896]);
    refused(&later_only, &["blk.1.attn_q.bias", "not used by a qwen2"]);
    // An output bias and an FFN bias have no place in this forward; nor rope_freqs outside llama.
    for (arch, extra) in
        [("qwen2", "blk.0.attn_output.bias"), ("llama", "blk.0.ffn_down.bias"), ("qwen2", ROPE_FACTORS)]
    {
        let mut t = model(arch, 2, 896, 14, 2);
        t.shapes.insert(extra.into(), vec![896]);
        refused(&t, &[extra, "not used"]);
    }
    // llama's frequency factors, one per pair; a separate head is read where the file has one.
    let mut t = model("llama", 2, 576, 9, 3);
    t.shapes.insert(ROPE_FACTORS.into(), vec![32]);
    t.shapes.insert("output.weight".into(), vec![300, 576]);
    let c = ModelConfig::from_source(&t).unwrap();
    assert!(c.rope_factors && c.separate_head);
    t.shapes.insert(ROPE_FACTORS.into(), vec![64]);
    refused(&t, &[ROPE_FACTORS, "[64]", "[32]"]);
    // gemma and gemma2 always tie the head (llama.cpp's loader): a separate one is refused.
    let mut t = model("gemma2", 2, 576, 9, 3);
    t.shapes.insert("output.weight".into(), vec![300, 576]);
    refused(&t, &["output.weight", "not used by a gemma2"]);
}

#[test]
fn hostile_keys_of_every_architecture_are_refused_by_name() {
    for arch in ["llama", "qwen2", "qwen3", "gemma", "gemma2"] {
        let key = |k: &str| format!("{arch}.{k}");
        for (k, v, needles) in [
            ("block_count", Some(Value::U32(0)), vec!["block_count` = 0"]),
            ("block_count", Some(Value::U64(1 << 40)), vec!["block_count", "1048576"]),
            ("attention.head_count_kv", Some(Value::U32(5)), vec!["not a multiple", "head_count_kv` = 5"]),
            ("attention.head_count", Some(Value::U32(7)), vec!["key_length` is missing", "576", "7"]),
            ("attention.layer_norm_rms_epsilon", Some(Value::F32(0.0)), vec!["layer_norm_rms_epsilon", "positive"]),
            ("attention.layer_norm_rms_epsilon", None, vec!["layer_norm_rms_epsilon", "missing"]),
            ("rope.freq_base", Some(Value::F32(f32::INFINITY)), vec!["rope.freq_base", "positive, finite"]),
            ("rope.dimension_count", Some(Value::U32(32)), vec!["rope.dimension_count` = 32", "whole heads"]),
            ("rope.scaling.type", Some(Value::String("yarn".into())), vec!["`yarn` is not supported", "linear"]),
            ("rope.scaling.factor", Some(Value::F32(-2.0)), vec!["rope.scaling.factor", "positive"]),
            ("attention.key_length", Some(Value::U32(63)), vec!["key head of 63", "even"]),
        ] {
            let mut t = model(arch, 2, 576, 9, 3);
            match v {
                Some(v) => t.values.insert(key(k), v),
                None => t.values.remove(&key(k)),
            };
            refused(&t, &needles.iter().map(|n| n.as_ref()).collect::<Vec<&str>>());
        }
    }
    let mut t = model("gemma2", 2, 576, 9, 3);
    t.put("gemma2.attn_logit_softcapping", Value::F32(f32::NAN));
    refused(&t, &["gemma2.attn_logit_softcapping", "positive, finite"]);
}
