//! Times the first product of a format on one adapter with its default variant, once per kernel
//! the platform binds for it (one column, up to 8, the tiled kernels): binding (which compiles
//! the kernel) and a first dispatch over a small tensor (shader compile time is most of a conformance run on CPU drivers, and GL
//! compiles at the first dispatch). Mesa caches compiled shaders, so run it with MESA_SHADER_CACHE_DISABLE=true.
//! `cargo run --release --example compile_time -- ADAPTER FORMAT [a32|a8]`; the assembled
//! kernels are also written to `target/kernel-NAME.wgsl` (j1, j8, tiled, tiled_tall, tall_j1).
use ninfer_wgpu::gpu::kernels::{assemble, Columns, KernelKey};
use ninfer_wgpu::gpu::{capability, BindOptions, DeviceSlice, Gpu, GpuOptions, Profile};
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
    let (n, k) = (64, 1024);
    let words = random_words(format, &[n, k], 1, &mut rng, Words::Finite)?;
    let tensor = EncodedTensor::encode(&words, format.layout())?;
    let uploaded = block_on(gpu.upload_for(&tensor.trusted(), profile))?;
    // The variant the platform runs by default: the one the one-column kernel is built for.
    let (op, platform) = (profile.op(), gpu.platform());
    let variant = capability::best_variant(format, op, platform);
    let tiled = capability::tiled_variant(variant, platform);
    // In the order a bound product compiles them, so that each bind below compiles only the
    // kernel it times (the ones before it are cached on the device).
    for columns in Columns::ALL {
        let (kernel_variant, tiled_from) = match columns {
            Columns::One | Columns::UpToMax => (variant, u32::MAX),
            // From 2, so that the one column of its own is not bound with it.
            Columns::Tiled | Columns::TiledTall => (tiled, 2),
            Columns::TallOneColumn => (tiled, 1),
        };
        let key = KernelKey::new(format, op, kernel_variant, columns);
        if !columns.exists(format, op, kernel_variant) {
            continue;
        }
        let bound_here = match columns {
            Columns::Tiled | Columns::TiledTall | Columns::TallOneColumn => {
                capability::tiled_columns(op, tiled, platform) == columns
                    || (columns == Columns::TallOneColumn
                        && capability::tiled_columns(op, tiled, platform) == Columns::TiledTall)
            }
            Columns::One | Columns::UpToMax => true,
        };
        if !bound_here {
            println!("{}: not the kernel this platform binds", key.label());
            continue;
        }
        std::fs::write(format!("target/kernel-{}.wgsl", columns.name()), assemble(key)?)?;
        let count = columns.capacity() as u32;
        let x = block_on(gpu.create_buffer_with(&random_activation(k * count as usize, &mut rng), "x"))?;
        let y = block_on(gpu.create_buffer((n * count as usize) as u64, "y"))?;
        let options = BindOptions { variant: Some(variant), tiled_from: Some(tiled_from) };
        let t = Instant::now();
        let bound = block_on(gpu.bind_matmul_with(
            &uploaded,
            profile,
            options,
            DeviceSlice::new(&x, 0, k as u64),
            DeviceSlice::new(&y, 0, n as u64),
            count,
        ))?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        bound.encode(&mut encoder, count)?;
        gpu.queue().submit([encoder.finish()]);
        gpu.wait()?;
        println!("{} on {}: {:.2} s", key.label(), platform.summary(), t.elapsed().as_secs_f64());
    }
    Ok(())
}
