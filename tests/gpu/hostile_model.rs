//! A model file that would make the runner lie is refused, on the GPU and the CPU alike, with
//! the tensor or position named: a NaN norm weight and an infinite block scale at load, logits
//! that overflow at run time, a run past `--context` before anything runs (the CLI's CPU path
//! included). Made from the fuzz seed `fuzz/seeds/model/tiny-gemma3.gguf`.

use super::{open, selectors};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::GpuOptions;
use ninfer_wgpu::llm::{GpuForward, Keep, ModelConfig, Reference, Tokenizer};
use ninfer_wgpu::native::block_on;
use std::process::Command;

const SEED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/model/tiny-gemma3.gguf");

/// The seed with every f32 of tensor `name` set to `value`.
fn with_weights(name: &str, value: f32) -> Vec<u8> {
    let mut bytes = std::fs::read(SEED).unwrap();
    let file = GgufFile::from_bytes(bytes.clone()).unwrap();
    let info = file.info(name).unwrap();
    assert_eq!(info.ggml_type, 0, "{name} is f32");
    let at = (file.data_offset + info.offset) as usize;
    let n: usize = info.shape().iter().product();
    for w in bytes[at..at + 4 * n].chunks_exact_mut(4) {
        w.copy_from_slice(&value.to_le_bytes());
    }
    bytes
}

/// Both forwards' load errors (the GPU's on the first adapter, where one exists).
fn load_errors(bytes: Vec<u8>) -> Vec<String> {
    let file = GgufFile::from_bytes(bytes).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let mut errors = vec![Reference::load(&file, &config).err().expect("the CPU reference refuses").to_string()];
    if let Some(gpu) = selectors().first().and_then(|s| open(s, GpuOptions::default())) {
        let gpu_load = block_on(GpuForward::load(&gpu, &file, &config, &Default::default()));
        errors.push(gpu_load.err().expect("the GPU forward refuses").to_string());
    }
    errors
}

#[test]
fn a_nan_norm_weight_is_refused_at_load_by_name() {
    for e in load_errors(with_weights("blk.0.attn_norm.weight", f32::NAN)) {
        assert!(e.contains("tensor `blk.0.attn_norm.weight` holds a non-finite weight (element 0)"), "{e}");
    }
    for e in load_errors(with_weights("token_embd.weight", f32::INFINITY)) {
        assert!(e.contains("tensor `token_embd.weight` holds a non-finite weight"), "{e}");
    }
}

/// Finite weights whose logits overflow f32 (a final norm gain of f32::MAX): each forward
/// refuses its logits naming the first position, where it would have printed `<pad>`s.
#[test]
fn logits_that_overflow_are_refused_naming_the_position() {
    let file = GgufFile::from_bytes(with_weights("output_norm.weight", f32::MAX)).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let ids = Tokenizer::from_gguf(&file).unwrap().encode("hello the world", false).unwrap();
    let reference = Reference::load(&file, &config).unwrap();
    let e = reference.session().run(&ids, Keep::All).unwrap_err().to_string();
    assert!(e.contains("the logits at position 0 hold"), "{e}");
    for selector in selectors() {
        let Some(gpu) = open(&selector, GpuOptions::default()) else { continue };
        let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &Default::default())).unwrap();
        let e = block_on(forward.forward(&ids, Keep::All)).unwrap_err().to_string();
        assert!(e.contains("the logits at position 0 hold"), "{selector}: {e}");
    }
}

/// The CPU reference takes `--context` as the GPU does and refuses a run past it whole, before
/// its first token runs.
#[test]
fn the_cpu_reference_refuses_a_run_past_its_context_up_front() {
    let file = GgufFile::from_bytes(std::fs::read(SEED).unwrap()).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let reference = Reference::load(&file, &config).unwrap();
    let e = reference.session_of(config.context_length + 1).err().unwrap().to_string();
    assert!(e.contains(&format!("more than the model's {}", config.context_length)), "{e}");
    let mut session = reference.session_of(16).unwrap();
    let e = session.run(&[5; 17], Keep::Last).unwrap_err().to_string();
    assert!(e.contains("17 tokens after 0 are more than the context of 16 positions"), "{e}");
    assert_eq!(session.position(), 0, "nothing ran");
    session.run(&[5; 16], Keep::Last).unwrap();
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer-wgpu")).args(args).output().unwrap()
}

/// `generate --device cpu` stops at `--context` (a billion tokens asked for), and `logits`
/// refuses a token file longer than it before running any.
#[test]
fn the_cli_on_the_cpu_keeps_to_the_context() {
    let out = cli(&["generate", SEED, "--prompt", "hello", "-n", "1000000000", "--context", "16", "--device", "cpu"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("the context holds"), "{err}");
    let dir = std::env::temp_dir().join(format!("ninfer-hostile-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ids = dir.join("ids.bin");
    std::fs::write(&ids, [5i32; 20].iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    let gpu = selectors().first().cloned();
    for (device, adapter) in [("cpu", None), ("gpu", gpu.as_deref())] {
        let mut args = vec!["logits", SEED, "--tokens", ids.to_str().unwrap(), "--context", "16", "--device", device];
        match (device, adapter) {
            ("gpu", None) => continue,
            (_, Some(a)) => args.extend(["--adapter", a]),
            (_, None) => {}
        }
        let out = cli(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && out.stdout.is_empty(), "{device}: {err}");
        assert!(err.contains("20 tokens after 0 are more than the context of 16 positions"), "{device}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
