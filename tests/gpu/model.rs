//! A model's forward pass on every adapter without the 253 MB download: the fuzz seed
//! `fuzz/seeds/model/tiny-gemma3.gguf` (tools/make-model-seed.py: one block, two query heads
//! over one key head, a sliding window of 8, f32 weights) and its grouped-query sibling
//! `tiny-gemma3-gqa.gguf` (ten query heads over two key heads) through the GPU forward, against
//! the exact CPU reference; then the first file with a tensor's type changed, refused before any
//! GPU work. gemma-3-270m itself is judged in tests/gemma/.

use super::{open, selectors};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{GpuOptions, Profile};
use ninfer_wgpu::llm::judge::{agreement, forward_limit, relative_l2};
use ninfer_wgpu::llm::kernels::{attention_shares, position_shares, CPU_WG, LLM_WG};
use ninfer_wgpu::llm::{
    Architecture, DispatchKind, ForwardOptions, GpuForward, Keep, ModelConfig, Reference, Tokenizer,
};
use ninfer_wgpu::native::block_on;

const SEED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/model/tiny-gemma3.gguf");
/// Groups of five query heads per key head: the attention kernel's four-head quads, a full one
/// and a remainder, over more than one key head.
const GQA_SEED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/model/tiny-gemma3-gqa.gguf");

/// Logits within this relative L2 distance of the exact reference's: A32's bound for one product
/// (docs/judging.md#a32-profile), here over the whole forward, where f32 rounding is all that
/// separates the two.
const RELATIVE_L2: f64 = 1e-5;

/// Steps of 3 columns over 20 tokens: steps start mid-window, the window of 8 is crossed, and
/// the last step's logits are checked a token at a time through the KV cache too.
#[test]
fn a_tiny_gemma3_runs_as_its_exact_reference_on_every_adapter() {
    runs_as_its_exact_reference(SEED, |c| shaped(c, (1, 2, 1, Some(8))), 1, 20);
}

/// The same over 560 tokens with a global block too: past the attention kernel's 512-position
/// chunk, so its online softmax rescales what one chunk summed when the next comes.
#[test]
fn a_tiny_gemma3_with_groups_of_five_heads_runs_as_its_exact_reference_on_every_adapter() {
    runs_as_its_exact_reference(GQA_SEED, |c| shaped(c, (2, 10, 2, Some(8))), 18, 513);
}

/// (blocks, heads, KV heads, window), and the first block local: the window applies.
fn shaped(config: &ModelConfig, shape: (usize, usize, usize, Option<usize>)) {
    assert_eq!((config.blocks, config.heads, config.kv_heads, config.sliding_window), shape);
    assert!(config.local[0], "the first block is local: the window applies");
}

/// A tiny model of every other architecture (`tools/make-model-seed.py --arch`: llama with
/// adjacent RoPE pairs, frequency factors, linear scaling and its own head; qwen2 with biases;
/// qwen3 with q/k norms; gemma; gemma2 with sandwich norms, a window and both soft-caps), the
/// same way; tests/gemma/archs.rs runs the same files through llama.cpp.
#[test]
fn every_architecture_runs_as_its_exact_reference_on_every_adapter() {
    for arch in Architecture::ALL.into_iter().filter(|&a| a != Architecture::Gemma3) {
        let seed = format!("{}/fuzz/seeds/model/tiny-{arch}.gguf", env!("CARGO_MANIFEST_DIR"));
        let file = GgufFile::from_bytes(std::fs::read(&seed).unwrap()).unwrap();
        let config = ModelConfig::from_gguf(&file).unwrap();
        assert_eq!(config.architecture, arch);
        eprintln!("{arch}:");
        runs_as_its_exact_reference(&seed, |_| {}, 1, 20);
    }
}

/// `seed`'s logits over `repeats` copies of a short text (at least `tokens` tokens), step by
/// step and token by token, against the reference's; `expect` checks the configuration first.
fn runs_as_its_exact_reference(seed: &str, expect: impl Fn(&ModelConfig), repeats: usize, tokens: usize) {
    let file = GgufFile::from_bytes(std::fs::read(seed).unwrap()).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    expect(&config);
    let text = "hello the world, a hello é 東京 the end".repeat(repeats);
    let ids = Tokenizer::from_gguf(&file).unwrap().encode(&text, false).unwrap();
    assert!(ids.len() >= tokens, "{} tokens", ids.len());
    let exact: Vec<f32> = Reference::load(&file, &config).unwrap().logits(&ids).unwrap().concat();
    let options = ForwardOptions { batch: 3, ..Default::default() };
    for selector in selectors() {
        let Some(gpu) = open(&selector, GpuOptions::default()) else { continue };
        let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &options)).unwrap();
        let ours = block_on(forward.forward(&ids, Keep::All)).unwrap();
        let a = agreement(&exact, &ours, config.vocab);
        assert!(a.mean_kld <= forward_limit(Profile::A32) && a.top1 == 1.0, "{selector}: {a:?}");
        // This model's small random weights give nearly flat distributions, where a KL
        // divergence hides much: the logits themselves must be the reference's to f32 rounding.
        let l2 = relative_l2(&exact, &ours);
        assert!(l2 <= RELATIVE_L2, "{selector}: logits' relative L2 distance {l2:.2e}");
        eprintln!("{selector}: relative L2 {l2:.2e}, {a:?}");
        // Again, a token at a time: the KV cache carries the sequence.
        forward.reset();
        let mut last = Vec::new();
        for &id in &ids {
            last = block_on(forward.forward(&[id], Keep::Last)).unwrap();
        }
        let l2 = relative_l2(&exact[(ids.len() - 1) * config.vocab..], &last);
        assert!(l2 <= RELATIVE_L2, "{selector}, a token at a time: relative L2 {l2:.2e}");
        // Each workgroup shape of the synchronising kernels, asked for (CPU drivers default to 8
        // invocations, GPUs to 128, so one of them is the run above's): a prompt's steps and a
        // token at a time, so that CI's CPU adapters test the GPUs' shape too.
        for shape in [LLM_WG, CPU_WG] {
            let shaped = ForwardOptions { kernel_workgroup: Some(shape), ..options };
            let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &shaped)).unwrap();
            let ours = block_on(forward.forward(&ids, Keep::All)).unwrap();
            let l2 = relative_l2(&exact, &ours);
            assert!(l2 <= RELATIVE_L2, "{selector}, kernel workgroup {shape}: relative L2 {l2:.2e}");
            forward.reset();
            for &id in &ids {
                last = block_on(forward.forward(&[id], Keep::Last)).unwrap();
            }
            let l2 = relative_l2(&exact[(ids.len() - 1) * config.vocab..], &last);
            assert!(l2 <= RELATIVE_L2, "{selector}, kernel workgroup {shape}, a token at a time: {l2:.2e}");
        }
        // f32 weights have no A8 product: refused by name before anything is uploaded.
        let a8 = ForwardOptions { profile: Profile::A8, ..options };
        let err = block_on(GpuForward::load(&gpu, &file, &config, &a8)).err().unwrap().to_string();
        assert!(err.contains("tensor `blk.0.attn_q.weight`") && err.contains("matmul_a8"), "{selector}: {err}");
    }
}

/// The same file with `blk.0.attn_q.weight` typed I32 (the same 4 bytes an element): its shape
/// still fits, but no product takes integers; both forwards refuse it by name.
#[test]
fn a_weight_of_the_wrong_type_is_refused_by_name() {
    let mut bytes = std::fs::read(SEED).unwrap();
    let name = b"blk.0.attn_q.weight";
    let at = bytes.windows(name.len()).position(|w| w == name).unwrap() + name.len();
    // Tensor info: name, n_dims (u32), dims (u64 each), type (u32), offset (u64).
    let dims = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let ty = at + 4 + 8 * dims;
    assert_eq!(u32::from_le_bytes(bytes[ty..ty + 4].try_into().unwrap()), 0, "F32 before");
    bytes[ty..ty + 4].copy_from_slice(&26u32.to_le_bytes()); // ggml's I32
    let file = GgufFile::from_bytes(bytes).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let err = Reference::load(&file, &config).err().unwrap().to_string();
    assert!(err.contains("tensor `blk.0.attn_q.weight` holds integers"), "{err}");
    let Some(selector) = selectors().into_iter().next() else { return };
    let Some(gpu) = open(&selector, GpuOptions::default()) else { return };
    let err = block_on(GpuForward::load(&gpu, &file, &config, &Default::default())).err().unwrap().to_string();
    assert!(err.contains("tensor `blk.0.attn_q.weight`"), "{err}");
}

/// Heads the attention kernel cannot hold — a key or value length that is not a multiple of 4
/// (it reads them as vec4s), or one over 256 — are refused with their lengths before any upload.
#[test]
fn heads_the_attention_kernel_cannot_hold_are_refused() {
    let file = GgufFile::from_bytes(std::fs::read(SEED).unwrap()).unwrap();
    let Some(selector) = selectors().into_iter().next() else { return };
    let Some(gpu) = open(&selector, GpuOptions::default()) else { return };
    for (key, value) in [(6, 4), (4, 6), (260, 4)] {
        let mut config = ModelConfig::from_gguf(&file).unwrap();
        (config.key_length, config.value_length) = (key, value);
        let err = block_on(GpuForward::load(&gpu, &file, &config, &Default::default())).err().unwrap().to_string();
        assert!(
            err.contains(&format!("key length {key} and value length {value}")) && err.contains("multiples of 4"),
            "{err}"
        );
    }
}

/// A kernel workgroup the model's kernels cannot take (not a power of two, or past 128
/// invocations) is refused with its size before any upload.
#[test]
fn a_kernel_workgroup_the_kernels_cannot_take_is_refused() {
    let file = GgufFile::from_bytes(std::fs::read(SEED).unwrap()).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let Some(selector) = selectors().into_iter().next() else { return };
    let Some(gpu) = open(&selector, GpuOptions::default()) else { return };
    for n in [0, 3, 24, 2 * LLM_WG] {
        let options = ForwardOptions { kernel_workgroup: Some(n), ..Default::default() };
        let err = block_on(GpuForward::load(&gpu, &file, &config, &options)).err().unwrap().to_string();
        assert!(err.contains(&format!("kernel workgroup of {n} invocations")), "{err}");
    }
}

/// A profile's steps (`step_only`, examples/step_profile.rs) cover the whole step: each kind's
/// dispatches, summed, are the whole step's; none records nothing; the position stays.
#[test]
fn a_profiles_kinds_add_up_to_the_whole_step() {
    let file = GgufFile::from_bytes(std::fs::read(SEED).unwrap()).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let Some(selector) = selectors().into_iter().next() else { return };
    let Some(gpu) = open(&selector, GpuOptions::default()) else { return };
    let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &Default::default())).unwrap();
    block_on(forward.forward(&[1, 2, 3], Keep::Last)).unwrap();
    let whole = block_on(forward.step_only(4, &|_| true)).unwrap();
    let kinds: u32 = DispatchKind::ALL.iter().map(|&k| block_on(forward.step_only(4, &|x| x == k)).unwrap()).sum();
    assert_eq!(kinds, whole, "the kinds' dispatches");
    // gather, embed, 9 a block (q/k/v stacked in one product: f32), the head; and, where a CPU
    // driver splits a decode step's attention by positions (this model's one KV head makes one
    // workgroup), the dispatch that joins the shares, once a block.
    let small = if gpu.platform().device_type == "Cpu" { CPU_WG } else { LLM_WG };
    let groups = (config.kv_heads * (config.heads / config.kv_heads).div_ceil(4)) as u32;
    let joined = (position_shares(small) && attention_shares(groups, 1, 4, true) > 1) as u32;
    assert_eq!(whole, 2 + (9 + joined) * config.blocks as u32 + 1);
    assert_eq!(block_on(forward.step_only(4, &|_| false)).unwrap(), 0);
    assert_eq!(forward.position(), 3, "a profile's step does not move the position");
}
