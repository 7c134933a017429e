//! `verify FILE`: every tensor of a user's `.ninfer` or `.gguf` file on the chosen GPU against
//! the oracle (`conformance::verify_tensor`), one tensor at a time — validated, uploaded,
//! checked and freed — with a progress bar, a table or `--json`, and a non-zero exit on any
//! failure.

use crate::files::Opened;
use ninfer_wgpu::conformance::{self, TensorReport, Verdict};
use ninfer_wgpu::gpu::{Gpu, GpuOptions};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::Error;
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// A tensor's outcome: its report, or the error that stopped it (an invalid payload, a
/// first-use failure), with the time it took.
struct Row {
    name: String,
    report: Result<TensorReport, Error>,
    seconds: f64,
}

fn verdict(r: &Row) -> String {
    match &r.report {
        Err(_) => "error".into(),
        Ok(t) if t.failed() => "FAIL".into(),
        Ok(t) if t.results.iter().any(|c| c.verdict == Verdict::PlatformDeviation) => "deviation".into(),
        Ok(_) => "pass".into(),
    }
}

pub fn verify(file: &Path, options: GpuOptions, seed: Option<u64>, as_json: bool) -> Result<bool, Error> {
    let opened = Opened::open(file)?;
    let gpu = block_on(Gpu::open(&options))?;
    let seed = seed.unwrap_or_else(Rng::seed_from_time);
    let mut rng = Rng::new(seed);
    let names = opened.tensor_names();
    let bar = indicatif::ProgressBar::new(names.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("verifying {pos}/{len} {bar:30} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut rows = Vec::with_capacity(names.len());
    for name in names {
        bar.set_message(name.clone());
        let start = Instant::now();
        let report = opened.tensor(&name).and_then(|t| block_on(conformance::verify_tensor(&gpu, &name, &t, &mut rng)));
        rows.push(Row { name, report, seconds: start.elapsed().as_secs_f64() });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let failed = rows.iter().filter(|r| matches!(verdict(r).as_str(), "FAIL" | "error")).count();
    if as_json {
        let tensors: Vec<_> = rows
            .iter()
            .map(|r| match &r.report {
                Ok(t) => json!({ "name": r.name, "verdict": verdict(r), "report": t, "seconds": r.seconds }),
                Err(e) => json!({ "name": r.name, "verdict": "error", "error": e.to_string(), "seconds": r.seconds }),
            })
            .collect();
        let report = json!({ "file": file.display().to_string(), "platform": gpu.platform(), "seed": seed, "tensors": tensors, "failed": failed });
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| Error::Io(e.to_string()))?);
        return Ok(failed == 0);
    }
    println!("verify {} on {}", file.display(), gpu.platform().summary());
    println!("seed {seed} (replay with --seed {seed})");
    println!(
        "{:<32} {:<20} {:<16} {:>12}  {:<9} {:>12} {:>8}  per op",
        "tensor", "format", "shape", "bytes", "verdict", "worst", "time"
    );
    for r in &rows {
        match &r.report {
            Ok(t) => {
                let worst = t.results.iter().map(|c| c.max_error).fold(0.0, f64::max);
                let ops: Vec<String> = t
                    .results
                    .iter()
                    .map(|c| format!("{} {:?}", c.op, c.verdict))
                    .chain(t.not_run.iter().map(|(op, _)| format!("{op} not run")))
                    .collect();
                println!(
                    "{:<32} {:<20} {:<16} {:>12}  {:<9} {:>12.3e} {:>7.2}s  {}",
                    r.name,
                    t.format,
                    format!("{:?}", t.shape),
                    t.bytes,
                    verdict(r),
                    worst,
                    r.seconds,
                    ops.join(", ")
                );
                for c in t.results.iter().filter(|c| c.verdict != Verdict::Pass) {
                    println!("    {} {}: {}", c.op, c.variant, c.detail);
                }
            }
            Err(e) => println!("{:<32} error: {e}", r.name),
        }
    }
    println!("{} tensors, {failed} failed (seed {seed})", rows.len());
    Ok(failed == 0)
}
