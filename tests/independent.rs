//! The encoders against an independent Python re-implementation of the reference text
//! (tests/independent/encoders.py, numpy + ml_dtypes): payload bytes must be identical, and a
//! refusal on one side must be a refusal on the other.

use ninfer_wgpu::encode::fp8_row::fp8_row_maxabs;
use ninfer_wgpu::encode::grouped::grouped_absmax;
use ninfer_wgpu::encode::Source;
use ninfer_wgpu::testgen;
use ninfer_wgpu::Format;
use std::path::Path;
use std::process::Command;

#[derive(serde::Deserialize)]
struct Case {
    case: String,
    method: String,
    format: String,
    n: usize,
    k: usize,
    refused: bool,
}

fn python_ready() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy, ml_dtypes"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn encoders_match_the_independent_python_implementation() {
    if !python_ready() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but python3 with numpy and ml_dtypes is missing"
        );
        eprintln!("python3 with numpy and ml_dtypes not found: independent check skipped");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("independent-encoders");
    let _ = std::fs::remove_dir_all(&dir);
    // The Python side takes a u32.
    let seed = testgen::test_seed("independent encoder check").expect("seed") % (1 << 32);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/independent/encoders.py");
    let status = Command::new("python3").arg(script).arg(&dir).arg(seed.to_string()).status().expect("python3 runs");
    assert!(status.success(), "the Python reference failed (seed {seed})");
    let cases: Vec<Case> = serde_json::from_slice(&std::fs::read(dir.join("cases.json")).unwrap()).unwrap();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for c in &cases {
        let raw = std::fs::read(dir.join(format!("{}.f32", c.case))).unwrap();
        let x: Vec<f32> = raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let format: Format = c.format.parse().unwrap();
        let ours = match c.method.as_str() {
            "grouped_absmax" => grouped_absmax(format, c.n, c.k, Source::F32(&x)),
            "fp8_row_maxabs" => fp8_row_maxabs(format, c.n, c.k, Source::F32(&x)),
            m => panic!("unknown method {m}"),
        };
        match (ours, c.refused) {
            (Err(_), true) => {}
            (Ok(e), false) => {
                compared += 1;
                let expect = std::fs::read(dir.join(format!("{}.bin", c.case))).unwrap();
                if e.tensor.payload() != expect.as_slice() {
                    let at = e.tensor.payload().iter().zip(&expect).position(|(a, b)| a != b);
                    mismatches.push(format!(
                        "{}: payloads differ (lengths {} vs {}, first difference at {at:?})",
                        c.case,
                        e.tensor.payload().len(),
                        expect.len()
                    ));
                }
            }
            (Err(e), false) => mismatches.push(format!("{}: Rust refused ({e}) but Python encoded", c.case)),
            (Ok(_), true) => mismatches.push(format!("{}: Python refused but Rust encoded", c.case)),
        }
    }
    assert!(compared >= 30, "only {compared} cases compared bytes");
    assert!(mismatches.is_empty(), "seed {seed}:\n{}", mismatches.join("\n"));
}
