//! The README's Rust quick start, compiled (tests/readme.rs keeps the two identical):
//! `cargo run --example quick_start` with a `model.gguf` holding `blk.0.ffn_up.weight`.

use ninfer_wgpu::gpu::{Gpu, GpuOptions, Profile};
use ninfer_wgpu::model::Model;
use ninfer_wgpu::native::block_on;
use std::path::Path;

fn main() -> Result<(), ninfer_wgpu::Error> {
    // The adapter NINFER_WGPU_ADAPTER names, else the most preferred one; or set `adapter`.
    let gpu = block_on(Gpu::open(&GpuOptions::default()))?;
    // A GGUF file or a .ninfer artifact, memory-mapped and told apart by its first bytes.
    let model = Model::open(Path::new("model.gguf"))?;
    let w = model.tensor("blk.0.ffn_up.weight")?; // EncodedTensor: format, layout, [N, K], payload
    let uploaded = block_on(gpu.upload(&w.validate()?))?; // only a validated payload uploads
    let k = w.shape()[1];
    let x = vec![0.5f32; 2 * k]; // two activation columns of K values, back to back
    let y = block_on(gpu.matmul(&uploaded, &x, 2))?; // A32: two columns of N outputs
    let y8 = block_on(gpu.matmul_in(&uploaded, &x, 2, Profile::A8))?; // q8_1 activation
    let rows = block_on(gpu.gather(&uploaded, &[3, 17, 5]))?; // exact binary32 words, request order
    println!("{} {} {}", y.len(), y8.len(), rows.len());
    Ok(())
}
