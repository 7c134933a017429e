//! Where a generated token's time goes, by kind of dispatch, on a real model: the cache filled
//! to `--depth` positions, then one-token steps that record only one kind of dispatch
//! (`GpuForward::step_only`: the products of q/k/v, the attention, the norms, the head, …) each
//! timed from record to done, against the whole step and an empty one, in the same run. On a
//! device that runs dispatches one after another (lavapipe) a kind's time less the empty
//! step's is its cost; the kinds' costs should add up to the whole step's.
//! `--columns N` profiles a prompt's step instead: N tokens at once (at most the batch, 64);
//! `--kernel-workgroup N` sets the synchronising kernels' workgroup (`ForwardOptions`).
//! `--only KIND --repeat N` records only the kind whose name starts with KIND, N steps, and
//! prints their median: a run to profile one kind under `perf record`.
//! `cargo run --release --example step_profile -- MODEL.gguf [--adapter NAME] [--depth N] [--columns N]
//! [--kernel-workgroup N] [--only KIND --repeat N]`.

use ninfer_wgpu::bench::{median_time, Timing};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{Gpu, GpuOptions};
use ninfer_wgpu::llm::{DispatchKind, ForwardOptions, GpuForward, Keep, ModelConfig};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::Error;
use std::time::Duration;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let Some(path) = args.first().filter(|a| !a.starts_with("--")) else {
        return Err(Error::Unsupported(
            "usage: step_profile MODEL.gguf [--adapter NAME] [--depth N] [--columns N] [--kernel-workgroup N]".into(),
        ));
    };
    let depth: usize = match flag("--depth") {
        Some(d) => d.parse().map_err(|_| Error::Unsupported(format!("--depth {d} is not a count")))?,
        None => 128,
    };
    let columns: usize = match flag("--columns") {
        Some(c) => c.parse().map_err(|_| Error::Unsupported(format!("--columns {c} is not a count")))?,
        None => 1,
    };
    let gpu = block_on(Gpu::open(&GpuOptions { adapter: flag("--adapter"), ..Default::default() }))?;
    let file = GgufFile::open(path)?;
    let config = ModelConfig::from_gguf(&file)?;
    let kernel_workgroup = match flag("--kernel-workgroup") {
        Some(n) => Some(n.parse().map_err(|_| Error::Unsupported(format!("--kernel-workgroup {n} is not a count")))?),
        None => None,
    };
    let options = ForwardOptions { context: depth + columns.max(64), kernel_workgroup, ..Default::default() };
    let mut forward = block_on(GpuForward::load(&gpu, &file, &config, &options))?;
    // Any ids: the cache's depth, not its contents, sets the attention's work.
    let ids: Vec<u32> = (0..depth as u32).map(|i| 1000 + i % 5000).collect();
    block_on(forward.forward(&ids, Keep::Last))?;
    let tokens: Vec<u32> = (0..columns as u32).map(|i| 1000 + i).collect();
    let timing = Timing { warmup: 2, min_runs: 9, min_time: Duration::from_millis(400), max_runs: 60 };
    let mut time = |keep: &dyn Fn(DispatchKind) -> bool| -> Result<(u32, f64), Error> {
        let mut n = 0;
        let t = median_time(timing, || {
            n = block_on(forward.columns_only(&tokens, keep))?;
            Ok(())
        })?;
        Ok((n, t.as_secs_f64() * 1e3))
    };
    if let Some(only) = flag("--only") {
        let Some(&kind) = DispatchKind::ALL.iter().find(|k| k.name().starts_with(only.as_str())) else {
            return Err(Error::Unsupported(format!("--only {only}: no dispatch kind's name starts so")));
        };
        let repeat: usize = match flag("--repeat") {
            Some(r) => r.parse().map_err(|_| Error::Unsupported(format!("--repeat {r} is not a count")))?,
            None => 100,
        };
        let mut times = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let t = std::time::Instant::now();
            block_on(forward.columns_only(&tokens, &|k| k == kind))?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!("{}: {repeat} steps, median {:.3} ms", kind.name(), times[repeat / 2]);
        return Ok(());
    }
    let (_, empty) = time(&|_| false)?;
    let (all_n, all) = time(&|_| true)?;
    println!("{} on {}, depth {depth}, {columns} token(s) a step (median ms)", path, gpu.platform().summary());
    println!("| dispatch kind | dispatches | ms, alone | less the empty step | share of the step |");
    println!("|---|---|---|---|---|");
    let mut sum = 0.0;
    for &kind in DispatchKind::ALL {
        let (n, ms) = time(&|k| k == kind)?;
        if n == 0 {
            continue;
        }
        let cost = (ms - empty).max(0.0);
        sum += cost;
        println!("| {} | {n} | {ms:.3} | {cost:.3} | {:.1} % |", kind.name(), 100.0 * cost / (all - empty));
    }
    println!("| empty step (submit, wait) | 0 | {empty:.3} | | |");
    println!("| whole step | {all_n} | {all:.3} | {:.3} | 100 % |", all - empty);
    println!("kinds' costs add up to {sum:.3} ms of the whole step's {:.3} ms", all - empty);
    Ok(())
}
