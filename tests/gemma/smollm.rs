//! SmolLM2-135M-Instruct's own GGUF (architecture `llama`; a 49152-token byte-level BPE
//! vocabulary, `tokenizer.ggml.model` = `gpt2`, pre-tokenizer `smollm`): its vocabulary encodes
//! as llama.cpp encodes, with and without special-token parsing, on the gemma texts and hostile
//! ones (runs of whitespace, long numbers, CJK, emoji, ChatML markers). The file is named by
//! `NINFER_SMOLLM2`, else looked for where `tools/fetch-model.sh smollm2` caches it; without
//! it (or llama.cpp's side) the test reports a skip, except under CI with the variable set.

use super::forward::{open, prefix_only, selectors, CODE, PERPLEXITY_EXACT, PREFIX, PROSE};
use super::{ci, encodes_as_llama_cpp, llama, llama_logits, TEXTS};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::Profile;
use ninfer_wgpu::llm::judge::{self, agreement, forward_limit};
use ninfer_wgpu::llm::{Architecture, ForwardOptions, GpuForward, Keep, ModelConfig, Reference, Tokenizer};
use ninfer_wgpu::native::block_on;
use std::path::{Path, PathBuf};

pub(super) fn smollm2() -> Option<PathBuf> {
    let named = std::env::var_os("NINFER_SMOLLM2").map(PathBuf::from);
    let path = named.clone().or_else(|| {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ninfer-wgpu/SmolLM2-135M-Instruct.Q4_1.gguf"))
    })?;
    assert!(!(ci() && named.is_some() && !path.exists()), "CI=true and NINFER_SMOLLM2 names a missing file");
    path.exists().then_some(path)
}

/// What byte-level BPE's pre-tokenizer and merges meet beyond the gemma texts.
const HOSTILE: [&str; 9] = [
    "say Xyzzy 123456 12 7 Xyzzy! 1234567",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
    "a  b   c    d\n \n  \t\t x\r\n\r\ny",
    "2024-12-06T05:00:00Z 1234567890 ١٢٣ ⅷ ½ 3.0e+10",
    "don't I'll we've they're she'd IT'S 'tis ''quoted''",
    "日本語のテキスト、中文文本，한국어 텍스트",
    "👩‍👩‍👧‍👦 🏳️‍🌈 e\u{301} ﬁ ẞ",
    "\u{0}\u{1}\u{7f}\u{85}\u{a0}\u{ad}\u{feff}\u{2028}",
    "    def f(x):\n        return x  # comment\n",
];

#[test]
fn smollm2_encodes_as_llama_cpp_does() {
    let (Some(path), Some(tool)) = (smollm2(), llama_logits()) else {
        eprintln!("skipped: needs SmolLM2-135M-Instruct.Q4_1.gguf and tools/llama-logits (LLAMA_LOGITS)");
        return;
    };
    let vocab = Tokenizer::from_gguf(&GgufFile::open(&path).unwrap()).unwrap().vocab_size();
    assert_eq!(vocab, 49152);
    let texts: Vec<&str> = TEXTS.iter().chain(&HOSTILE).copied().collect();
    encodes_as_llama_cpp(&path, &tool, &texts);
}

/// The other byte-level pre-tokenizers, on SmolLM2's tokens and merges: a tiny `llama` model
/// carrying them under `llama-bpe`, `qwen2`, `default` and `gpt-2` (`tools/make-bpe-seed.py`, which adds tokens for
/// grouped digits and one no merge makes), tokenized by llama.cpp with each pre-tokenizer's
/// rules and defaults (Llama 3's adds BOS, groups digits by three and takes a word that is a
/// token whole).
#[test]
fn the_other_pre_tokenizers_encode_as_llama_cpp_does() {
    let (Some(path), Some(tool)) = (smollm2(), llama_logits()) else {
        eprintln!("skipped: needs SmolLM2-135M-Instruct.Q4_1.gguf and tools/llama-logits (LLAMA_LOGITS)");
        return;
    };
    let dir = ninfer_wgpu_testkit::TempDir::new("bpe-seeds");
    let texts: Vec<&str> = TEXTS.iter().chain(&HOSTILE).copied().collect();
    for pre in ["llama-bpe", "qwen2", "default", "gpt-2"] {
        let seed = dir.join(&format!("{pre}.gguf"));
        make_seed(&path, pre, &seed, None);
        encodes_as_llama_cpp(&seed, &tool, &texts);
    }
}

/// `tools/make-bpe-seed.py`: a tiny llama model with `source`'s vocabulary under `pre`, and
/// `template` as its chat template where given.
fn make_seed(source: &Path, pre: &str, out: &Path, template: Option<&str>) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/make-bpe-seed.py");
    let mut command = std::process::Command::new("python3");
    command.arg(script).arg(source).arg(pre).arg(out).args(template);
    let made = command.output().unwrap();
    assert!(made.status.success(), "{pre}: {}", String::from_utf8_lossy(&made.stderr));
}

/// The chat templates `--chat` applies, as llama.cpp's `llama_chat_apply_template` writes them
/// (one user message, with and without a system one, the assistant's turn opened): SmolLM2's
/// own (ChatML), and gemma's, Llama 3's and Mistral's v1, v3, v3-tekken and v7 as recognised from
/// a template string, each in a tiny model's `tokenizer.chat_template`.
#[test]
fn chat_templates_apply_as_llama_cpp_does() {
    let (Some(path), Some(tool)) = (smollm2(), llama_logits()) else {
        eprintln!("skipped: needs SmolLM2-135M-Instruct.Q4_1.gguf and tools/llama-logits (LLAMA_LOGITS)");
        return;
    };
    let dir = ninfer_wgpu_testkit::TempDir::new("chat-templates");
    let templates = [
        None,
        Some("{{ '<start_of_turn>' + role }}"),
        Some("{{ '<|start_header_id|>' + role + '<|end_header_id|>' }}"),
        Some("{{ ' [INST] ' + system_message }}"),
        Some("[AVAILABLE_TOOLS] [INST]"),
        Some("[AVAILABLE_TOOLS]\"[INST]\""),
        Some("[SYSTEM_PROMPT] [INST]"),
    ];
    let messages = [(None, " Hello there "), (Some(" Be brief.\n"), "What is 2+2?\n")];
    for (i, template) in templates.into_iter().enumerate() {
        let model = match template {
            None => path.clone(),
            Some(_) => {
                let seed = dir.join(&format!("{i}.gguf"));
                make_seed(&path, "smollm", &seed, template);
                seed
            }
        };
        let file = GgufFile::open(&model).unwrap();
        let ours = Tokenizer::from_gguf(&file).unwrap().chat_template().unwrap();
        for (j, (system, user)) in messages.iter().enumerate() {
            let input = dir.join(&format!("{i}-{j}.txt"));
            let bytes = match system {
                Some(s) => [s.as_bytes(), b"\0", user.as_bytes()].concat(),
                None => user.as_bytes().to_vec(),
            };
            std::fs::write(&input, bytes).unwrap();
            let want = String::from_utf8(llama(&tool, "chat", &model, &input)).unwrap();
            assert_eq!(ours.apply(*system, user), want, "template {i} ({ours:?}), messages {j}");
        }
    }
}

/// SmolLM2's real weights (architecture `llama`, Q4_1 and Q8_0) on every adapter, against the
/// exact reference and llama.cpp's CPU backend: A32 within its limit of the reference (A8
/// within its own), no further from llama.cpp than the reference itself is, perplexity within
/// 0.1 % of the reference's; greedy tokens that are the reference's best or within 0.1 logit.
#[test]
fn smollm2_logits_match_the_exact_reference_and_llama_cpp() {
    let (Some(path), Some(tool)) = (smollm2(), llama_logits()) else {
        eprintln!("skipped: needs SmolLM2-135M-Instruct.Q4_1.gguf and tools/llama-logits (LLAMA_LOGITS)");
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    assert_eq!((config.architecture, config.blocks, config.vocab), (Architecture::Llama, 30, 49152));
    let tokenizer = Tokenizer::from_gguf(&file).unwrap();
    let reference = Reference::load(&file, &config).unwrap();
    let dir = ninfer_wgpu_testkit::TempDir::new("smollm2-forward");
    let vocab = config.vocab;
    let mut failures = Vec::new();
    println!("| text (tokens) | adapter | profile | KLD vs exact | KLD llama.cpp ‖ ours (‖ exact) | top-1 vs llama.cpp | ppl ours / llama.cpp / exact |");
    for (name, text) in [("prose", PROSE), ("code", CODE)] {
        let ids = tokenizer.encode(text, false).unwrap();
        let ids_file = dir.join(&format!("{name}.i32"));
        std::fs::write(&ids_file, ids.iter().flat_map(|&i| (i as i32).to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let theirs: Vec<f32> = bytemuck::pod_collect_to_vec(&llama(&tool, "logits", &path, &ids_file));
        let exact: Vec<f32> = reference.logits(&ids).unwrap().concat();
        for selector in selectors() {
            let Some(gpu) = open(&selector) else { continue };
            let n = if prefix_only(&selector) { PREFIX } else { ids.len() };
            let (ids, theirs, exact) = (&ids[..n], &theirs[..n * vocab], &exact[..n * vocab]);
            let llama_to_exact = agreement(theirs, exact, vocab);
            for profile in [Profile::A32, Profile::A8] {
                let options = ForwardOptions { profile, batch: 24, ..Default::default() };
                let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &options)).unwrap();
                let ours = block_on(forward.forward(ids, Keep::All)).unwrap();
                let to_exact = agreement(exact, &ours, vocab);
                let from_llama = agreement(theirs, &ours, vocab);
                let ppl = |l: &[f32]| judge::perplexity(l, ids, vocab);
                let (p_ours, p_llama, p_exact) = (ppl(&ours), ppl(theirs), ppl(exact));
                println!(
                    "| {name} ({n}) | {selector} | {} | {:.2e} | {:.2e} ({:.2e}) | {:.3} | {p_ours:.3} / {p_llama:.3} / {p_exact:.3} |",
                    profile.name(),
                    to_exact.mean_kld,
                    from_llama.mean_kld,
                    llama_to_exact.mean_kld,
                    from_llama.top1
                );
                let what = format!("{name} on {selector}, {}", profile.name());
                if to_exact.mean_kld.is_nan() || to_exact.mean_kld > forward_limit(profile) {
                    failures.push(format!("{what}: KLD from the exact reference {:.2e}", to_exact.mean_kld));
                }
                if profile != Profile::A32 {
                    continue;
                }
                // Ours is the exact reference up to f32 rounding: as far from llama.cpp as it is.
                if from_llama.mean_kld.is_nan() || from_llama.mean_kld > llama_to_exact.mean_kld * 1.05 + 1e-7 {
                    failures.push(format!(
                        "{what}: KLD from llama.cpp {:.2e}, the exact reference's {:.2e}",
                        from_llama.mean_kld, llama_to_exact.mean_kld
                    ));
                }
                let gap = (p_ours / p_exact - 1.0).abs();
                if gap.is_nan() || gap > PERPLEXITY_EXACT {
                    failures.push(format!("{what}: perplexity {p_ours:.3} vs the exact reference's {p_exact:.3}"));
                }
            }
        }
    }
    // Greedy generation through the KV cache on the first adapter: each token the reference's
    // best, or within 0.1 logit of it where two are that close.
    let Some(gpu) = selectors().first().and_then(|s| open(s)) else { return };
    let mut ids = tokenizer.encode("The capital of France is", false).unwrap();
    let start = ids.len();
    let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &Default::default())).unwrap();
    let mut logits = block_on(forward.forward(&ids, Keep::Last)).unwrap();
    for _ in 0..12 {
        let next = judge::argmax(&logits) as u32;
        ids.push(next);
        logits = block_on(forward.forward(&[next], Keep::Last)).unwrap();
    }
    let exact = reference.logits(&ids).unwrap();
    for (i, &token) in ids.iter().enumerate().skip(start) {
        let at = &exact[i - 1];
        let gap = at[judge::argmax(at)] - at[token as usize];
        if gap > 0.1 {
            failures.push(format!("greedy token {} ({token}) is {gap} below the reference's best", i - start));
        }
    }
    println!("greedy: {:?}", tokenizer.decode(&ids[start..]).unwrap());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
