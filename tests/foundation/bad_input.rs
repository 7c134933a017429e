//! No byte sequence or shape makes construction, validation, decode, the oracle or row selection
//! panic, overflow or allocate without bound: errors are values.

use ninfer_wgpu::oracle;
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{EncodedTensor, Format, Layout, TensorDesc};

fn random_shape(rng: &mut Rng) -> Vec<usize> {
    let rank = [0usize, 1, 2, 2, 2, 2, 3][rng.below(7) as usize];
    (0..rank)
        .map(|_| match rng.below(10) {
            0 => 0,
            1 => usize::MAX >> rng.below(8),
            2 | 3 => 64 * (1 + rng.below(4) as usize),
            _ => 1 + rng.below(300) as usize,
        })
        .collect()
}

/// Runs every entry point; the test passes when none panics (a panic fails it).
fn exercise(t: &EncodedTensor, rng: &mut Rng) {
    let _ = t.validate();
    let _ = t.decode();
    let _ = oracle::dequant(t);
    if let [_, k] = t.shape() {
        let x = vec![0.5f32; *k];
        let _ = oracle::matvec(t, &x);
    }
    let _ = oracle::matvec(t, &[1.0]);
    let rows = t.geometry().rows().unwrap_or(1);
    let pick: Vec<u32> = (0..3).map(|_| rng.below(rows as u64 + 2) as u32).collect();
    let _ = t.gather_rows(&pick);
    let _ = t.slice_rows(0..usize::MAX);
    let _ = t.slice_rows(1..1);
}

#[test]
fn random_shapes_and_payloads_never_panic() {
    let seed = ninfer_wgpu::testgen::test_seed("bad-input fuzz").expect("seed");
    let mut rng = Rng::new(seed);
    let mut constructed = 0;
    // Most random descriptions are refused before a payload exists; go on until enough tensors
    // reached the decoders (bounded, so a regression in the generator cannot loop forever).
    for _ in 0..50_000 {
        if constructed == 500 {
            break;
        }
        let format = Format::ALL[rng.below(Format::COUNT as u64) as usize];
        let layout = Layout::ALL[rng.below(6) as usize];
        let layout = if rng.below(4) == 0 { layout } else { format.layout() };
        let shape = random_shape(&mut rng);
        let divisors = [1usize, 1, 1, 1, 1, 1, 2, 0, 3, usize::MAX][rng.below(10) as usize];
        let desc = TensorDesc { format, layout, shape, divisors };
        let expected = desc.encoded_bytes();
        let len = match expected {
            Ok(b) if b <= 1 << 20 && rng.below(4) != 0 => b,
            _ => rng.below(4096) as usize,
        };
        let payload: Vec<u8> = (0..len).map(|_| rng.next_u32() as u8).collect();
        if let Ok(t) = EncodedTensor::new(desc, payload) {
            constructed += 1;
            exercise(&t, &mut rng);
        }
    }
    assert_eq!(constructed, 500, "the fuzz reached the decoders");
}

#[test]
fn valid_tensors_with_flipped_bytes_never_panic() {
    use ninfer_wgpu::testgen::{random_words, Words};
    let seed = ninfer_wgpu::testgen::test_seed("byte-flip fuzz").expect("seed");
    let mut rng = Rng::new(seed);
    for format in Format::ALL.into_iter().filter(|f| f.category() != ninfer_wgpu::Category::GgufBlock) {
        let shape: Vec<usize> = if format == Format::Nvfp4 { vec![128, 64] } else { vec![3, 70] };
        let words = random_words(format, &shape, 1, &mut rng, Words::All).unwrap();
        let t = EncodedTensor::encode(&words, format.layout()).unwrap();
        for _ in 0..200 {
            let mut p = t.payload().to_vec();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(p.len() as u64) as usize;
                p[at] ^= 1 << rng.below(8);
            }
            let m = EncodedTensor::new(t.desc().clone(), p).unwrap();
            exercise(&m, &mut rng);
        }
    }
}

#[test]
fn overflowing_shapes_are_shape_errors() {
    for (format, layout, shape) in [
        (Format::Fp32, Layout::ContiguousLeV1, vec![usize::MAX, 2]),
        (Format::Q4G64Fp16, Layout::RowSplitK128V1, vec![1 << 40, 1 << 40]),
        (Format::Q4G64Fp16, Layout::RowSplitK128V1, vec![1, usize::MAX]),
        (Format::Nvfp4, Layout::BlockScaleK16M128x4V1, vec![1 << 62, 1 << 62]),
        (Format::Fp8E4m3fnRowFp16, Layout::RowInterleavedV1, vec![2, usize::MAX - 1]),
        (Format::Fp8E4m3fnRowBf16, Layout::RowScaleV1, vec![usize::MAX, usize::MAX]),
        (Format::GgufQ4_0, Layout::GgufBlocksV1, vec![usize::MAX, 1 << 60]),
    ] {
        let err = TensorDesc::new(format, layout, &shape).encoded_bytes().unwrap_err();
        assert!(err.to_string().contains("overflows"), "{format} {shape:?}: {err}");
    }
}
