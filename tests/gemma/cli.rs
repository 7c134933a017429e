//! The model commands' contract (docs/cli.md#models): `logits -o` writes [tokens][vocab]
//! little-endian f32 equal to the library's, `perplexity --json` and `generate --json` carry
//! their fields, `verify --forward` judges this adapter, and bad input gets a short error.

use super::model;
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::{judge, ModelConfig, Reference, Tokenizer};
use ninfer_wgpu_testkit::TempDir;

/// Nine tokens with BOS: one more than a context of 8 holds.
const PROMPT_OF_NINE: &str = "one two three four five six seven eight";

fn json_of(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The adapter the commands run on: CI's first expected one, else the machine's default.
fn adapter() -> Vec<String> {
    match std::env::var("NINFER_WGPU_EXPECT").ok().and_then(|l| l.split(',').next().map(str::to_string)) {
        Some(a) => vec!["--adapter".into(), a],
        None => Vec::new(),
    }
}

#[test]
fn the_model_commands_keep_their_contract() {
    let Some(path) = model() else {
        eprintln!("skipped: gemma-3-270m-q4_k_m.gguf not found");
        return;
    };
    let file = GgufFile::open(&path).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let tokenizer = Tokenizer::from_gguf(&file).unwrap();
    let dir = TempDir::new("gemma-cli");
    let m = path.to_str().unwrap();
    let adapter = adapter();
    let cli = ninfer_wgpu_testkit::cli!();
    // Every command on the same adapter: success required (`ok`) or an error (`fails`).
    let with_adapter = |args: &[&str], ok: bool| {
        let mut all = args.to_vec();
        all.extend(adapter.iter().map(String::as_str));
        if ok {
            cli.ok(&all)
        } else {
            cli.fails(&all)
        }
    };
    let text = "A short sentence about the sea.";
    let (text_file, ids_file, out_file) = (dir.join("t.txt"), dir.join("t.i32"), dir.join("t.f32"));
    let (text_path, ids_path, out_path) =
        (text_file.to_str().unwrap(), ids_file.to_str().unwrap(), out_file.to_str().unwrap());
    std::fs::write(&text_file, text).unwrap();
    let ids = tokenizer.encode(text, false).unwrap();
    std::fs::write(&ids_file, ids.iter().flat_map(|&i| (i as i32).to_le_bytes()).collect::<Vec<u8>>()).unwrap();

    // logits: the GPU's, as the library's exact reference within the A32 limit; --device cpu is
    // the reference itself, bit for bit.
    let exact: Vec<f32> = Reference::load(&file, &config).unwrap().logits(&ids).unwrap().concat();
    for device in ["gpu", "cpu"] {
        with_adapter(&["logits", m, "--tokens", ids_path, "--device", device, "-o", out_path], true);
        let got: Vec<f32> = bytemuck::pod_collect_to_vec(&std::fs::read(&out_file).unwrap());
        assert_eq!(got.len(), ids.len() * config.vocab, "{device}: [tokens][vocab]");
        match device {
            "cpu" => assert!(got == exact, "--device cpu is the reference"),
            _ => {
                let a = judge::agreement(&exact, &got, config.vocab);
                assert!(a.mean_kld <= judge::forward_limit(ninfer_wgpu::gpu::Profile::A32), "{a:?}");
            }
        }
    }

    let v = json_of(&with_adapter(&["perplexity", m, "--text-file", text_path, "--json"], true));
    assert_eq!(v["tokens"], ids.len());
    let want = judge::perplexity(&exact, &ids, config.vocab);
    let got = v["perplexity"].as_f64().unwrap();
    assert!((got / want - 1.0).abs() < 1e-4, "perplexity {got} vs the reference's {want}");

    let prompt = "The capital of France is";
    let v = json_of(&with_adapter(&["generate", m, "--prompt", prompt, "-n", "4", "--greedy", "--json"], true));
    let tokens: Vec<u32> = v["tokens"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect();
    assert_eq!(tokens.len(), 4);
    assert_eq!(v["text"].as_str().unwrap(), tokenizer.decode(&tokens).unwrap());
    assert_eq!(v["prompt_tokens"], tokenizer.encode(prompt, false).unwrap().len());
    assert!(v["prompt_tokens_per_s"].as_f64().unwrap() > 0.0 && v["generation_tokens_per_s"].as_f64().unwrap() > 0.0);
    for field in ["load_s", "prompt_s", "generation_s"] {
        assert!(v[field].as_f64().is_some_and(|s| s > 0.0), "{field}: {}", v[field]);
    }
    assert_eq!(v["context_full"], false);
    // The device holds at least the file's tensors; the process peaked above that on Linux.
    let file_bytes = std::fs::metadata(m).unwrap().len();
    if let Some(device) = v["device_bytes"].as_u64() {
        assert!(device > file_bytes * 9 / 10, "device {device} bytes for a {file_bytes}-byte file");
    }
    assert!(v["peak_host_bytes"].as_u64().is_some_and(|b| b > 0), "{}", v["peak_host_bytes"]);

    // A full context ends generation early, said on stderr; a prompt longer than it is refused.
    let mut args = vec!["generate", m, "--prompt", prompt, "-n", "10", "--greedy", "--json", "--context", "8"];
    args.extend(adapter.iter().map(String::as_str));
    let out = cli.run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("generating at most"), "{err}");
    // The last token is picked, never run: the prompt's positions plus all but one token.
    let room = 8 + 1 - tokenizer.encode(prompt, false).unwrap().len();
    let v = json_of(&String::from_utf8_lossy(&out.stdout));
    assert_eq!((v["tokens"].as_array().unwrap().len(), v["context_full"].as_bool()), (room, Some(true)));
    let err = with_adapter(&["generate", m, "--prompt", PROMPT_OF_NINE, "--context", "8"], false);
    assert!(err.contains("more than the context of 8"), "{err}");

    let v = json_of(&with_adapter(&["verify", m, "--forward", "--tokens", ids_path, "--json"], true));
    assert_eq!((v["pass"].as_bool(), v["tokens"].as_u64()), (Some(true), Some(ids.len() as u64)));
    assert!(v["agreement"]["mean_kld"].as_f64().unwrap() <= v["mean_kld_limit"].as_f64().unwrap());

    // Bad input: a short error naming the problem, exit code 2, no panic.
    let bad_file = dir.join("bad.i32");
    let bad_path = bad_file.to_str().unwrap();
    let bad = |bytes: &[u8], args: &[&str], want: &str| {
        std::fs::write(&bad_file, bytes).unwrap();
        let err = with_adapter(&[&["logits", m, "--tokens", bad_path], args].concat(), false);
        assert!(err.contains(want), "{want}: {err}");
    };
    bad(&[2, 0, 0, 0, 1], &[], "not a whole number of i32 ids");
    bad(&[], &[], "no token ids");
    bad(&(-5i32).to_le_bytes(), &[], "token 0 is negative (-5)");
    bad(&[(2i32).to_le_bytes(), (262144i32).to_le_bytes()].concat(), &[], "token id 262144 is past the vocabulary");
    bad(&[2u8, 0, 0, 0].repeat(9), &["--context", "8"], "9 tokens after 0 are more than the context of 8");
}
