//! criterion benches of the matvec kernels at 4096×4096 on the default adapter (or
//! NINFER_WGPU_ADAPTER). Throughput is the encoded payload, so criterion's bytes/s is the
//! effective bandwidth; `ninfer-wgpu bench` adds the ratio to the adapter's copy bandwidth.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ninfer_wgpu::gpu::{capability, Gpu, GpuOptions, Op};
use ninfer_wgpu::testgen::{random_activation, random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Format};
use std::time::Duration;

const N: usize = 4096;
const K: usize = 4096;

fn matvec(c: &mut Criterion) {
    let gpu = match Gpu::open(&GpuOptions::default()) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("no adapter, matvec benches skipped: {e}");
            return;
        }
    };
    let mut group = c.benchmark_group(format!("matvec {N}x{K} on {}", gpu.platform().name));
    group.sample_size(10).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_millis(500));
    let mut rng = Rng::new(42);
    let with_matvec: Vec<Format> = capability::kernel_keys().into_iter().filter(|k| k.op == Op::Matvec).map(|k| k.format).collect();
    for format in Format::ALL.into_iter().filter(|f| with_matvec.contains(f)) {
        let tensor = EncodedTensor::encode(&random_words(format, &[N, K], 1, &mut rng, Words::Finite).expect("words"), format.spec().layouts[0]).expect("encode");
        let uploaded = gpu.upload(&tensor).expect("upload");
        let x = random_activation(K, &mut rng);
        let variant = capability::best_variant(format, Op::Matvec, gpu.platform());
        let prepared = gpu.prepare(&uploaded, Op::Matvec, variant, Some(&x)).expect("prepare");
        group.throughput(Throughput::Bytes(uploaded.payload_bytes()));
        group.bench_function(format!("{format}/{}", variant.name()), |b| b.iter(|| prepared.run(&gpu).expect("run")));
    }
    group.finish();
}

criterion_group!(benches, matvec);
criterion_main!(benches);
