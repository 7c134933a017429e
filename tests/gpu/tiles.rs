//! Row tiles (src/gpu/plan/tiles.rs) against rows as stored: the same kernels read the same
//! words from other places, so every op gives bit-identical results, in buffers split and
//! windowed too, on every adapter, and the tiled device meets the oracle.

use super::{bits, open, selectors};
use ninfer_wgpu::conformance::{self, Verdict};
use ninfer_wgpu::gpu::plan::Arrangement;
use ninfer_wgpu::gpu::{capability, GpuOptions, Op, Variant};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{self, random_activation, random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Error, Format};

/// Both tiled layout families (the legacy, k-quant and grid gguf blocks; row_split's byte,
/// nibble-and-high-bit and crumb packings), each over 48 KiB with a tail of rows past the last
/// whole tile.
fn cases() -> Vec<(Format, Vec<usize>)> {
    vec![
        (Format::GgufQ5_0, vec![1500, 64]),
        (Format::GgufQ4K, vec![400, 256]),
        (Format::GgufIq2Xs, vec![700, 256]),
        (Format::Q8G32Fp16, vec![400, 96]),
        (Format::Q5G64Fp16, vec![350, 200]),
        (Format::Q2G64Fp16, vec![1500, 128]),
    ]
}

#[test]
fn row_tiles_give_the_results_of_rows_as_stored() {
    let seed = testgen::test_seed("row tiles").expect("seed");
    let mut rng = Rng::new(seed);
    // 48 KiB buffers and bindings: every case is split over buffers and windowed.
    let small = GpuOptions { max_buffer_size: Some(48 << 10), max_binding: Some(48 << 10), ..Default::default() };
    for selector in selectors() {
        let arranged = |arrangement| GpuOptions { arrangement: Some(arrangement), ..small.clone() };
        let Some(tiles) = open(&selector, arranged(Arrangement::RowTiles)) else { continue };
        let Some(rows) = open(&selector, arranged(Arrangement::RowByRow)) else { continue };
        for (format, shape) in cases() {
            let what = format!("{selector} seed {seed}: {format} {shape:?}");
            let w = random_words(format, &shape, 1, &mut rng, Words::Finite).unwrap();
            let t = EncodedTensor::encode(&w, format.layout()).unwrap();
            let a = block_on(tiles.upload(&t.validate().unwrap())).unwrap();
            let b = block_on(rows.upload(&t.validate().unwrap())).unwrap();
            let whole = shape[0] / 32 * 32;
            assert_eq!(a.placement().tiles.as_ref().map(|t| t.tiled_rows()), Some(whole as u64), "{what}: tiled");
            assert!(b.placement().tiles.is_none(), "{what}: as stored");
            assert!(a.placement().segments.len() > 1, "{what}: split over buffers");
            assert_eq!(block_on(tiles.dequant(&a)).unwrap(), block_on(rows.dequant(&b)).unwrap(), "{what}: dequant");
            let ids = conformance::gather_rows(shape[0], &mut rng);
            assert_eq!(
                block_on(tiles.gather(&a, &ids)).unwrap(),
                block_on(rows.gather(&b, &ids)).unwrap(),
                "{what}: gather"
            );
            let best = capability::best_variant(format, Op::Matmul, tiles.platform());
            // One column by rows (a CPU driver's best variant) and matvec's kernel, the
            // 8-column kernel, the tiled kernel; A8 where the format has it.
            for (op, variant, columns) in [
                (Op::Matmul, best, 1),
                (Op::Matmul, Variant::Workgroup, 1),
                (Op::Matmul, best, 3),
                (Op::Matmul, best, 70),
                (Op::MatmulA8, Variant::Workgroup, 3),
            ] {
                let x = random_activation(shape[1] * columns, &mut rng);
                let (ya, yb) = match (
                    block_on(tiles.product(&a, &x, columns, op, variant)),
                    block_on(rows.product(&b, &x, columns, op, variant)),
                ) {
                    (Ok(ya), Ok(yb)) => (ya, yb),
                    (Err(Error::Unsupported(_)), Err(Error::Unsupported(_))) => continue,
                    (ra, rb) => panic!("{what} {op:?} {variant:?}×{columns}: {ra:?} / {rb:?}"),
                };
                assert_eq!(bits(&ya), bits(&yb), "{what} {op:?} {variant:?}×{columns}: tiles and rows differ");
            }
            let case = block_on(conformance::run_case(&tiles, format, Op::Matmul, best, &shape, 1, &mut rng)).unwrap();
            assert_eq!(case.verdict, Verdict::Pass, "{what}, tiled, against the oracle: {}", case.detail);
        }
    }
}
