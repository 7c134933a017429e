//! Two shapes of a model's kernels in one process, steps alternated: on a shared VM whose speed
//! moves by tens of percent between runs, alternating in one process is what shows a change.
//! By default the synchronising model kernels' two workgroup shapes
//! (`ForwardOptions::kernel_workgroup`: 128 invocations, as GPUs run them, and 8, as CPU drivers
//! do; docs/llm.md#model-kernels-on-cpu-drivers); with `--tall-tiles` the tiled products' four
//! rows an invocation and eight (`GpuOptions::tall_tiles`, two devices;
//! docs/performance.md#eight-rows-an-invocation-on-cpu-drivers). Both forwards are filled to
//! `DEPTH`, then `RUNS` rounds time a step of `COLUMNS` tokens with only the kind named (`all`:
//! every kind) on each, in turns; printed: median, 10th and 90th percentile, ms.
//! `cargo run --release --example workgroup_ab -- MODEL.gguf DEPTH RUNS COLUMNS [KIND] [--adapter NAME] [--tall-tiles]`.

use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{Gpu, GpuOptions};
use ninfer_wgpu::llm::kernels::{CPU_WG, LLM_WG};
use ninfer_wgpu::llm::{DispatchKind, ForwardOptions, GpuForward, Keep, ModelConfig};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::Error;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        Error::Unsupported(
            "usage: workgroup_ab MODEL.gguf DEPTH RUNS COLUMNS [KIND] [--adapter NAME] [--tall-tiles]".into(),
        )
    };
    let adapter = args.iter().position(|a| a == "--adapter").and_then(|i| args.get(i + 1)).cloned();
    let count = |i: usize| -> Result<usize, Error> { args.get(i).and_then(|a| a.parse().ok()).ok_or_else(usage) };
    let (depth, runs, columns) = (count(1)?, count(2)?.max(1), count(3)?);
    let kind = match args.get(4).filter(|a| !a.starts_with("--")) {
        Some(k) if k == "all" || DispatchKind::ALL.iter().any(|d| d.name() == k) => k.clone(),
        Some(k) => return Err(Error::Unsupported(format!("no kind of dispatch is named `{k}`"))),
        None => "attention".into(),
    };
    let tall = args.iter().any(|a| a == "--tall-tiles");
    let file = GgufFile::open(args.first().ok_or_else(usage)?)?;
    let config = ModelConfig::from_gguf(&file)?;
    // (label, the device's tall_tiles, the forward's kernel workgroup)
    let shapes: [(String, Option<bool>, Option<u32>); 2] = match tall {
        true => [false, true].map(|t| (format!("tall tiles {t}"), Some(t), None)),
        false => [LLM_WG, CPU_WG].map(|w| (format!("kernel workgroup {w}"), None, Some(w))),
    };
    let mut gpus = Vec::new();
    for (_, tall_tiles, _) in &shapes {
        let options = GpuOptions { adapter: adapter.clone(), tall_tiles: *tall_tiles, ..Default::default() };
        gpus.push(block_on(Gpu::open(&options))?);
    }
    let mut forwards = Vec::new();
    for ((_, _, kernel_workgroup), gpu) in shapes.iter().zip(&gpus) {
        let options = ForwardOptions {
            context: depth + columns.max(64),
            kernel_workgroup: *kernel_workgroup,
            ..Default::default()
        };
        let mut forward = block_on(GpuForward::load(gpu, &file, &config, &options))?;
        // Any ids: the cache's depth, not its contents, sets the attention's work.
        let ids: Vec<u32> = (0..depth as u32).map(|i| 1000 + i % 5000).collect();
        if !ids.is_empty() {
            block_on(forward.forward(&ids, Keep::Last))?;
        }
        forwards.push(forward);
    }
    let tokens: Vec<u32> = (0..columns as u32).map(|i| 1000 + i).collect();
    let keep = |d: DispatchKind| kind == "all" || d.name() == kind;
    let mut times = [Vec::new(), Vec::new()];
    for round in 0..runs {
        // Each round starts with the other shape: neither always runs on a warmer machine.
        for turn in 0..2 {
            let i = (round + turn) % 2;
            let start = std::time::Instant::now();
            block_on(forwards[i].columns_only(&tokens, &keep))?;
            times[i].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!(
        "{kind}, {columns} token(s) at depth {depth}, {runs} alternating rounds on {}",
        gpus[0].platform().summary()
    );
    for ((label, _, _), t) in shapes.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let at = |q: usize| t[(runs * q / 10).min(runs - 1)];
        println!("{label}: median {:.3} ms, p10 {:.3}, p90 {:.3}", at(5), at(1), at(9));
    }
    Ok(())
}
