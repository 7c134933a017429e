//! Benchmarks on one adapter: median kernel time, effective bandwidth in encoded bytes read per
//! second, and the ratio to the same adapter's buffer-copy bandwidth measured in the same run.
//! Native only: it reads the clock and blocks on the device.

use crate::error::{Error, Result};
use crate::format::Format;
use crate::gpu::capability::{self, Status};
use crate::gpu::plan::Request;
use crate::gpu::{BindOptions, DeviceSlice, Gpu, Op, Profile};
use crate::native::block_on;
use crate::tensor::{EncodedTensor, TensorDesc};
use crate::testgen::{random_activation, random_words, Rng, Words};
use serde::Serialize;
use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

/// Timing policy: a few warm-up runs, then runs until both counts and time are reached.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub warmup: usize,
    pub min_runs: usize,
    pub min_time: Duration,
    pub max_runs: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing { warmup: 2, min_runs: 5, min_time: Duration::from_millis(500), max_runs: 200 }
    }
}

impl Timing {
    /// One warm-up run and exactly `runs` timed ones, however long they take.
    pub fn fixed(runs: NonZeroUsize) -> Self {
        let runs = runs.get();
        Timing { warmup: 1, min_runs: runs, min_time: Duration::ZERO, max_runs: runs }
    }
}

/// Median wall time of `f`, each run waited for.
pub fn median_time(timing: Timing, mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    for _ in 0..timing.warmup {
        f()?;
    }
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < timing.max_runs && (times.len() < timing.min_runs || start.elapsed() < timing.min_time) {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Bytes per second of a buffer-to-buffer copy of `bytes` bytes (each byte read once).
pub fn copy_bandwidth(gpu: &Gpu, bytes: u64, timing: Timing) -> Result<f64> {
    let bytes = bytes.min(gpu.platform().limits.max_buffer_size) / 4 * 4;
    let make = |label| {
        gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    };
    let (src, dst) = (make("copy source"), make("copy destination"));
    let t = median_time(timing, || {
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&src, 0, &dst, 0, bytes);
        gpu.queue().submit([encoder.finish()]);
        gpu.wait()
    })?;
    Ok(bytes as f64 / t.as_secs_f64())
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    pub format: &'static str,
    pub op: &'static str,
    pub variant: &'static str,
    /// Activation columns (matmul), 1 otherwise.
    pub columns: usize,
    pub n: usize,
    pub k: usize,
    pub encoded_bytes: u64,
    pub median_ms: f64,
    pub gb_per_s: f64,
    /// Effective bandwidth over the adapter's copy bandwidth.
    pub copy_ratio: f64,
    /// Dispatches per run.
    pub passes: usize,
    /// Products: the kernel the run took (`j1`, `j8` in groups of 8 columns, `tiled`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<&'static str>,
    /// Whether the payload was uploaded in row tiles (`--row-tiles`; src/gpu/plan/tiles.rs).
    pub row_tiles: bool,
    /// Products through the tiled kernel: its rows an invocation (4, or 8 on CPU drivers:
    /// `--tall-tiles`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiled_rows: Option<u32>,
}

/// The largest tensor a bench generates: random words are made on the host before upload, so
/// the shape is checked first.
pub const MAX_BENCH_ELEMENTS: usize = 1 << 30;

/// Refuses a bench shape over [`MAX_BENCH_ELEMENTS`] before anything is allocated.
pub fn check_shape(n: usize, k: usize) -> Result<()> {
    if n.checked_mul(k).is_none_or(|e| e > MAX_BENCH_ELEMENTS) {
        return Err(Error::Unsupported(format!(
            "bench shape {n}x{k} is over the {MAX_BENCH_ELEMENTS}-element bench limit"
        )));
    }
    Ok(())
}

/// Times one (format, op) at [n, k] with `options` (default: the fastest supported variant and
/// the platform's crossover to the tiled kernel); `columns` is matmul's J (gather times `n`
/// random rows). Products run as a bound op on device operands, as an engine runs them.
#[allow(clippy::too_many_arguments)]
pub fn bench_case(
    gpu: &Gpu,
    format: Format,
    op: Op,
    options: BindOptions,
    columns: usize,
    (n, k): (usize, usize),
    copy_gbs: f64,
    timing: Timing,
    rng: &mut Rng,
) -> Result<BenchRow> {
    check_shape(n, k)?;
    let layout = format.layout();
    // Sizes against the device before a single random word is made.
    let payload = TensorDesc::new(format, layout, &[n, k]).encoded_bytes()?;
    let output = match op {
        Op::Matmul | Op::MatmulA8 => n * columns * 4,
        Op::Dequant | Op::Gather => n * k * 4,
    };
    let max = gpu.platform().limits.max_buffer_size;
    if payload as u64 > max || output as u64 > max {
        return Err(Error::Unsupported(format!(
            "{format} {n}x{k}: a {payload}-byte payload and a {output}-byte output, but max_buffer_size is {max}"
        )));
    }
    let variant = options.variant.unwrap_or_else(|| capability::best_variant(format, op, gpu.platform()));
    if let Status::Unsupported(reason) = capability::status(format, layout, op, variant, Some(gpu.platform())) {
        return Err(Error::Unsupported(reason));
    }
    let words = random_words(format, &[n, k], 1, rng, Words::Finite)?;
    let tensor = EncodedTensor::encode(&words, layout)?;
    // Arranged as the op's profile would have it (row tiles for A32's one column on a CPU
    // driver, rows as stored for A8's), unless `--row-tiles` says otherwise.
    let profile = if op == Op::MatmulA8 { Profile::A8 } else { Profile::A32 };
    let uploaded = block_on(gpu.upload_for(&tensor.trusted(), profile))?;
    let bytes = uploaded.payload_bytes();
    let row_tiles = uploaded.placement().tiles.is_some();
    let (t, passes, kernel, tiled_rows) = match op {
        Op::Matmul | Op::MatmulA8 => {
            let stride = k.div_ceil(4) * 4;
            let x = block_on(gpu.create_buffer_with(&random_activation(stride * columns, rng), "bench x"))?;
            let y = block_on(gpu.create_buffer((n * columns) as u64, "bench y"))?;
            let xs = DeviceSlice::new(&x, 0, k as u64).with_stride(stride as u64);
            let options = BindOptions { variant: Some(variant), ..options };
            let ys = DeviceSlice::new(&y, 0, n as u64);
            let bound = block_on(gpu.bind_matmul_with(&uploaded, profile, options, xs, ys, columns as u32))?;
            let t = median_time(timing, || {
                let mut encoder = gpu.device().create_command_encoder(&Default::default());
                bound.encode(&mut encoder, columns as u32)?;
                gpu.queue().submit([encoder.finish()]);
                gpu.wait()
            })?;
            let count = columns as u32;
            (t, bound.dispatches(count)?, Some(bound.kernel(count)?), bound.tiled_rows(count)?)
        }
        Op::Dequant | Op::Gather => {
            let rows: Vec<u32> = (0..n).map(|_| rng.below(n as u64) as u32).collect();
            let request = if op == Op::Dequant { Request::Dequant } else { Request::Gather { rows: &rows } };
            let prepared = block_on(gpu.prepare(&uploaded, request, variant, &[]))?;
            let t = median_time(timing, || {
                prepared.submit(gpu)?;
                gpu.wait()
            })?;
            (t, prepared.passes(), None, None)
        }
    };
    let gbs = bytes as f64 / t.as_secs_f64() / 1e9;
    Ok(BenchRow {
        format: format.name(),
        op: op.name(),
        variant: variant.name(),
        columns,
        n,
        k,
        encoded_bytes: bytes,
        median_ms: t.as_secs_f64() * 1e3,
        gb_per_s: gbs,
        copy_ratio: gbs / copy_gbs,
        passes,
        kernel,
        row_tiles,
        tiled_rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_timing_runs_one_warm_up_and_exactly_the_runs_asked() {
        for runs in [1, 3] {
            let mut calls = 0;
            median_time(Timing::fixed(NonZeroUsize::new(runs).unwrap()), || {
                calls += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(calls, runs + 1, "Timing::fixed({runs})");
        }
    }
}
