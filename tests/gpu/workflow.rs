//! The user's-own-model workflow on every adapter, through the CLI: a multi-dtype safetensors
//! checkpoint in two shards quantized and verified with an HTML report, a GGUF imported
//! unchanged and verified, and two conformance reports compared.

use super::{ci, selectors};
use ninfer_wgpu::testgen::{random_activation, Rng};
use ninfer_wgpu_testkit::{write_safetensors, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    ninfer_wgpu_testkit::cli!().run(args)
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

fn le<T: Copy, const W: usize>(v: &[T], f: fn(T) -> [u8; W]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

#[test]
fn a_quantized_checkpoint_verifies_on_every_adapter_with_a_shareable_report() {
    let selectors = selectors();
    if selectors.is_empty() {
        assert!(!ci(), "CI=true but no GPU adapter was found");
        return;
    }
    let seed = ninfer_wgpu::testgen::test_seed("quantize and verify workflow").expect("seed");
    let mut rng = Rng::new(seed);
    let dir = TempDir::new("workflow-quantize");
    // A model as checkpoints come: matrices in f32 and f16, a bf16 norm, an f32 bias and an
    // int64 buffer, across two shards named by an index.
    let w = random_activation(64 * 128, &mut rng);
    let emb: Vec<u16> = random_activation(5 * 64, &mut rng).iter().map(|&v| half::f16::from_f32(v).to_bits()).collect();
    let norm: Vec<u16> = random_activation(128, &mut rng).iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
    let bias = random_activation(64, &mut rng);
    let ids: Vec<i64> = (0..16).collect();
    write_safetensors(
        &dir.join("model-1.safetensors"),
        &[
            ("layer.w", "F32", vec![64, 128], le(&w, f32::to_le_bytes)),
            ("layer.b", "F32", vec![64], le(&bias, f32::to_le_bytes)),
        ],
    );
    write_safetensors(
        &dir.join("model-2.safetensors"),
        &[
            ("emb", "F16", vec![5, 64], le(&emb, u16::to_le_bytes)),
            ("norm", "BF16", vec![128], le(&norm, u16::to_le_bytes)),
            ("position_ids", "I64", vec![1, 16], le(&ids, i64::to_le_bytes)),
        ],
    );
    let map = serde_json::json!({ "weight_map": {
        "layer.w": "model-1.safetensors", "layer.b": "model-1.safetensors",
        "emb": "model-2.safetensors", "norm": "model-2.safetensors", "position_ids": "model-2.safetensors" } });
    let index = dir.join("model.safetensors.index.json");
    std::fs::write(&index, map.to_string()).unwrap();
    let model = dir.join("model.ninfer");
    let args = ["quantize", &path(&index), &path(&model), "--format", "q4_g64_fp16", "--format-for", "emb=q8_g32_fp16"];
    let out = run(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "spool or temporary files left: {leftovers:?}");

    // Checks run per tensor: dequant for all, gather for matrices, matmul for float matrices
    // (the capability table gives int32 no matmul), and A8's matmul for the grouped ones.
    let expect = [
        ("emb", "q8_g32_fp16", 4),
        ("layer.b", "fp32", 1),
        ("layer.w", "q4_g64_fp16", 4),
        ("norm", "fp32", 1),
        ("position_ids", "int32", 2),
    ];
    for selector in &selectors {
        let html = dir.join(&format!("report-{}.html", selector.replace('/', "-")));
        let seed = seed.to_string();
        let out =
            run(&["verify", &path(&model), "--adapter", selector, "--json", "--report", &path(&html), "--seed", &seed]);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{selector}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert!(out.status.success() && report["failed"] == 0, "{selector}: {report}");
        let mut got: Vec<(String, String, usize)> = report["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                assert!(matches!(t["verdict"].as_str(), Some("pass" | "deviation")), "{selector}: {t}");
                let r = &t["report"];
                (
                    t["name"].as_str().unwrap().into(),
                    r["format"].as_str().unwrap().into(),
                    r["results"].as_array().unwrap().len(),
                )
            })
            .collect();
        got.sort();
        let want: Vec<(String, String, usize)> = expect.iter().map(|&(n, f, k)| (n.into(), f.into(), k)).collect();
        assert_eq!(got, want, "{selector}: the checks each tensor gets");
        // The shareable report: one file, nothing fetched, every tensor named, a chart inline.
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg") && page.contains("</html>"));
        assert!(
            !page.contains("<script") && !page.contains("src=\"http") && !page.contains("href=\"http"),
            "no remote resources"
        );
        for (name, format, _) in expect {
            assert!(
                page.contains(name) && page.contains(format),
                "{selector}: {name} {format} missing from the report"
            );
        }
    }
}

#[test]
fn two_conformance_reports_compare_by_verdict() {
    let selectors = selectors();
    let Some(selector) = selectors.first() else {
        assert!(!ci(), "CI=true but no GPU adapter was found");
        return;
    };
    let dir = TempDir::new("workflow-compare");
    let a = dir.join("a.json");
    let html = dir.join("a.html");
    let out =
        run(&["conformance", "--adapter", selector, "--formats", "bf16,gguf_q4_0", "--json", "--report", &path(&html)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(&a, &out.stdout).unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("gguf_q4_0") && page.contains("<svg"), "report lists the formats and draws the chart");
    let same = run(&["conformance", "--compare", &path(&a), &path(&a)]);
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(same.status.success() && text.contains("0 verdicts differ"), "{text}");
    // B: the same run with one gguf_q4_0 gather case failed, and bf16 matmul not run.
    let mut report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = report["results"].as_array_mut().unwrap();
    let case = results.iter_mut().find(|r| r["format"] == "gguf_q4_0" && r["op"] == "gather").unwrap();
    case["verdict"] = "fail".into();
    let summary = report["summary"].as_array_mut().unwrap();
    summary.iter_mut().find(|r| r["format"] == "gguf_q4_0" && r["op"] == "gather").unwrap()["failed"] = 1.into();
    summary.retain(|r| !(r["format"] == "bf16" && r["op"] == "matmul"));
    let b = dir.join("b.json");
    std::fs::write(&b, report.to_string()).unwrap();
    let diff = run(&["conformance", "--compare", &path(&a), &path(&b)]);
    let text = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(1), "{text}");
    assert!(text.contains("gguf_q4_0") && text.contains("gather") && text.contains("not run on B"), "{text}");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"results\": 3}").unwrap();
    let refused = run(&["conformance", "--compare", &path(&a), &path(&bad)]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(refused.status.code() == Some(2) && err.contains("not a `conformance --json` report"), "{err}");
}

#[test]
fn a_gguf_imports_unchanged_and_verifies_on_every_adapter() {
    use ninfer_wgpu::container::Artifact;
    use ninfer_wgpu::gguf::reader::GgufFile;
    let selectors = selectors();
    if selectors.is_empty() {
        assert!(!ci(), "CI=true but no GPU adapter was found");
        return;
    }
    // A GGUF of every type, written by llama.cpp's own `gguf` package.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu-import");
    let _ = std::fs::remove_dir_all(&dir);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/independent/gguf_fixtures.py");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("formats.json"), run(&["formats", "--json"]).stdout).unwrap();
    let made =
        std::process::Command::new("python3").arg(script).arg(&dir).arg("11").arg(dir.join("formats.json")).status();
    if !made.is_ok_and(|s| s.success()) {
        assert!(!ci(), "CI=true but the gguf fixture generator failed");
        return;
    }
    let gguf = dir.join("fixture.gguf");
    let imported = dir.join("imported.ninfer");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let refused = run(&["import", &path(&gguf), &path(&imported)]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(refused.status.code() == Some(2) && err.contains("nvfp4") && err.contains("--skip-unsupported"), "{err}");
    // `inspect` gives a refused tensor's shape outermost first, as a registered one's: the
    // fixture's ggml nvfp4 tensors (type 40, not registered) are 3 rows of 128 values (GGUF
    // dimensions 128, 3).
    let listing: serde_json::Value = serde_json::from_slice(&run(&["inspect", &path(&gguf), "--json"]).stdout).unwrap();
    let refused: Vec<_> = listing["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["id"].as_str().unwrap().starts_with("nvfp4"))
        .collect();
    assert!(!refused.is_empty(), "{listing}");
    for t in refused {
        assert!(t["error"].as_str().unwrap().contains("format not registered"), "{t}");
        assert_eq!(t["shape"], serde_json::json!([3, 128]), "{t}");
    }
    let out = run(&["import", &path(&gguf), &path(&imported), "--skip-unsupported"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Every registered tensor's bytes, unchanged, under its GGUF name.
    let (g, a) = (GgufFile::open(&gguf).unwrap(), Artifact::open(&imported).unwrap());
    let mut count = 0;
    for name in g.tensors.iter().filter_map(|t| g.tensor(&t.name).ok().map(|_| t.name.clone())) {
        let (x, y) = (g.tensor(&name).unwrap(), a.tensor(&name).unwrap());
        assert_eq!((x.desc(), x.payload()), (y.desc(), y.payload()), "{name}");
        count += 1;
    }
    assert!(count >= 20, "{count} tensors imported");
    let gguf_meta = a.root().metadata.as_ref().unwrap().member("gguf").unwrap();
    assert_eq!(gguf_meta["test.string"], "ninfer ✓");
    // The imported file verifies on every adapter; the GGUF itself on the first (the bytes are
    // the same, asserted above, so the other adapters would compile and run the same kernels).
    // The GGUF's tensors of types the registry lacks are listed as not checked, and fail the run
    // unless --skip-unsupported says that is accepted: none is left out silently.
    let unregistered = g.tensors.len() - count;
    assert!(unregistered > 0, "the fixture holds types the registry lacks");
    let runs = selectors.iter().map(|s| (s, &imported, false)).chain(selectors.first().map(|s| (s, &gguf, true)));
    for (selector, file, is_gguf) in runs {
        let verify = |skip: bool| {
            let mut args =
                vec!["verify".to_string(), path(file), "--adapter".into(), selector.clone(), "--json".into()];
            if skip {
                args.push("--skip-unsupported".into());
            }
            let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
            let report: serde_json::Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{selector}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
            (out.status.code(), report)
        };
        let (code, report) = verify(is_gguf);
        assert!(code == Some(0) && report["failed"] == 0, "{selector} {}: {report}", file.display());
        let all = report["tensors"].as_array().unwrap();
        let tensors: Vec<&serde_json::Value> = all.iter().filter(|t| t["verdict"] != "unsupported").collect();
        assert_eq!(tensors.len(), count, "{selector}: every registered tensor verified");
        if is_gguf {
            assert_eq!((all.len(), report["unsupported"].as_u64()), (g.tensors.len(), Some(unregistered as u64)));
            let (code, strict) = verify(false);
            assert_eq!((code, &strict["unsupported"]), (Some(1), &report["unsupported"]), "{strict}");
            let listed = all.iter().find(|t| t["verdict"] == "unsupported").unwrap();
            assert!(listed["error"].as_str().unwrap().contains("format not registered"), "{listed}");
        }
        for t in tensors {
            let ops: Vec<&str> = t["report"]["results"]
                .as_array()
                .map_or(Vec::new(), |r| r.iter().filter_map(|c| c["op"].as_str()).collect());
            // ggml block types are also checked in the A8 profile.
            let gguf = t["report"]["format"].as_str().is_some_and(|f| f.starts_with("gguf_"));
            let want: &[&str] =
                if gguf { &["dequant", "matmul", "matmul_a8", "gather"] } else { &["dequant", "matmul", "gather"] };
            assert_eq!(ops, want, "{selector}: the checks that ran for {}", t["name"]);
        }
    }
}
