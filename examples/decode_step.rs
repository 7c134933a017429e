//! Host cost of a decode step: gemma-3-270m's 127 products (per layer q 1024×640, k and v
//! 256×640, o 640×1024, gate and up 2048×640, down 640×2048, × 18 layers, then the 262144×640
//! output head), one column each, on random weights of the model's kinds (q5_0 where K = 640,
//! q4_K for o, q6_K for down, q8_0 for the head).
//!
//! Times, on one adapter: the host-slice calls (`Gpu::matmul`, a round trip each); the same
//! products as bound ops recorded into one pass, one submit and one wait per step; and the host
//! time of recording alone, per op. With `--no-head` the head is left out (its 178 MB dominate
//! a step's device time). With `--model gemma-3-270m-q4_k_m.gguf` it also times the model's own
//! token step on the same adapter in the same run (`GpuForward`: the same products on the file's
//! weights, the gather, the model's kernels and the logits read back), so the rows say where a
//! generated token's time goes.
//! `cargo run --release --example decode_step -- [ADAPTER] [--no-head] [--model PATH]`.

use ninfer_wgpu::bench::{median_time, Timing};
use ninfer_wgpu::gpu::{BoundOp, DeviceSlice, Gpu, GpuOptions, GpuTensor, Profile};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{random_activation, random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Error, Format};
use std::time::{Duration, Instant};

/// One layer's products: (format, N, K).
const LAYER: [(Format, usize, usize); 7] = [
    (Format::GgufQ5_0, 1024, 640),
    (Format::GgufQ5_0, 256, 640),
    (Format::GgufQ5_0, 256, 640),
    (Format::GgufQ4K, 640, 1024),
    (Format::GgufQ5_0, 2048, 640),
    (Format::GgufQ5_0, 2048, 640),
    (Format::GgufQ6K, 640, 2048),
];
const LAYERS: usize = 18;
const HEAD: (Format, usize, usize) = (Format::GgufQ8_0, 262144, 640);

fn upload(gpu: &Gpu, (format, n, k): (Format, usize, usize), rng: &mut Rng) -> Result<GpuTensor, Error> {
    let t = EncodedTensor::encode(&random_words(format, &[n, k], 1, rng, Words::Finite)?, format.layout())?;
    block_on(gpu.upload(&t.validate()?))
}

/// The model's own token step: a 16-token prompt, then one token per timed step (each a
/// submission and a read-back of the last logits).
fn model_step(gpu: &Gpu, path: &str, timing: Timing) -> Result<Duration, Error> {
    use ninfer_wgpu::gguf::reader::GgufFile;
    use ninfer_wgpu::llm::{GpuForward, Keep, ModelConfig};
    let file = GgufFile::open(path)?;
    let config = ModelConfig::from_gguf(&file)?;
    let mut forward = block_on(GpuForward::load(gpu, &file, &config, &Default::default()))?;
    block_on(forward.forward(&[2; 16], Keep::Last))?;
    median_time(timing, || block_on(forward.forward(&[2], Keep::Last)).map(|_| ()))
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let head = !args.iter().any(|a| a == "--no-head");
    let model = args.iter().position(|a| a == "--model").and_then(|i| args.get(i + 1)).cloned();
    let adapter = args.iter().enumerate().find(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--model"));
    let adapter = adapter.map(|(_, a)| a.clone());
    let gpu = block_on(Gpu::open(&GpuOptions { adapter, ..Default::default() }))?;
    let mut rng = Rng::new(1);
    // The 7 distinct layer shapes are uploaded once and used by every layer: the host cost is
    // per op, and 18 copies would only add upload time.
    let layer: Vec<GpuTensor> = LAYER.iter().map(|&s| upload(&gpu, s, &mut rng)).collect::<Result<_, _>>()?;
    let mut products: Vec<(&GpuTensor, usize, usize)> = Vec::new();
    for _ in 0..LAYERS {
        products.extend(layer.iter().zip(LAYER).map(|(t, (_, n, k))| (t, n, k)));
    }
    let head_tensor = if head { Some(upload(&gpu, HEAD, &mut rng)?) } else { None };
    if let Some(t) = &head_tensor {
        products.push((t, HEAD.1, HEAD.2));
    }
    let timing = Timing { warmup: 2, min_runs: 5, min_time: Duration::from_secs(2), max_runs: 50 };

    // Host-slice calls: x in, y back, a wait per call.
    let xs: Vec<Vec<f32>> = [640, 1024, 2048].iter().map(|&k| random_activation(k, &mut rng)).collect();
    let x_of = |k: usize| &xs[[640, 1024, 2048].iter().position(|&w| w == k).unwrap_or(0)];
    let host = median_time(timing, || {
        for &(t, _, k) in &products {
            block_on(gpu.matmul(t, x_of(k), 1))?;
        }
        Ok(())
    })?;

    // Bound ops: one x buffer per width, one y per product; one pass, one submit, one wait.
    let x_bufs: Vec<wgpu::Buffer> =
        xs.iter().map(|x| block_on(gpu.create_buffer_with(x, "x"))).collect::<Result<_, _>>()?;
    let x_buf = |k: usize| &x_bufs[[640, 1024, 2048].iter().position(|&w| w == k).unwrap_or(0)];
    let mut ops: Vec<BoundOp> = Vec::new();
    let mut ys = Vec::new();
    for &(t, n, k) in &products {
        let y = block_on(gpu.create_buffer(n as u64, "y"))?;
        let x = DeviceSlice::new(x_buf(k), 0, k as u64);
        ops.push(block_on(gpu.bind_matmul(t, Profile::A32, x, DeviceSlice::new(&y, 0, n as u64), 1))?);
        ys.push(y);
    }
    let record = |encoder: &mut wgpu::CommandEncoder| -> Result<(), Error> {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        for op in &ops {
            op.record(&mut pass, 1)?;
        }
        Ok(())
    };
    let bound = median_time(timing, || {
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        record(&mut encoder)?;
        gpu.queue().submit([encoder.finish()]);
        gpu.wait()
    })?;
    // Recording alone: encoder, records, finish; nothing submitted.
    let mut record_times = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        record(&mut encoder)?;
        drop(encoder.finish());
        record_times.push(t.elapsed());
    }
    record_times.sort();
    let recording = record_times[record_times.len() / 2];

    let n = products.len();
    println!("{} — {n} products{}", gpu.platform().summary(), if head { ", head included" } else { ", no head" });
    println!("| | per step ms | per product µs |");
    println!("|---|---|---|");
    let row = |what: &str, t: Duration| {
        println!("| {what} | {:.2} | {:.1} |", t.as_secs_f64() * 1e3, t.as_secs_f64() * 1e6 / n as f64)
    };
    row("host-slice calls (a round trip each)", host);
    row("bound ops, one submit and wait", bound);
    row("recording the bound ops (host only)", recording);
    if let Some(path) = model {
        let step = model_step(&gpu, &path, timing)?;
        println!(
            "| gemma3 token step (gather, products, the model's kernels, logits read back) | {:.2} | — |",
            step.as_secs_f64() * 1e3
        );
    }
    println!("host-slice / bound: {:.2}×", host.as_secs_f64() / bound.as_secs_f64());
    Ok(())
}
