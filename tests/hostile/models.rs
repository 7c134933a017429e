//! Model files that would make the runner lie (docs/untrusted-input.md#model-files), without a
//! GPU: the hostile seeds of the `model` fuzz target (tools/make-hostile-model-seeds.py) refused
//! with their messages, and a vocabulary too large to hold refused in bounded memory.

use ninfer_wgpu::gguf::reader::{GgufFile, MAX_STRINGS};
use ninfer_wgpu::llm::{weights, ModelConfig};

const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/model/");

fn seed(name: &str) -> GgufFile {
    GgufFile::from_bytes(std::fs::read(format!("{SEEDS}{name}")).unwrap()).unwrap()
}

fn config_error(name: &str) -> String {
    ModelConfig::from_gguf(&seed(name)).err().unwrap_or_else(|| panic!("{name} accepted")).to_string()
}

fn weights_error(name: &str) -> String {
    let file = seed(name);
    let config = ModelConfig::from_gguf(&file).unwrap();
    weights::check_model(&file, &config).err().unwrap_or_else(|| panic!("{name} accepted")).to_string()
}

#[test]
fn the_hostile_model_seeds_are_refused_naming_what_is_wrong() {
    let e = config_error("hostile-window-0.gguf");
    assert!(e.contains("`gemma3.attention.sliding_window` = 0"), "{e}");
    let e = config_error("hostile-block-count.gguf");
    assert!(e.contains("tensor `blk.1.") && e.contains("not used by a gemma3 of 1 blocks"), "{e}");
    let e = weights_error("hostile-nan-norm.gguf");
    assert!(e.contains("tensor `blk.0.attn_norm.weight` holds a non-finite weight (element 0)"), "{e}");
    let e = weights_error("hostile-inf-embd.gguf");
    assert!(e.contains("tensor `token_embd.weight` holds a non-finite weight (element 0)"), "{e}");
    // The seeds they were made from read.
    for good in ["tiny-gemma3.gguf", "tiny-gemma3-gqa.gguf"] {
        let file = seed(good);
        weights::check_model(&file, &ModelConfig::from_gguf(&file).unwrap()).unwrap();
    }
}

/// A metadata array of more strings than any vocabulary: refused as it is read, before a
/// `String` is made (20 million tokens once took 4.3 GB before `tokenize` failed).
#[test]
fn an_array_of_more_strings_than_any_vocabulary_is_refused_in_bounded_memory() {
    let n = MAX_STRINGS + 1;
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes()); // tensors
    b.extend(1u64.to_le_bytes()); // metadata pairs
    let key = "tokenizer.ggml.tokens";
    b.extend((key.len() as u64).to_le_bytes());
    b.extend(key.as_bytes());
    b.extend(9u32.to_le_bytes()); // array
    b.extend(8u32.to_le_bytes()); // of strings
    b.extend((n as u64).to_le_bytes());
    b.resize(b.len() + 9 * n, 0);
    for s in b.rchunks_exact_mut(9).take(n) {
        s[0] = 1; // a string of one byte: "\0"
    }
    let (result, peak) = super::peak_allocation(|| GgufFile::from_bytes(b).map(|_| ()));
    let e = result.unwrap_err().to_string();
    assert!(e.contains("at most 2^22 strings") && e.contains(&n.to_string()), "{e}");
    assert!(peak < 1 << 20, "refusing took {peak} bytes");
}
