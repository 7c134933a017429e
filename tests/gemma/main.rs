//! gemma-3-270m's own GGUF, judged against llama.cpp and against the exact CPU reference: its
//! configuration reads as llama.cpp reads it, its vocabulary encodes as llama.cpp encodes
//! (prose, code, non-ASCII, numbers, whitespace runs, turn markers), and the GPU forward's
//! logits on every adapter (`forward.rs`) and the model commands (`cli.rs`).
//!
//! The file (253 MB) is named by `NINFER_GEMMA`, else looked for where
//! `../shared/tools/fetch-gemma.sh` caches it (`~/.cache/ninfer-wgpu`); llama.cpp's side is
//! `tools/llama-logits.c`, built by `tools/llamacpp-cpu.sh` and named by `LLAMA_LOGITS`. Without
//! them these tests report a skip, except under CI (`CI=true`), where .ci/run provides both and a
//! missing one fails. The rules themselves are tested without them (`src/llm/config/tests.rs`,
//! `src/llm/tokenizer/tests.rs`, `src/llm/judge.rs`).

mod cli;
mod forward;

use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::Gemma3Config;
use ninfer_wgpu_testkit::TempDir;
use std::path::{Path, PathBuf};

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The model file, or `None` (a skip; under CI with `NINFER_GEMMA` set, a failure).
fn model() -> Option<PathBuf> {
    let named = std::env::var_os("NINFER_GEMMA").map(PathBuf::from);
    let path = named.clone().or_else(|| {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ninfer-wgpu/gemma-3-270m-q4_k_m.gguf"))
    })?;
    assert!(!(ci() && named.is_some() && !path.exists()), "CI=true and NINFER_GEMMA names a missing file");
    path.exists().then_some(path)
}

/// llama.cpp's side (tools/llama-logits.c), or `None` (a skip; under CI with `LLAMA_LOGITS`
/// set, a failure).
fn llama_logits() -> Option<PathBuf> {
    let named = std::env::var_os("LLAMA_LOGITS").map(PathBuf::from);
    let path = named.clone().or_else(|| {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ninfer-wgpu/llamacpp-cpu/llama-logits"))
    })?;
    assert!(!(ci() && named.is_some() && !path.exists()), "CI=true and LLAMA_LOGITS names a missing file");
    path.exists().then_some(path)
}

/// Runs the llama.cpp driver: `mode` on `input`, its output file's bytes.
fn llama(tool: &Path, mode: &str, model: &Path, input: &Path) -> Vec<u8> {
    let out = input.with_extension(format!("{mode}.out"));
    let status = std::process::Command::new(tool)
        .args([mode.as_ref(), model.as_os_str(), input.as_os_str(), out.as_os_str()])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "llama-logits {mode} failed");
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).ok();
    bytes
}

/// Little-endian i32 words as ids.
fn ids_of(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32).collect()
}

#[test]
fn gemma_270m_configuration_reads_from_its_own_file() {
    let Some(path) = model() else {
        eprintln!(
            "skipped: gemma-3-270m-q4_k_m.gguf not found (set NINFER_GEMMA or run ../shared/tools/fetch-gemma.sh)"
        );
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let c = Gemma3Config::from_gguf(&file).unwrap();
    assert_eq!((c.blocks, c.width, c.feed_forward, c.heads, c.kv_heads), (18, 640, 2048, 4, 1));
    assert_eq!((c.key_length, c.value_length, c.context_length, c.vocab), (256, 256, 32768, 262144));
    assert_eq!((c.rope_base_global, c.rope_base_local, c.sliding_window), (1e6, 1e4, Some(512)));
    assert_eq!((0..c.blocks).filter(|&b| !c.local[b]).collect::<Vec<_>>(), [5, 11, 17], "every sixth block global");
    assert_eq!(c.rms_epsilon, 1e-6);
    assert_eq!(c.final_logit_softcap, None);
    // Tied: no output matrix of its own; the embedding table is the head.
    assert!(file.info("output.weight").is_none());
    assert_eq!(c.tensors().len(), 2 + 13 * 18);
}

/// Texts of every kind the issue names: prose, source code, non-ASCII, numbers, whitespace runs.
const TEXTS: [&str; 7] = [
    "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times.",
    "fn main() {\n    let x: Vec<u32> = (0..10).map(|i| i * 2).collect();\n    println!(\"{x:?}\");\n}\n",
    "Café, naïve, Ærøskøbing; 東京は日本の首都です。 Привет, мир! 🙂🚀 ünïcödé",
    "Numbers: 3.14159, 2,718,281; 1e-6 and 0x7fc0dead; 12345678901234567890.",
    "  leading spaces,\ttabs\t\tand\n\n\nnewlines   trailing   ",
    "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "",
];

#[test]
fn gemma_270m_encodes_as_llama_cpp_does() {
    let (Some(path), Some(tool)) = (model(), llama_logits()) else {
        eprintln!("skipped: needs gemma-3-270m-q4_k_m.gguf and tools/llama-logits (LLAMA_LOGITS)");
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let tokenizer = ninfer_wgpu::llm::Tokenizer::from_gguf(&file).unwrap();
    let dir = TempDir::new("gemma-tokenize");
    for (i, text) in TEXTS.iter().enumerate() {
        let f = dir.join(&format!("{i}.txt"));
        std::fs::write(&f, text).unwrap();
        // Both ways special-token text is read: parsed, and plain (the default).
        for special in [true, false] {
            let want = ids_of(&llama(&tool, if special { "tokenize-special" } else { "tokenize" }, &path, &f));
            let got = tokenizer.encode(text, special).unwrap();
            assert_eq!(got, want, "text {i}, special parsed: {special}: {text:?}");
            if !special {
                assert_eq!(tokenizer.decode(&got).unwrap(), *text, "text {i} decodes back");
            }
        }
    }
}

#[test]
fn the_tokenize_command_writes_the_librarys_ids_as_little_endian_i32() {
    let Some(path) = model() else {
        eprintln!("skipped: gemma-3-270m-q4_k_m.gguf not found");
        return;
    };
    let dir = TempDir::new("gemma-tokenize-cli");
    let (text, ids_file, bad) = (dir.join("t.txt"), dir.join("t.i32"), dir.join("bad.txt"));
    std::fs::write(&text, TEXTS[5]).unwrap();
    std::fs::write(&bad, b"caf\xe9").unwrap();
    let cli = env!("CARGO_BIN_EXE_ninfer-wgpu");
    let run = |args: &[&std::ffi::OsStr]| std::process::Command::new(cli).arg("tokenize").args(args).output().unwrap();
    let file = GgufFile::open(&path).unwrap();
    let tokenizer = ninfer_wgpu::llm::Tokenizer::from_gguf(&file).unwrap();
    for special in [false, true] {
        let mut args =
            vec![path.as_os_str(), "--text-file".as_ref(), text.as_os_str(), "-o".as_ref(), ids_file.as_os_str()];
        if special {
            args.push("--special".as_ref());
        }
        let out = run(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let words: Vec<u32> = std::fs::read(&ids_file)
            .unwrap()
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32)
            .collect();
        assert_eq!(words, tokenizer.encode(TEXTS[5], special).unwrap(), "--special: {special}");
    }
    let out = run(&[path.as_os_str(), "--text-file".as_ref(), bad.as_os_str()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not UTF-8") && err.contains("byte 3"), "{err}");
}
