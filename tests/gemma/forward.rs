//! The GPU forward pass of gemma-3-270m on every adapter, judged against the exact CPU reference
//! forward and against llama.cpp's CPU backend (docs/judging.md#a-models-logits).

use super::{ci, ids_of, llama, llama_logits, model};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{self, Gpu, GpuOptions, Profile};
use ninfer_wgpu::llm::judge::{self, agreement, forward_limit};
use ninfer_wgpu::llm::{ForwardOptions, GpuForward, Keep, ModelConfig, Reference, Tokenizer};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu_testkit::TempDir;

/// A paragraph of English prose (84 tokens).
pub(super) const PROSE: &str =
    "The lighthouse keeper climbed the narrow stairs every evening at dusk, carrying a lantern and \
a small notebook in which he recorded the weather, the ships that passed, and anything unusual he noticed on the \
water. Over forty years he filled more than two hundred notebooks, and after his death the village library put \
them on display, where visitors still read about storms, whales, and the long quiet winters of the northern coast.\n";

/// Python source (112 tokens).
pub(super) const CODE: &str =
    "def merge_sorted(a, b):\n    \"\"\"Merge two sorted lists into one sorted list.\"\"\"\n    \
i, j, out = 0, 0, []\n    while i < len(a) and j < len(b):\n        if a[i] <= b[j]:\n            \
out.append(a[i]); i += 1\n        else:\n            out.append(b[j]); j += 1\n    return out + a[i:] + b[j:]\n";

/// A text, with llama.cpp's own backends measured against each other on it (lavapipe,
/// 2026-12-05, the CPU backend as tools/llamacpp-cpu.sh builds and runs it; docs/judging.md#a-models-logits): its Vulkan backend's mean KL divergence from
/// its CPU backend over the whole text and over the first [`PREFIX`] positions, and how far
/// apart their perplexities are.
struct Text {
    name: &'static str,
    text: &'static str,
    vulkan_kld: f64,
    vulkan_kld_prefix: f64,
    vulkan_perplexity_gap: f64,
}

/// Ours must be no further from llama.cpp's CPU backend than its Vulkan backend is, and our
/// perplexity within 1.5 % of its CPU backend's, or within its two backends' own gap where that
/// is wider (on the prose: CPU 30.707, Vulkan 29.775, the exact reference 29.778).
const TEXTS: [Text; 2] = [
    Text { name: "prose", text: PROSE, vulkan_kld: 5.89e-3, vulkan_kld_prefix: 6.93e-3, vulkan_perplexity_gap: 0.0303 },
    Text { name: "code", text: CODE, vulkan_kld: 4.34e-3, vulkan_kld_prefix: 6.16e-3, vulkan_perplexity_gap: 0.0070 },
];

/// The positions an adapter named in `NINFER_GEMMA_PREFIX` runs (SwiftShader takes about 2.5 s
/// per token of this model).
pub(super) const PREFIX: usize = 12;

/// The perplexity tolerance the issue set: llama.cpp's backends differ by 1.4 % on a 108-token
/// text.
pub(super) const PERPLEXITY_TOLERANCE: f64 = 0.015;

/// Ours against the exact reference's perplexity: A32 is the exact forward up to f32 rounding.
pub(super) const PERPLEXITY_EXACT: f64 = 1e-3;

/// Adapters that run only the first [`PREFIX`] tokens of each text (comma-separated selectors).
pub(super) fn prefix_only(selector: &str) -> bool {
    std::env::var("NINFER_GEMMA_PREFIX").is_ok_and(|l| l.split(',').any(|s| s.trim() == selector))
}

/// The adapters to run on: `NINFER_WGPU_EXPECT`, else one per backend found.
pub(super) fn selectors() -> Vec<String> {
    if let Ok(list) = std::env::var("NINFER_WGPU_EXPECT") {
        return list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    }
    let mut backends: Vec<String> =
        block_on(gpu::adapters()).into_iter().map(|a| a.platform.backend.to_lowercase()).collect();
    backends.dedup();
    backends
}

pub(super) fn open(selector: &str) -> Option<Gpu> {
    match block_on(Gpu::open(&GpuOptions { adapter: Some(selector.into()), ..Default::default() })) {
        Ok(gpu) => Some(gpu),
        Err(e) if ci() => panic!("CI=true and adapter `{selector}` is missing: {e}"),
        Err(e) => {
            eprintln!("skipping adapter `{selector}`: {e}");
            None
        }
    }
}

/// The model file and the first adapter, or `None` after saying why (a failure under CI).
fn model_and_gpu() -> Option<(std::path::PathBuf, Gpu)> {
    let Some(path) = model() else {
        eprintln!("skipped: gemma-3-270m-q4_k_m.gguf not found");
        return None;
    };
    let gpu = selectors().first().and_then(|s| open(s));
    assert!(gpu.is_some() || !ci(), "CI=true but no GPU adapter");
    Some((path, gpu?))
}

fn gpu_logits(gpu: &Gpu, file: &GgufFile, config: &ModelConfig, options: ForwardOptions, ids: &[u32]) -> Vec<f32> {
    let mut forward = block_on(GpuForward::load(gpu, file, config, &options)).unwrap();
    block_on(forward.forward(ids, Keep::All)).unwrap()
}

/// Per text: our ids equal llama.cpp's; then on every adapter, A32 logits within the exact
/// reference's limit and within llama.cpp's own Vulkan-to-CPU distance of llama.cpp's CPU
/// backend, perplexity within 1.5 % of llama.cpp's (or its backends' own gap on the text) and
/// within 0.1 % of the exact reference's; A8 within its limit of the reference. Prompts go
/// through in steps of 24 columns, so steps start past position 0. Adapters named in
/// `NINFER_GEMMA_PREFIX` run the first [`PREFIX`] tokens, against the bars of those positions.
#[test]
fn gpu_logits_match_the_exact_reference_and_llama_cpp_on_every_adapter() {
    let (Some(path), Some(tool)) = (model(), llama_logits()) else {
        eprintln!("skipped: needs gemma-3-270m-q4_k_m.gguf and tools/llama-logits (LLAMA_LOGITS)");
        return;
    };
    // The reference's kernels are ggml's x86-64-v3 baseline on every machine (tools/llamacpp-cpu.sh):
    // a driver built for this CPU's AVX-512 or AMX would make its logits depend on the machine.
    let run = std::process::Command::new(&tool).arg("system-info").output().unwrap();
    assert!(
        run.status.success(),
        "{} system-info: {} (rebuild it with tools/llamacpp-cpu.sh)",
        tool.display(),
        run.status
    );
    let info = String::from_utf8_lossy(&run.stdout).trim().to_string();
    println!("llama.cpp's reference: {info}");
    assert!(!info.contains("AMX") && !info.contains("AVX512"), "the reference was built for this CPU: {info}");
    let file = GgufFile::open(&path).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let tokenizer = Tokenizer::from_gguf(&file).unwrap();
    let reference = Reference::load(&file, &config).unwrap();
    let dir = TempDir::new("gemma-forward");
    let vocab = config.vocab;
    let mut texts = Vec::new();
    for Text { name, text, .. } in TEXTS {
        let f = dir.join(&format!("{name}.txt"));
        std::fs::write(&f, text).unwrap();
        let ids = tokenizer.encode(text, false).unwrap();
        assert_eq!(ids, ids_of(&llama(&tool, "tokenize", &path, &f)), "{name}: ids differ from llama.cpp's");
        let ids_file = dir.join(&format!("{name}.i32"));
        std::fs::write(&ids_file, ids.iter().flat_map(|&i| (i as i32).to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let theirs: Vec<f32> = bytemuck::pod_collect_to_vec(&llama(&tool, "logits", &path, &ids_file));
        assert_eq!(theirs.len(), ids.len() * vocab);
        let exact: Vec<f32> = reference.logits(&ids).unwrap().concat();
        let a = agreement(&exact, &theirs, vocab);
        println!("{name}: {} tokens; llama.cpp CPU from the exact reference: mean KLD {:.2e}", ids.len(), a.mean_kld);
        texts.push((ids, theirs, exact));
    }
    let options = ForwardOptions { batch: 24, ..Default::default() };
    println!("| text (tokens) | adapter | profile | KLD vs exact | KLD llama.cpp ‖ ours | top-1 vs llama.cpp | ppl ours / llama.cpp / exact |");
    let mut failures = Vec::new();
    for selector in selectors() {
        let Some(gpu) = open(&selector) else { continue };
        let prefix = prefix_only(&selector);
        for profile in [Profile::A32, Profile::A8] {
            let mut forward =
                block_on(GpuForward::load(&gpu, &file, &config, &ForwardOptions { profile, ..options })).unwrap();
            for (t, (ids, theirs, exact)) in TEXTS.iter().zip(&texts) {
                let n = if prefix { PREFIX } else { ids.len() };
                let (ids, theirs, exact) = (&ids[..n], &theirs[..n * vocab], &exact[..n * vocab]);
                forward.reset();
                let ours = block_on(forward.forward(ids, Keep::All)).unwrap();
                let to_exact = agreement(exact, &ours, vocab);
                let from_llama = agreement(theirs, &ours, vocab);
                let ppl = |l: &[f32]| judge::perplexity(l, ids, vocab);
                let (p_ours, p_llama, p_exact) = (ppl(&ours), ppl(theirs), ppl(exact));
                println!(
                    "| {} ({n}) | {selector} | {} | {:.2e} | {:.2e} | {:.3} | {p_ours:.3} / {p_llama:.3} / {p_exact:.3} |",
                    t.name,
                    profile.name(),
                    to_exact.mean_kld,
                    from_llama.mean_kld,
                    from_llama.top1
                );
                let what = format!("{} on {selector}, {}", t.name, profile.name());
                if to_exact.mean_kld > forward_limit(profile) {
                    failures.push(format!("{what}: KLD from the exact reference {:.2e}", to_exact.mean_kld));
                }
                if profile != Profile::A32 {
                    continue;
                }
                // llama.cpp's bars are for the default profile (A32).
                let bar = if prefix { t.vulkan_kld_prefix } else { t.vulkan_kld };
                if from_llama.mean_kld > bar {
                    failures.push(format!("{what}: KLD from llama.cpp {:.2e} > {bar:.2e}", from_llama.mean_kld));
                }
                let tolerance = PERPLEXITY_TOLERANCE.max(t.vulkan_perplexity_gap);
                if !prefix && (p_ours / p_llama - 1.0).abs() > tolerance {
                    failures.push(format!("{what}: perplexity {p_ours:.3} vs llama.cpp's {p_llama:.3}"));
                }
                if (p_ours / p_exact - 1.0).abs() > PERPLEXITY_EXACT {
                    failures.push(format!("{what}: perplexity {p_ours:.3} vs the exact reference's {p_exact:.3}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Greedy generation through the KV cache, a token per submission: every token is the exact
/// reference's argmax or within 0.1 logit of it, and the last step's logits equal those of the
/// whole sequence run at once.
#[test]
fn greedy_generation_follows_the_exact_reference() {
    let Some((path, gpu)) = model_and_gpu() else { return };
    let file = GgufFile::open(&path).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let tokenizer = Tokenizer::from_gguf(&file).unwrap();
    let reference = Reference::load(&file, &config).unwrap();
    for prompt in ["The capital of France is", "fn fibonacci(n: u64) -> u64 {"] {
        let mut ids = tokenizer.encode(prompt, false).unwrap();
        let start = ids.len();
        let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &Default::default())).unwrap();
        let mut logits = block_on(forward.forward(&ids, Keep::Last)).unwrap();
        for _ in 0..12 {
            let next = judge::argmax(&logits) as u32;
            ids.push(next);
            logits = block_on(forward.forward(&[next], Keep::Last)).unwrap();
        }
        assert_eq!(forward.position(), ids.len());
        let exact = reference.logits(&ids).unwrap();
        for (i, &token) in ids.iter().enumerate().skip(start) {
            let at = &exact[i - 1];
            let best = at[judge::argmax(at)];
            assert!(
                best - at[token as usize] <= 0.1,
                "{prompt:?}: token {} ({token}) is {} below the reference's best",
                i - start,
                best - at[token as usize]
            );
        }
        let whole = gpu_logits(&gpu, &file, &config, Default::default(), &ids);
        let last = &whole[(ids.len() - 1) * config.vocab..];
        let a = agreement(last, &logits, config.vocab);
        assert!(a.mean_kld < 1e-6 && a.top1 == 1.0, "{prompt:?}: a step at a time vs at once: {a:?}");
        println!("{prompt:?} → {:?}", tokenizer.decode(&ids[start..]).unwrap());
    }
}

/// The sliding window, at a width a short text crosses: with the configuration's window set to
/// 5 (local blocks see their last 5 positions), the GPU in steps of 4 columns and the reference
/// still agree, and both differ from the model's own 512-position window.
#[test]
fn a_narrow_sliding_window_is_honoured_by_the_gpu_and_the_reference() {
    let Some((path, gpu)) = model_and_gpu() else { return };
    let file = GgufFile::open(&path).unwrap();
    let mut config = ModelConfig::from_gguf(&file).unwrap();
    let ids =
        Tokenizer::from_gguf(&file).unwrap().encode("One, two, three, four, five, six, seven, eight", false).unwrap();
    let wide = gpu_logits(&gpu, &file, &config, Default::default(), &ids);
    config.sliding_window = Some(5);
    let exact: Vec<f32> = Reference::load(&file, &config).unwrap().logits(&ids).unwrap().concat();
    let narrow = gpu_logits(&gpu, &file, &config, ForwardOptions { batch: 4, ..Default::default() }, &ids);
    let a = agreement(&exact, &narrow, config.vocab);
    assert!(a.mean_kld <= forward_limit(Profile::A32), "window 5: {a:?}");
    let changed = agreement(&wide, &narrow, config.vocab);
    assert!(changed.mean_kld > 1e-3, "the window changed nothing: {changed:?}");
}

/// What a run refuses before any GPU work, clearly.
#[test]
fn bad_runs_are_refused_with_their_numbers() {
    let Some((path, gpu)) = model_and_gpu() else { return };
    let file = GgufFile::open(&path).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let options = ForwardOptions { context: 8, batch: 4, ..Default::default() };
    let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &options)).unwrap();
    let err = block_on(forward.forward(&[2, 262144], Keep::Last)).unwrap_err().to_string();
    assert!(err.contains("token id 262144 is past the vocabulary of 262144"), "{err}");
    let err = block_on(forward.forward(&[2; 9], Keep::Last)).unwrap_err().to_string();
    assert!(err.contains("9 tokens after 0 are more than the context of 8"), "{err}");
    assert_eq!(forward.position(), 0, "a refused run moves nothing");
    let too_long = ForwardOptions { context: config.context_length + 1, ..Default::default() };
    let err = block_on(GpuForward::load(&gpu, &file, &config, &too_long)).err().unwrap().to_string();
    assert!(err.contains("a context of 32769 is more than the model's 32768"), "{err}");
    let err = Reference::load(&file, &config).unwrap().logits(&[2, 262144]).unwrap_err().to_string();
    assert!(err.contains("token id 262144 is past the vocabulary of 262144"), "{err}");
}
