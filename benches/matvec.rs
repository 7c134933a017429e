//! criterion benches of the matmul kernels at 4096×4096 on the default adapter (or
//! NINFER_WGPU_ADAPTER), for J = 1 (matvec) and J = 8 columns. Throughput is the encoded
//! payload, so criterion's bytes/s is the effective bandwidth; `ninfer-wgpu bench` adds the
//! ratio to the adapter's copy bandwidth.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ninfer_wgpu::gpu::plan::Request;
use ninfer_wgpu::gpu::{capability, Gpu, GpuOptions, Op};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{random_activation, random_words, Rng, Words};
use ninfer_wgpu::{Category, EncodedTensor, Format};
use std::time::Duration;

const N: usize = 4096;
const K: usize = 4096;

fn matmul(c: &mut Criterion) {
    let gpu = match block_on(Gpu::open(&GpuOptions::default())) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("no adapter, matmul benches skipped: {e}");
            return;
        }
    };
    let mut group = c.benchmark_group(format!("matmul {N}x{K} on {}", gpu.platform().name));
    group.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    let mut rng = Rng::new(42);
    for format in Format::ALL.into_iter().filter(|f| f.category() != Category::DirectInt) {
        let tensor = EncodedTensor::encode(
            &random_words(format, &[N, K], 1, &mut rng, Words::Finite).expect("words"),
            format.layout(),
        )
        .expect("encode");
        let uploaded = block_on(gpu.upload(&tensor.trusted())).expect("upload");
        let variant = capability::best_variant(format, Op::Matmul, gpu.platform());
        for columns in [1, 8] {
            let xs = random_activation(K * columns, &mut rng);
            let prepared =
                block_on(gpu.prepare(&uploaded, Request::Matmul { columns }, variant, &xs)).expect("prepare");
            group.throughput(Throughput::Bytes(uploaded.payload_bytes()));
            group.bench_function(format!("{format}/x{columns}/{}", variant.name()), |b| {
                b.iter(|| {
                    prepared.submit(&gpu).expect("submit");
                    gpu.wait().expect("wait")
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, matmul);
criterion_main!(benches);
