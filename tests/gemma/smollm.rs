//! SmolLM2-135M-Instruct's own GGUF (architecture `llama`; a 49152-token byte-level BPE
//! vocabulary, `tokenizer.ggml.model` = `gpt2`, pre-tokenizer `smollm`): its vocabulary encodes
//! as llama.cpp encodes, with and without special-token parsing, on the gemma texts and hostile
//! ones (runs of whitespace, long numbers, CJK, emoji, ChatML markers). The file is named by
//! `NINFER_SMOLLM2`, else looked for where `../shared/tools/fetch-smollm2.sh` caches it; without
//! it (or llama.cpp's side) the test reports a skip, except under CI with the variable set.

use super::{ci, encodes_as_llama_cpp, llama, llama_logits, TEXTS};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::Tokenizer;
use std::path::{Path, PathBuf};

fn smollm2() -> Option<PathBuf> {
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
