//! Times the first product of a format on one adapter with its default variant, once per kernel
//! it has (one column, and up to MAX_COLUMNS): pipeline creation and a first dispatch over a
//! small tensor (shader compile time is most of a conformance run on CPU drivers, and GL
//! compiles at the first dispatch). Mesa caches compiled shaders, so run it with MESA_SHADER_CACHE_DISABLE=true.
//! `cargo run --release --example compile_time -- ADAPTER FORMAT [a32|a8]`; the assembled
//! kernels are also written to `target/kernel-j1.wgsl` and `target/kernel-j8.wgsl`.
use ninfer_wgpu::gpu::capability;
use ninfer_wgpu::gpu::kernels::{assemble, Columns, KernelKey};
use ninfer_wgpu::gpu::plan::Request;
use ninfer_wgpu::gpu::{Gpu, GpuOptions, Profile};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::tensor::EncodedTensor;
use ninfer_wgpu::testgen::{random_activation, random_words, Rng, Words};
use ninfer_wgpu::Format;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [adapter, format, rest @ ..] = args.as_slice() else {
        return Err("usage: compile_time ADAPTER FORMAT [a32|a8]".into());
    };
    let format: Format = format.parse()?;
    let profile = match rest.first() {
        Some(p) => Profile::parse(p).ok_or(format!("unknown profile {p}: a32 or a8"))?,
        None => Profile::A32,
    };
    let gpu = block_on(Gpu::open(&GpuOptions { adapter: Some(adapter.clone()), ..Default::default() }))?;
    let mut rng = Rng::new(1);
    let shape = [64, 1024];
    let words = random_words(format, &shape, 1, &mut rng, Words::Finite)?;
    let tensor = EncodedTensor::encode(&words, format.layout())?;
    let uploaded = block_on(gpu.upload(&tensor.trusted()))?;
    // The variant the platform runs by default: the one the one-column kernel is built for.
    let variant = capability::best_variant(format, profile.op(), gpu.platform());
    for columns in Columns::ALL.into_iter().rev().filter(|c| c.exists(format, profile.op(), variant)) {
        let count = columns.capacity();
        let key = KernelKey::new(format, profile.op(), variant, columns);
        std::fs::write(format!("target/kernel-{}.wgsl", columns.name()), assemble(key)?)?;
        let xs = random_activation(shape[1] * count, &mut rng);
        let request = match profile {
            Profile::A32 => Request::Matmul { columns: count },
            Profile::A8 => Request::MatmulA8 { columns: count },
        };
        let t = Instant::now();
        let prepared = block_on(gpu.prepare(&uploaded, request, variant, &xs))?;
        block_on(prepared.run_and_read(&gpu))?;
        println!("{} on {}: {:.2} s", key.label(), gpu.platform().summary(), t.elapsed().as_secs_f64());
    }
    Ok(())
}
