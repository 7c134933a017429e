//! gemma-3-270m's own GGUF, judged against llama.cpp and against the exact CPU reference: its
//! configuration reads as llama.cpp reads it, its vocabulary encodes as llama.cpp encodes
//! (prose, code, non-ASCII, numbers, whitespace runs, turn markers), and the GPU forward's
//! logits on every adapter (`forward.rs`) and the model commands (`cli.rs`); and SmolLM2's
//! byte-level BPE vocabulary against llama.cpp's (`smollm.rs`).
//!
//! The file (253 MB) is named by `NINFER_GEMMA`, else looked for where
//! `tools/fetch-model.sh gemma-3-270m` caches it (`~/.cache/ninfer-wgpu`); llama.cpp's side is
//! `tools/llama-logits.c`, built by `tools/llamacpp-cpu.sh` and named by `LLAMA_LOGITS`. Without
//! them these tests report a skip, except under CI (`CI=true`), where .ci/run provides both and a
//! missing one fails. The rules themselves are tested without them (`src/llm/config/tests.rs`,
//! `src/llm/tokenizer/tests.rs`, `src/llm/judge.rs`).

mod archs;
mod cli;
mod forward;
mod smollm;
mod stream;

use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::ModelConfig;
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

/// Runs the llama.cpp driver: `mode` on `input`, its output file's bytes. A failure of the
/// reference itself fails the test as that ([`run_llama`]), never as a parse error further on.
fn llama(tool: &Path, mode: &str, model: &Path, input: &Path) -> Vec<u8> {
    run_llama(tool, mode, model, input).unwrap_or_else(|e| panic!("{e}"))
}

/// The driver's output file's bytes, or what went wrong: an exit status, a signal, no output,
/// with the driver's last words.
fn run_llama(tool: &Path, mode: &str, model: &Path, input: &Path) -> Result<Vec<u8>, String> {
    let out = input.with_extension(format!("{mode}.out"));
    std::fs::remove_file(&out).ok();
    let run = std::process::Command::new(tool)
        .args([mode.as_ref(), model.as_os_str(), input.as_os_str(), out.as_os_str()])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("llama.cpp's reference {} could not start: {e}", tool.display()))?;
    let bytes = std::fs::read(&out).ok();
    std::fs::remove_file(&out).ok();
    match reference_failure(&run.status, bytes.as_deref()) {
        None => Ok(bytes.unwrap_or_default()),
        Some(why) => {
            let stderr = String::from_utf8_lossy(&run.stderr);
            let mut tail: Vec<&str> = stderr.lines().rev().take(8).collect();
            tail.reverse();
            Err(format!(
                "llama.cpp's reference (llama-logits {mode} on {}) {why}; its stderr:\n{}",
                input.display(),
                tail.join("\n")
            ))
        }
    }
}

/// What went wrong with a run of the reference, or `None`: its exit status, the signal that
/// ended it (named), or an exit 0 that left no output file.
fn reference_failure(status: &std::process::ExitStatus, output: Option<&[u8]>) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = match signal {
            4 => " (SIGILL)",
            6 => " (SIGABRT)",
            7 => " (SIGBUS)",
            8 => " (SIGFPE)",
            9 => " (SIGKILL)",
            11 => " (SIGSEGV)",
            _ => "",
        };
        let core = if status.core_dumped() { ", core dumped" } else { "" };
        return Some(format!("was killed by signal {signal}{name}{core}"));
    }
    if !status.success() {
        return Some(format!("exited with status {}", status.code().unwrap_or(-1)));
    }
    output.is_none().then(|| "exited 0 but wrote no output file".to_string())
}

#[test]
fn a_failing_reference_is_reported_as_its_own_failure() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;
    let segv = reference_failure(&ExitStatus::from_raw(11), Some(b"")).unwrap();
    assert_eq!(segv, "was killed by signal 11 (SIGSEGV)");
    let ill = reference_failure(&ExitStatus::from_raw(4 | 0x80), None).unwrap();
    assert_eq!(ill, "was killed by signal 4 (SIGILL), core dumped");
    let exit = reference_failure(&ExitStatus::from_raw(1 << 8), Some(b"")).unwrap();
    assert_eq!(exit, "exited with status 1");
    let silent = reference_failure(&ExitStatus::from_raw(0), None).unwrap();
    assert_eq!(silent, "exited 0 but wrote no output file");
    assert_eq!(reference_failure(&ExitStatus::from_raw(0), Some(b"")), None);
    // And through `run_llama` itself, with a stand-in driver that dies by a signal.
    let dir = TempDir::new("gemma-reference-failure");
    let tool = dir.join("crash.sh");
    std::fs::write(&tool, "#!/bin/sh\necho 'ggml_backend_amx_mul_mat: about to fail' >&2\nkill -SEGV $$\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let input = dir.join("ids.i32");
    std::fs::write(&input, [0u8; 4]).unwrap();
    let message = run_llama(&tool, "logits", &input, &input).unwrap_err();
    assert!(message.contains("killed by signal 11 (SIGSEGV)") && message.contains("about to fail"), "{message}");
}

/// Little-endian i32 words as ids.
fn ids_of(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32).collect()
}

#[test]
fn gemma_270m_configuration_reads_from_its_own_file() {
    let Some(path) = model() else {
        eprintln!(
            "skipped: gemma-3-270m-q4_k_m.gguf not found (set NINFER_GEMMA or run tools/fetch-model.sh gemma-3-270m)"
        );
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let c = ModelConfig::from_gguf(&file).unwrap();
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
    encodes_as_llama_cpp(&path, &tool, &TEXTS);
}

/// Every text encodes to llama.cpp's ids with `path`'s vocabulary, special-token text parsed and
/// plain (the default), and decodes back.
fn encodes_as_llama_cpp(path: &Path, tool: &Path, texts: &[&str]) {
    let file = GgufFile::open(path).unwrap();
    let tokenizer = ninfer_wgpu::llm::Tokenizer::from_gguf(&file).unwrap();
    let dir = TempDir::new("tokenize");
    for (i, text) in texts.iter().enumerate() {
        let f = dir.join(&format!("{i}.txt"));
        std::fs::write(&f, text).unwrap();
        for special in [true, false] {
            let want = ids_of(&llama(tool, if special { "tokenize-special" } else { "tokenize" }, path, &f));
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
