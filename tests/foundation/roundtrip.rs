//! encode → decode round trips of random logical words for every layout and the awkward shapes.

use ninfer_wgpu::testgen::{self, random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Format, Layout};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

const KS: [usize; 8] = [1, 63, 64, 65, 127, 128, 129, 4304];
const NS: [usize; 4] = [1, 3, 128, 256];

/// The native matrix formats and the layouts they use, nvfp4 aside (it has its own shapes).
fn matrix_formats() -> Vec<(Format, Layout)> {
    Format::ALL
        .into_iter()
        .filter(|f| {
            matches!(
                f.layout(),
                Layout::RowSplitK128V1 | Layout::RowScaleV1 | Layout::RowInterleavedV1 | Layout::ContiguousLeV1
            )
        })
        .map(|f| (f, f.layout()))
        .collect()
}

fn round_trip(format: Format, layout: Layout, shape: &[usize], divisors: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let words = random_words(format, shape, divisors, &mut rng, Words::All).unwrap();
    let t = EncodedTensor::encode(&words, layout).unwrap_or_else(|e| panic!("{format} {shape:?} seed {seed}: {e}"));
    assert_eq!(t.payload().len(), t.desc().encoded_bytes().unwrap());
    let back = t.decode().unwrap_or_else(|e| panic!("{format} {shape:?} seed {seed}: {e}"));
    assert_eq!(back, words, "{format} {shape:?} seed {seed}: words survive the layout");
    // A borrowed payload makes the same tensor without a copy.
    let borrowed = EncodedTensor::new(t.desc().clone(), t.payload()).unwrap();
    assert_eq!(borrowed.decode().unwrap(), words);
}

#[test]
fn every_matrix_layout_round_trips_the_awkward_shapes() {
    for (format, layout) in matrix_formats() {
        for &n in &NS {
            for &k in &KS {
                // Keep the biggest cases to the grouped formats' interesting K.
                if n * k > 256 * 4304 {
                    continue;
                }
                round_trip(format, layout, &[n, k], 1, (n * 10_000 + k) as u64);
            }
        }
    }
}

#[test]
fn nvfp4_round_trips_its_allowed_shapes() {
    for (n, k, divisors) in [(128, 64, 1), (128, 128, 1), (256, 64, 2), (256, 4352, 1), (384, 192, 3)] {
        round_trip(Format::Nvfp4, Layout::BlockScaleK16M128x4V1, &[n, k], divisors, (n + k) as u64);
    }
}

#[test]
fn direct_formats_round_trip_every_rank() {
    for format in [Format::Bf16, Format::Fp32, Format::Int32] {
        for shape in [vec![], vec![5], vec![2, 3, 4], vec![1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]] {
            round_trip(format, Layout::ContiguousLeV1, &shape, 1, 99);
        }
    }
}

proptest! {
    // proptest's own generator seeded from NINFER_WGPU_SEED too, so one variable replays it.
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: RngSeed::Fixed(testgen::test_seed("round trips").expect("seed")),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_shapes_and_words_round_trip(index in 0usize..11, n in 1usize..6, k in 1usize..300, seed in any::<u64>()) {
        let formats = matrix_formats();
        let (format, layout) = formats[index % formats.len()];
        round_trip(format, layout, &[n, k], 1, seed);
    }

    #[test]
    fn nvfp4_random_words_round_trip(tiles in 1usize..3, kq in 1usize..4, seed in any::<u64>()) {
        round_trip(Format::Nvfp4, Layout::BlockScaleK16M128x4V1, &[128 * tiles, 64 * kq], tiles, seed);
    }
}
