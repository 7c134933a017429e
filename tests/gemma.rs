//! gemma-3-270m's own GGUF: its configuration reads as llama.cpp reads it. The file (253 MB) is
//! named by `NINFER_GEMMA`, else looked for where `../shared/tools/fetch-gemma.sh` caches it
//! (`~/.cache/ninfer-wgpu`); CI does not fetch it yet, so there the test reports a skip (the
//! configuration's rules are tested without it in `src/llm/config/tests.rs`).

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
