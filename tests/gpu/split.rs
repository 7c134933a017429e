//! Tensors larger than one buffer: split over small buffers and windows, against the
//! single-buffer run and, over 8 MiB, against the oracle.

use super::{bits, first_gpu};
use ninfer_wgpu::conformance::{self, Verdict};
use ninfer_wgpu::gpu::plan::Arrangement;
use ninfer_wgpu::gpu::plan::Request;
use ninfer_wgpu::gpu::{Gpu, GpuOptions, PayloadWriter, Profile, Variant};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{self, random_activation, random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Error, Format};

/// One case per layout family (and an i-quant, whose grid is a fourth binding), each payload
/// over 1 MiB.
fn split_cases() -> Vec<(Format, Vec<usize>, usize)> {
    vec![
        (Format::Q4G64Fp16, vec![600, 4096], 1),
        (Format::Q5G64Fp16, vec![400, 4100], 1),
        // A 128-row tile of nvfp4 output must fit one 256 KiB binding: K = 256.
        (Format::Nvfp4, vec![8192, 256], 2),
        (Format::Fp8E4m3fnRowBf16, vec![300, 4001], 1),
        (Format::Fp8E4m3fnRowFp16, vec![300, 4001], 1),
        (Format::Bf16, vec![300, 2001], 1),
        (Format::GgufQ4K, vec![1024, 2048], 1),
        (Format::GgufIq2Xxs, vec![2048, 2048], 1),
        // 17-byte blocks, 33 to a row: rows of an odd byte count start at every byte offset.
        (Format::GgufMxfp4, vec![2001, 1056], 1),
    ]
}

/// `payload` through a [`PayloadWriter`] in chunks of 1 to 7 bytes or up to 70 KB.
fn streamed_upload(
    gpu: &Gpu,
    desc: ninfer_wgpu::TensorDesc,
    payload: &[u8],
    rng: &mut Rng,
) -> ninfer_wgpu::gpu::GpuTensor {
    let mut w = block_on(PayloadWriter::new(gpu, desc, payload.len() as u64, Profile::A32)).unwrap();
    let mut at = 0;
    while at < payload.len() {
        let n = match rng.below(4) {
            0 => 1 + rng.below(7) as usize,
            _ => 1 + rng.below(70_000) as usize,
        };
        let n = n.min(payload.len() - at);
        w.push(gpu, &payload[at..at + n], &mut |_, _| ()).unwrap();
        at += n;
    }
    w.finish(gpu).unwrap()
}

#[test]
fn tensors_split_over_1_mib_buffers_give_the_results_of_one_buffer() {
    let Some(full) = first_gpu(GpuOptions::default()) else { return };
    let limits = GpuOptions { max_buffer_size: Some(1 << 20), max_binding: Some(256 << 10), ..Default::default() };
    let Some(split) = first_gpu(GpuOptions { arrangement: Some(Arrangement::RowByRow), ..limits.clone() }) else {
        return;
    };
    let Some(tiled) = first_gpu(GpuOptions { arrangement: Some(Arrangement::RowTiles), ..limits.clone() }) else {
        return;
    };
    // Every case needs more than 1 MiB of buffers.
    let Some(poor) = first_gpu(GpuOptions { max_memory: Some(1 << 20), ..limits }) else { return };
    let seed = testgen::test_seed("split buffers").expect("seed");
    let mut rng = Rng::new(seed);
    for (format, shape, divisors) in split_cases() {
        let words = random_words(format, &shape, divisors, &mut rng, Words::Finite).unwrap();
        let t = EncodedTensor::encode(&words, format.layout()).unwrap();
        let v = t.validate().unwrap();
        let mut reported = 0;
        let a = block_on(full.upload(&v)).unwrap();
        let b = block_on(split.upload_with_progress(&v, Profile::A32, &mut |done, total| {
            assert!(done > reported && done <= total);
            reported = done;
        }))
        .unwrap();
        assert_eq!(a.placement().segments.len(), 1);
        assert!(b.placement().segments.len() > 1, "{format}: {} buffers", b.placement().segments.len());
        assert_eq!(reported, b.placement().segments.iter().map(|r| r.end - r.start).sum::<u64>());
        // A budget below what the buffers need is refused before any allocation, naming both.
        match block_on(poor.upload(&v)) {
            Err(Error::Unsupported(m)) => assert!(m.contains("1048576") && m.contains("needs"), "{m}"),
            other => panic!("{format}: over the budget: {:?}", other.err()),
        }
        let whole = block_on(full.dequant(&a)).unwrap();
        assert_eq!(whole, block_on(split.dequant(&b)).unwrap(), "{format}: split dequant");
        // The payload pushed as a stream brings it, in chunks of any size, into several
        // buffers, rows as stored and in row tiles.
        for gpu in [&split, &tiled] {
            let c = streamed_upload(gpu, v.desc().clone(), v.payload(), &mut rng);
            assert_eq!(whole, block_on(gpu.dequant(&c)).unwrap(), "{format}: streamed upload (seed {seed})");
        }
        let mut streamed = Vec::new();
        block_on(split.dequant_to(&b, &mut |w| {
            streamed.extend_from_slice(w);
            Ok(())
        }))
        .unwrap();
        assert_eq!(whole, streamed, "{format}: dequant streamed to a sink");
        // Rows from every block, in one call.
        let rows = conformance::gather_rows(shape[0], &mut rng);
        assert_eq!(
            block_on(full.gather(&a, &rows)).unwrap(),
            block_on(split.gather(&b, &rows)).unwrap(),
            "{format}: split gather"
        );
        let columns = 3;
        let x = random_activation(shape[1] * columns, &mut rng);
        for variant in [Variant::Workgroup, Variant::Subgroup] {
            match (
                block_on(full.matmul_with(&a, &x, columns, variant)),
                block_on(split.matmul_with(&b, &x, columns, variant)),
            ) {
                (Ok(ya), Ok(yb)) => assert_eq!(bits(&ya), bits(&yb), "{format} {variant:?}: split matmul"),
                (Err(Error::Unsupported(_)), Err(Error::Unsupported(_))) if variant == Variant::Subgroup => {}
                (ra, rb) => panic!("{format} {variant:?}: {ra:?} / {rb:?}"),
            }
        }
    }
}

/// One tensor over 8 MiB per layout family (row_scale and row_interleaved each), the size of a
/// small model's layer, where the fast tier's shapes all stay far below 1 MiB.
fn over_8_mib_cases() -> Vec<(Format, Vec<usize>, usize)> {
    vec![
        (Format::Bf16, vec![2048, 2100], 1),
        // K not a multiple of 128 (the row_split chunk) nor of 64 (the group).
        (Format::Q4G64Fp16, vec![2001, 8400], 1),
        (Format::Nvfp4, vec![8192, 2048], 2),
        (Format::Fp8E4m3fnRowBf16, vec![2200, 4001], 1),
        (Format::Fp8E4m3fnRowFp16, vec![2200, 4001], 1),
        (Format::GgufQ4K, vec![1024, 16384], 1),
    ]
}

/// Tensors split over 2 MiB buffers and read through 1 MiB windows, judged against the oracle
/// by conformance's criteria, not against the single-buffer GPU run (a defect shared by both
/// paths passes that comparison). Gather takes rows from every buffer; a one-column matmul
/// reads every window. On the first adapter only (lavapipe in CI): buffers and windows are
/// planned on the host from the limits alone, the same on every adapter, and lavapipe is the
/// fastest of CI's three CPU adapters.
#[test]
fn tensors_over_8_mib_in_split_buffers_and_windows_meet_the_oracle() {
    let limits = GpuOptions { max_buffer_size: Some(2 << 20), max_binding: Some(1 << 20), ..Default::default() };
    let Some(gpu) = first_gpu(limits) else { return };
    let seed = testgen::test_seed("over 8 MiB, split").expect("seed");
    let mut rng = Rng::new(seed);
    for (format, shape, divisors) in over_8_mib_cases() {
        let words = random_words(format, &shape, divisors, &mut rng, Words::Finite).unwrap();
        let t = EncodedTensor::encode(&words, format.layout()).unwrap();
        let what = format!("{format} ({}) {shape:?}", t.layout().name());
        assert!(t.payload().len() > 8 << 20, "{what}: {} bytes", t.payload().len());
        let up = block_on(gpu.upload(&t.validate().unwrap())).unwrap();
        let buffers = up.placement().segments.len();
        assert!(buffers >= 4, "{what}: {buffers} buffers");
        // A buffer larger than one binding can only be read through several windows.
        let largest = up.placement().segments.iter().map(|r| r.end - r.start).max().unwrap_or(0);
        assert!(largest > 1 << 20, "{what}: the largest buffer, {largest} bytes, fits one binding");
        let rows = conformance::gather_rows(shape[0], &mut rng);
        let x = random_activation(shape[1], &mut rng);
        let passes = |request, x: &[f32]| block_on(gpu.prepare(&up, request, Variant::Workgroup, x)).unwrap().passes();
        let gather_passes = passes(Request::Gather { rows: &rows }, &[]);
        let matmul_passes = passes(Request::Matmul { columns: 1 }, &x);
        assert!(gather_passes > 1 && matmul_passes > 1, "{what}: {gather_passes} and {matmul_passes} passes");
        println!("{what}: {buffers} buffers, gather {gather_passes} and matmul {matmul_passes} passes");
        for r in [
            block_on(conformance::check_gather(&gpu, &t, &rows)).unwrap(),
            block_on(conformance::check_matmul(&gpu, &t, &x, 1, Variant::Workgroup)).unwrap(),
        ] {
            println!("  {} {}: {:?}, {:.3e} of its bound {}", r.op, r.criterion, r.verdict, r.of_bound, r.detail);
            assert_ne!(r.verdict, Verdict::Fail, "{what} {} vs the oracle: {}", r.op, r.detail);
        }
    }
}

/// GGUF q8_0 blocks uploaded as q8_g32_fp16 a piece at a time (`Gpu::upload_q8_from_q8_0`, how a
/// model's Q8_0 token table reaches the device), in one buffer and split over 1 MiB buffers:
/// both dequantize to the oracle's q8_0 weights bit for bit, and gather the oracle's rows.
#[test]
fn q8_0_uploaded_as_q8_g32_dequantizes_to_the_q8_0_weights() {
    use ninfer_wgpu::encode::import::Q8FromQ8_0;
    use ninfer_wgpu::oracle::{dequant, Dequantized};
    use ninfer_wgpu::{Layout, TensorDesc};
    let Some(full) = first_gpu(GpuOptions::default()) else { return };
    let limits = GpuOptions { max_buffer_size: Some(1 << 20), max_binding: Some(256 << 10), ..Default::default() };
    let Some(split) = first_gpu(limits) else { return };
    let seed = testgen::test_seed("q8_0 as q8_g32").expect("seed");
    let mut rng = Rng::new(seed);
    let (n, k) = (2048, 640);
    let mut blocks = Vec::with_capacity(n * k / 32 * 34);
    for _ in 0..n * k / 32 {
        // Finite scales of either sign (never -0), codes in [-127, 127]: what q8_g32_fp16 holds.
        let d = (rng.below(0x7800) as u16 + 0x0400) | if rng.below(2) == 0 { 0 } else { 0x8000 };
        blocks.extend(d.to_le_bytes());
        blocks.extend((0..32).map(|_| rng.range(-127, 127) as i8 as u8));
    }
    let t = EncodedTensor::new(TensorDesc::new(Format::GgufQ8_0, Layout::GgufBlocksV1, &[n, k]), blocks).unwrap();
    let Dequantized::F32(exact) = dequant(&t).unwrap() else { panic!("q8_0 dequantizes to f32") };
    let view = Q8FromQ8_0::new(n, k, t.payload()).unwrap();
    for (gpu, buffers) in [(&full, 1), (&split, 2)] {
        let up = block_on(gpu.upload_q8_from_q8_0(&view, Profile::A32)).unwrap();
        assert_eq!(up.desc().format, Format::Q8G32Fp16);
        assert!(up.placement().segments.len() >= buffers, "{} buffers", up.placement().segments.len());
        let words = block_on(gpu.dequant(&up)).unwrap();
        assert!(words == bits(&exact), "{} buffers: the weights differ (seed {seed})", up.placement().segments.len());
        let rows = conformance::gather_rows(n, &mut rng);
        let gathered = block_on(gpu.gather(&up, &rows)).unwrap();
        let expected: Vec<f32> = rows.iter().flat_map(|&r| exact[r as usize * k..][..k].to_vec()).collect();
        assert!(gathered == bits(&expected), "gathered rows differ (seed {seed})");
    }
}
