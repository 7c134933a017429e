//! A tiny random-weight model of every architecture this runs (`fuzz/seeds/model/tiny-*.gguf`,
//! written by `tools/make-model-seed.py --arch`), run by llama.cpp's own forward
//! (`tools/llama-logits.c`) and by the exact CPU reference: the same file, the same ids, logits
//! that agree to llama.cpp's rounding (its KV cache holds f16), so each architecture's graph —
//! norm placement, biases, q/k norms, RoPE pairing, base, scaling and frequency factors, the
//! activation, windows, soft-caps, the embedding's scale, the head — is llama.cpp's. The GPU
//! forward meets the same reference on every adapter in tests/gpu/model.rs.

use super::{ids_of, llama, llama_logits};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::judge::{agreement, relative_l2};
use ninfer_wgpu::llm::{Architecture, ModelConfig, Reference, Tokenizer};
use ninfer_wgpu_testkit::TempDir;
use std::path::PathBuf;

/// llama.cpp's logits within this relative L2 distance of the exact reference's. Its f16 KV
/// cache and f32 arithmetic put it near 1e-3 on these models; a graph that differs in any fact
/// (a pairing, a scale, a missing bias or cap) is off by order one.
const LLAMA_CPP_L2: f64 = 1e-2;

/// The seed of one architecture.
pub fn seed(arch: Architecture) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("fuzz/seeds/model/tiny-{}.gguf", arch.name()))
}

#[test]
fn every_architecture_computes_as_llama_cpp_does() {
    let Some(tool) = llama_logits() else {
        eprintln!("skipped: needs tools/llama-logits (LLAMA_LOGITS)");
        return;
    };
    let dir = TempDir::new("arch-seeds");
    let text = "hello the world, a hello é 東京 the end";
    println!("| architecture | tokens | llama.cpp ‖ exact: relative L2 | mean KLD | top-1 |");
    let mut failures = Vec::new();
    for arch in Architecture::ALL {
        let path = seed(arch);
        let file = GgufFile::open(&path).unwrap();
        let config = ModelConfig::from_gguf(&file).unwrap();
        assert_eq!(config.architecture, arch);
        let ids = Tokenizer::from_gguf(&file).unwrap().encode(text, false).unwrap();
        let text_file = dir.join(&format!("{arch}.txt"));
        std::fs::write(&text_file, text).unwrap();
        assert_eq!(ids, ids_of(&llama(&tool, "tokenize", &path, &text_file)), "{arch}: ids differ from llama.cpp's");
        let ids_file = dir.join(&format!("{arch}.i32"));
        std::fs::write(&ids_file, ids.iter().flat_map(|&i| (i as i32).to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let theirs: Vec<f32> = bytemuck::pod_collect_to_vec(&llama(&tool, "logits", &path, &ids_file));
        let exact: Vec<f32> = Reference::load(&file, &config).unwrap().logits(&ids).unwrap().concat();
        assert_eq!(theirs.len(), exact.len(), "{arch}");
        let l2 = relative_l2(&exact, &theirs);
        let a = agreement(&exact, &theirs, config.vocab);
        println!("| {arch} | {} | {l2:.2e} | {:.2e} | {:.3} |", ids.len(), a.mean_kld, a.top1);
        // A NaN distance fails too.
        if l2.is_nan() || l2 > LLAMA_CPP_L2 {
            failures.push(format!("{arch}: llama.cpp's logits are {l2:.2e} (relative L2) from the exact reference's"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
