//! gemma-3-270m's own GGUF: its configuration reads as llama.cpp reads it, and its vocabulary
//! encodes as llama.cpp's own `llama-tokenize` encodes (prose, code, non-ASCII, numbers,
//! whitespace runs, turn markers, with and without special parsing). The file (253 MB) is named
//! by `NINFER_GEMMA`, else looked for where `../shared/tools/fetch-gemma.sh` caches it
//! (`~/.cache/ninfer-wgpu`). CI fetches neither the file nor llama.cpp yet, so there these tests
//! report a skip; the rules themselves are tested without them (`src/llm/config/tests.rs`,
//! `src/llm/tokenizer/tests.rs`).

use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::Gemma3Config;
use std::path::PathBuf;

fn model() -> Option<PathBuf> {
    let path = std::env::var_os("NINFER_GEMMA").map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ninfer-wgpu/gemma-3-270m-q4_k_m.gguf"))
    })?;
    path.exists().then_some(path)
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

/// llama.cpp's own tokenizer (`llama-tokenize`, built in the peer tree by
/// `cmake --build build --target llama-tokenize`), named by `LLAMA_TOKENIZE`.
fn llama_tokenize() -> Option<PathBuf> {
    let path = std::env::var_os("LLAMA_TOKENIZE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/llamacpp-peer/build/bin/llama-tokenize"));
    path.exists().then_some(path)
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
    let (Some(path), Some(tool)) = (model(), llama_tokenize()) else {
        eprintln!("skipped: needs gemma-3-270m-q4_k_m.gguf and llama.cpp's llama-tokenize (LLAMA_TOKENIZE)");
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let tokenizer = ninfer_wgpu::llm::Tokenizer::from_gguf(&file).unwrap();
    let dir = std::env::temp_dir().join(format!("ninfer-tokenize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, text) in TEXTS.iter().enumerate() {
        let f = dir.join(format!("{i}.txt"));
        std::fs::write(&f, text).unwrap();
        // Both ways special-token text is read: parsed (llama-tokenize's default) and plain.
        for special in [true, false] {
            let mut args: Vec<&std::ffi::OsStr> =
                vec!["-m".as_ref(), path.as_os_str(), "-f".as_ref(), f.as_os_str(), "--ids".as_ref()];
            args.extend(["--log-disable", "--no-escape"].map(std::ffi::OsStr::new));
            if !special {
                args.push("--no-parse-special".as_ref());
            }
            let out = std::process::Command::new(&tool).args(&args).output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout
                .lines()
                .rev()
                .find(|l| l.starts_with('['))
                .unwrap_or_else(|| panic!("no ids from llama-tokenize: {stdout}"));
            let want: Vec<u32> = line
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().parse().unwrap())
                .collect();
            let got = tokenizer.encode(text, special).unwrap();
            assert_eq!(got, want, "text {i}, special parsed: {special}: {text:?}");
            if !special {
                assert_eq!(tokenizer.decode(&got).unwrap(), *text, "text {i} decodes back");
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_tokenize_command_writes_the_librarys_ids_as_little_endian_i32() {
    let Some(path) = model() else {
        eprintln!("skipped: gemma-3-270m-q4_k_m.gguf not found");
        return;
    };
    let dir = std::env::temp_dir().join(format!("ninfer-tokenize-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    std::fs::remove_dir_all(&dir).ok();
}

/// llama.cpp's `llama-completion` (peer tree: `cmake --build build --target llama-completion`),
/// named by `LLAMA_COMPLETION`.
fn llama_completion() -> Option<PathBuf> {
    let path = std::env::var_os("LLAMA_COMPLETION")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/llamacpp-peer/build/bin/llama-completion"));
    path.exists().then_some(path)
}

/// The CPU reference forward's greedy continuation equals llama.cpp's CPU backend's, token for
/// token, on a prose and a code prompt.
#[test]
fn the_reference_forward_continues_greedily_as_llama_cpp_does() {
    let (Some(path), Some(tool)) = (model(), llama_completion()) else {
        eprintln!("skipped: needs gemma-3-270m-q4_k_m.gguf and llama.cpp's llama-completion (LLAMA_COMPLETION)");
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let config = Gemma3Config::from_gguf(&file).unwrap();
    let tokenizer = ninfer_wgpu::llm::Tokenizer::from_gguf(&file).unwrap();
    let reference = ninfer_wgpu::llm::Reference::load(&file, &config).unwrap();
    let err = reference.logits(&[2, 262144]).unwrap_err().to_string();
    assert!(err.contains("token id 262144 is past the vocabulary of 262144"), "{err}");
    for (prompt, n) in [("The capital of France is", 4), ("fn fibonacci(n: u64) -> u64 {", 4)] {
        let out = std::process::Command::new(&tool)
            .args(["-m".as_ref(), path.as_os_str()])
            .args(["-p", prompt, "-n", &n.to_string(), "--temp", "0", "-ngl", "0", "-no-cnv", "--no-escape"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let theirs = text.strip_prefix(prompt).unwrap_or_else(|| panic!("llama-completion printed {text:?}"));
        let mut tokens = tokenizer.encode(prompt, false).unwrap();
        let start = tokens.len();
        for _ in 0..n {
            let logits = reference.logits(&tokens).unwrap();
            let last = logits.last().unwrap();
            tokens.push((0..last.len()).max_by(|&a, &b| last[a].total_cmp(&last[b])).unwrap() as u32);
        }
        let ours = tokenizer.decode(&tokens[start..]).unwrap();
        assert_eq!(ours, theirs.trim_end_matches('\n'), "prompt {prompt:?}");
    }
}
