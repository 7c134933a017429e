//! criterion benches of payload validation at 4096×14336 (a real projection's size) for every
//! layout family with word rules: the fast scan, which every load runs, and the word-by-word
//! reference it falls back to on a fault. Throughput is payload bytes.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ninfer_wgpu::layout;
use ninfer_wgpu::testgen::{random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Format};
use std::time::Duration;

const SHAPE: [usize; 2] = [4096, 14336];

fn validate(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!("validate {}x{}", SHAPE[0], SHAPE[1]));
    group.sample_size(10).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(300));
    let mut rng = Rng::new(42);
    for format in [
        Format::Q4G64Fp16,
        Format::Q8G32Fp16,
        Format::T2G128Fp16,
        Format::Fp8E4m3fnRowBf16,
        Format::Fp8E4m3fnRowFp16,
        Format::Nvfp4,
    ] {
        let words = random_words(format, &SHAPE, 1, &mut rng, Words::Finite).expect("words");
        let t = EncodedTensor::encode(&words, format.layout()).expect("encode");
        group.throughput(Throughput::Bytes(t.payload().len() as u64));
        group.bench_function(format!("{format} scan"), |b| b.iter(|| t.validate().expect("valid")));
        group.bench_function(format!("{format} reference"), |b| {
            b.iter(|| layout::validate_reference(t.geometry(), t.shape(), t.payload()).expect("valid"))
        });
    }
    group.finish();
}

criterion_group!(benches, validate);
criterion_main!(benches);
