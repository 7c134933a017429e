//! The GPU side of hostile input: computed NaN words equal the CPU's, and an output over the
//! device's buffer limit is a short error of ours, not a driver's validation dump.

use ninfer_wgpu::gpu::{self, Gpu, GpuOptions};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::oracle::{self, Dequantized};
use ninfer_wgpu::testgen::{random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Format, Layout, TensorDesc};

/// Adapters as tests/gpu/main.rs chooses them: `NINFER_WGPU_EXPECT` (CI names its three), else every
/// backend found. A missing expected adapter fails under `CI=true`.
fn adapters(options: GpuOptions) -> Vec<Gpu> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let selectors: Vec<String> = match std::env::var("NINFER_WGPU_EXPECT") {
        Ok(list) => list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        Err(_) => {
            let mut b: Vec<String> =
                block_on(gpu::adapters()).into_iter().map(|a| a.platform.backend.to_lowercase()).collect();
            b.dedup();
            b
        }
    };
    assert!(!ci || !selectors.is_empty(), "CI=true but no adapter is expected");
    selectors
        .into_iter()
        .filter_map(|s| match block_on(Gpu::open(&GpuOptions { adapter: Some(s.clone()), ..options.clone() })) {
            Ok(g) => Some(g),
            Err(e) if ci => panic!("CI=true and adapter `{s}` is missing: {e}"),
            Err(e) => {
                eprintln!("skipping `{s}`: {e}");
                None
            }
        })
        .collect()
}

fn oracle_words(t: &EncodedTensor) -> Vec<u32> {
    match oracle::dequant(t).unwrap() {
        Dequantized::F32(v) => v.into_iter().map(f32::to_bits).collect(),
        Dequantized::I32(v) => v.into_iter().map(|i| i as u32).collect(),
    }
}

#[test]
fn nan_words_computed_from_gguf_blocks_are_the_same_on_cpu_and_gpu() {
    // q8_0 blocks (f16 d, 32 i8 codes): a NaN scale with a payload, a negative NaN, and an
    // infinite scale over a zero code (inf * 0: x86's default NaN is 0xffc00000).
    let mut bytes = Vec::new();
    for d in [0x7E01u16, 0xFE00, 0x7C00] {
        bytes.extend(d.to_le_bytes());
        bytes.extend((0..32).map(|i| (i as i8 - 16) as u8));
    }
    let q8 = EncodedTensor::new(TensorDesc::new(Format::GgufQ8_0, Layout::GgufBlocksV1, &[3, 32]), bytes).unwrap();
    let expect = oracle_words(&q8);
    assert!(expect.iter().filter(|&&w| w == ninfer_wgpu::gguf::COMPUTED_NAN).count() >= 65, "NaN words: {expect:x?}");
    assert!(expect.iter().all(|&w| !f32::from_bits(w).is_nan() || w == ninfer_wgpu::gguf::COMPUTED_NAN));
    for gpu in adapters(GpuOptions::default()) {
        let up = block_on(gpu.upload(&q8.validate().unwrap())).unwrap();
        let got = block_on(gpu.dequant(&up)).unwrap();
        assert_eq!(got, expect, "{}: dequant words", gpu.platform().summary());
        let rows = block_on(gpu.gather(&up, &[2, 0])).unwrap();
        assert_eq!(rows, [&expect[64..96], &expect[0..32]].concat(), "{}: gathered words", gpu.platform().summary());
    }
}

#[test]
fn an_output_row_past_max_buffer_size_is_refused_in_one_short_sentence() {
    let mut rng = Rng::new(5);
    // Outputs larger than a buffer are split by rows; one row of 300,000 f32 outputs (1.2 MB)
    // cannot be, while its 160 KB of q4 payload fits a 1 MiB buffer.
    let words = random_words(Format::Q4G64Fp16, &[2, 300_000], 1, &mut rng, Words::Finite).unwrap();
    let t = EncodedTensor::encode(&words, Layout::RowSplitK128V1).unwrap();
    for gpu in adapters(GpuOptions { max_buffer_size: Some(1 << 20), ..Default::default() }) {
        let up = block_on(gpu.upload(&t.validate().unwrap())).unwrap();
        let e = block_on(gpu.dequant(&up)).unwrap_err().to_string();
        assert!(e.contains("max_buffer_size") && e.contains("1200000") && e.contains("1048576"), "{e}");
        assert!(e.len() < 300 && !e.contains('\n'), "one short sentence: {e}");
    }
}
