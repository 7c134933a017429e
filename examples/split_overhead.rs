//! Upload throughput from a memory map, and what splitting costs: a tensor of an artifact
//! uploaded and multiplied (J = 1 and 8) on one device with its own limits and on one whose
//! buffers are capped, timed in the same run.
//!
//! `cargo run --release --example split_overhead -- ARTIFACT TENSOR [MAX_BUFFER_BYTES]`

use ninfer_wgpu::bench::{median_time, Timing};
use ninfer_wgpu::container::Artifact;
use ninfer_wgpu::gpu::plan::Request;
use ninfer_wgpu::gpu::{Gpu, GpuOptions, Variant};
use ninfer_wgpu::native::block_on;
use std::time::Instant;

fn main() -> Result<(), ninfer_wgpu::Error> {
    let args: Vec<String> = std::env::args().collect();
    let [_, file, tensor, rest @ ..] = args.as_slice() else {
        eprintln!("usage: split_overhead ARTIFACT TENSOR [MAX_BUFFER_BYTES]");
        std::process::exit(2);
    };
    let cap: u64 = rest.first().and_then(|s| s.parse().ok()).unwrap_or(4 << 20);
    let artifact = Artifact::open(file)?;
    let t = artifact.tensor(tensor)?;
    let v = t.validate()?;
    let k = t.shape()[1];
    let bytes = t.payload().len() as f64;
    for (label, options) in [
        ("own limits", GpuOptions::default()),
        ("capped", GpuOptions { max_buffer_size: Some(cap), max_binding: Some(cap / 4), ..Default::default() }),
    ] {
        let gpu = block_on(Gpu::open(&options))?;
        let start = Instant::now();
        let up = block_on(gpu.upload(&v))?;
        gpu.wait()?;
        let upload = start.elapsed().as_secs_f64();
        print!("{label:<11} {} buffers, upload {:.0} MB/s", up.placement().segments.len(), bytes / upload / 1e6);
        for columns in [1, 8] {
            let x = vec![0.5f32; k * columns];
            let prepared = block_on(gpu.prepare(&up, Request::Matmul { columns }, Variant::Workgroup, &x))?;
            let t = median_time(Timing::default(), || {
                prepared.submit(&gpu)?;
                gpu.wait()
            })?;
            print!(", J={columns} {:.2} ms ({} passes)", t.as_secs_f64() * 1e3, prepared.passes());
        }
        println!();
    }
    Ok(())
}
