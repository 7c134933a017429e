//! The fast validity scan against its oracle, the word-by-word reference validator: the same
//! verdict on valid payloads and on thousands of mutated ones, for every layout family.

use ninfer_wgpu::layout::{self, PayloadGeometry};
use ninfer_wgpu::testgen::{random_words, Rng, Words};
use ninfer_wgpu::{Category, EncodedTensor, Format};

/// Shapes that reach every padding case: K below a group, K not a multiple of 128, several rows.
fn shapes(format: Format) -> Vec<(Vec<usize>, usize)> {
    match format.category() {
        Category::BlockScaledFloat => vec![(vec![128, 64], 1), (vec![256, 128], 2)],
        Category::DirectFloat | Category::DirectInt => vec![(vec![3, 4], 1), (vec![5], 1)],
        _ => vec![(vec![1, 1], 1), (vec![2, 33], 1), (vec![3, 130], 1), (vec![2, 300], 1)],
    }
}

/// One edit a hostile producer might make: a random byte, one flipped bit, or a zeroed run
/// (zero scales and zero code records are where the subtle rules live).
fn mutate(payload: &mut [u8], rng: &mut Rng) {
    let at = rng.below(payload.len() as u64) as usize;
    match rng.below(4) {
        0 => payload[at] = rng.next_u32() as u8,
        1 => payload[at] ^= 1 << rng.below(8),
        2 => {
            let end = (at + 1 + rng.below(64) as usize).min(payload.len());
            payload[at..end].fill(0);
        }
        _ => payload[at] = [0x00, 0x80, 0x7F, 0xFF, 0x55, 0xAA][rng.below(6) as usize],
    }
}

#[test]
fn scan_and_reference_agree_on_valid_and_mutated_payloads() {
    let seed = ninfer_wgpu::testgen::test_seed("scan").expect("seed");
    let mut rng = Rng::new(seed);
    for format in Format::ALL.into_iter().filter(|f| f.category() != Category::GgufBlock) {
        let layout = format.layout();
        for (shape, divisors) in shapes(format) {
            for words in [Words::All, Words::Finite] {
                let t =
                    EncodedTensor::encode(&random_words(format, &shape, divisors, &mut rng, words).unwrap(), layout)
                        .unwrap();
                let g: &PayloadGeometry = t.geometry();
                assert!(g.scan(t.payload()), "{format} {shape:?}: a valid payload passes the scan");
                let (mut accepted, mut refused) = (0, 0);
                for _ in 0..400 {
                    let mut p = t.payload().to_vec();
                    for _ in 0..1 + rng.below(2) {
                        mutate(&mut p, &mut rng);
                    }
                    let reference = layout::validate_reference(g, &shape, &p);
                    assert_eq!(
                        g.scan(&p),
                        reference.is_ok(),
                        "{format} {shape:?} (seed {seed}): scan and reference disagree; reference says {reference:?}"
                    );
                    match reference {
                        Ok(()) => accepted += 1,
                        Err(_) => refused += 1,
                    }
                }
                // Direct words have no invalid bit pattern; everything else must see both kinds.
                let has_rules = !matches!(format.category(), Category::DirectFloat | Category::DirectInt);
                assert!(!has_rules || (accepted > 0 && refused > 0), "{format} {shape:?}: {accepted} / {refused}");
            }
        }
    }
}
