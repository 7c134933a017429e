//! `verify FILE`: every tensor of a user's `.ninfer` or `.gguf` file on the chosen GPU against
//! the oracle (`conformance::verify_tensor`), one tensor at a time — validated, uploaded,
//! checked and freed — with a progress bar, a table, `--json` or an HTML `--report`, and a
//! non-zero exit on any failure.

use ninfer_wgpu::conformance::{self, TensorOutcome, Verdict, VerifyReport};
use ninfer_wgpu::gpu::{Gpu, GpuOptions};
use ninfer_wgpu::model::Model;
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{report, Error};
use std::path::Path;
use std::time::Instant;

/// Where `verify` writes, besides the table.
pub struct Outputs<'a> {
    pub json: bool,
    pub html: Option<&'a Path>,
}

/// Checks every tensor; `Ok(false)` on a failure, and on a tensor of a type the registry lacks
/// unless `skip_unsupported` (such tensors are listed and counted either way).
pub fn verify(
    file: &Path,
    options: GpuOptions,
    seed: Option<u64>,
    skip_unsupported: bool,
    out: Outputs,
) -> Result<bool, Error> {
    let opened = Model::open(file)?;
    let gpu = block_on(Gpu::open(&options))?;
    let seed = match seed {
        Some(seed) => seed,
        None => ninfer_wgpu::testgen::fresh_seed()?,
    };
    let mut rng = Rng::new(seed);
    let names = opened.tensor_names();
    let bar = crate::progress::bar(names.len() as u64, "verifying {pos}/{len} {bar:30} {msg}");
    let mut tensors = Vec::with_capacity(names.len());
    for name in names {
        bar.set_message(name.clone());
        let start = Instant::now();
        let report = opened.tensor(&name).and_then(|t| block_on(conformance::verify_tensor(&gpu, &name, &t, &mut rng)));
        tensors.push(TensorOutcome::new(name, report, start.elapsed().as_secs_f64()));
        bar.inc(1);
    }
    bar.finish_and_clear();
    tensors.extend(opened.unsupported_tensors().into_iter().map(|(name, why)| TensorOutcome::unsupported(name, why)));
    let shown = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let report = VerifyReport::new(shown, gpu.platform(), seed, tensors);
    if let Some(path) = out.html {
        std::fs::write(path, report::verify_html(&report))
            .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
        eprintln!("report written to {}", path.display());
    }
    if out.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| Error::Io(e.to_string()))?);
        return Ok(report.failed == 0 && (skip_unsupported || report.unsupported == 0));
    }
    println!("verify {} on {}", file.display(), gpu.platform().summary());
    println!("seed {seed} (replay with --seed {seed})");
    println!(
        "{:<32} {:<20} {:<16} {:>12}  {:<9} {:>11} {:>8}  per op",
        "tensor", "format", "shape", "bytes", "verdict", "worst/bound", "time"
    );
    for t in &report.tensors {
        match (&t.report, &t.error) {
            (Some(r), _) => {
                let ops: Vec<String> = r
                    .results
                    .iter()
                    .map(|c| format!("{} {:?}", c.op, c.verdict))
                    .chain(r.not_run.iter().map(|(op, _)| format!("{op} not run")))
                    .collect();
                println!(
                    "{:<32} {:<20} {:<16} {:>12}  {:<9} {:>11.3e} {:>7.2}s  {}",
                    t.name,
                    r.format,
                    format!("{:?}", r.shape),
                    r.bytes,
                    t.verdict,
                    t.worst_of_bound(),
                    t.seconds,
                    ops.join(", ")
                );
                for c in r.results.iter().filter(|c| c.verdict != Verdict::Pass) {
                    println!("    {} {}: {}", c.op, c.variant, c.detail);
                }
            }
            (None, e) if t.verdict == "unsupported" => {
                println!("{:<32} not checked: {}", t.name, e.as_deref().unwrap_or(""))
            }
            (None, e) => println!("{:<32} error: {}", t.name, e.as_deref().unwrap_or("")),
        }
    }
    let unchecked = match report.unsupported {
        0 => String::new(),
        u if skip_unsupported => format!(", {u} not checked (type not registered; --skip-unsupported)"),
        u => format!(", {u} not checked (type not registered; --skip-unsupported accepts that)"),
    };
    println!("{} tensors, {} failed{unchecked} (seed {seed})", report.tensors.len(), report.failed);
    Ok(report.failed == 0 && (skip_unsupported || report.unsupported == 0))
}
