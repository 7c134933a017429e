//! The judges on outputs of the wrong length and on flushed subnormals, without a GPU: a judge
//! that compared only the words both sides have, or that took a flush for a deviation on a
//! device whose probe saw none, would pass a broken kernel.

use super::*;
use crate::conformance::blank;

/// A reference of `n` outputs for one column of K = 1 with x = [1].
fn reference(y: &[f64]) -> oracle::MatvecReference {
    oracle::MatvecReference { y: y.to_vec(), abs: y.iter().map(|v| v.abs()).collect() }
}

fn a32(reference: &oracle::MatvecReference, flushes: Option<String>, got: &[f32]) -> (Verdict, String) {
    let case = MatmulCase {
        format: Format::Fp32,
        k: 1,
        xs: &[1.0],
        reference,
        touches_subnormals: vec![true; reference.y.len()],
        flushes,
    };
    let (verdict, _, _, detail) = judge_matmul(&case, got);
    (verdict, detail)
}

#[test]
fn every_judge_fails_a_short_or_long_output_naming_both_lengths() {
    let expect: Vec<u32> = [1.0f32, -2.0, 0.5, 3.0].iter().map(|v| v.to_bits()).collect();
    for (op, got) in [(Op::Dequant, &expect[..3]), (Op::Gather, &expect[..3])] {
        let mut result = blank(Format::Fp32, op, Variant::Workgroup, &[2, 2]);
        judge_words(&mut result, false, Format::Fp32, &expect, got);
        assert_eq!(result.verdict, Verdict::Fail, "{op:?}: {}", result.detail);
        assert!(result.detail.contains("3 words back, 4 expected"), "{op:?}: {}", result.detail);
    }
    let long = [&expect[..], &expect[..1]].concat();
    let (verdict, _, detail) = judge_dequant(Format::Fp32, false, &expect, &long);
    assert!(verdict == Verdict::Fail && detail.contains("5 words back, 4 expected"), "{detail}");

    let r = reference(&[1.0, -2.0, 0.5, 3.0]);
    let (verdict, detail) = a32(&r, None, &[1.0, -2.0, 0.5]);
    assert!(verdict == Verdict::Fail && detail.contains("3 outputs back, 4 expected"), "A32: {detail}");
    let (verdict, detail) = a32(&r, None, &[1.0, -2.0, 0.5, 3.0, 0.0]);
    assert!(verdict == Verdict::Fail && detail.contains("5 outputs back, 4 expected"), "A32: {detail}");
    assert_eq!(a32(&r, None, &[1.0, -2.0, 0.5, 3.0]).0, Verdict::Pass, "the full output passes");

    let model = oracle::A8Model { y: r.y.clone(), magnitude: r.abs.clone(), slack: vec![0.0; 4] };
    let j = judge_a8(&r, &model, 1, &[1.0, -2.0, 0.5]);
    assert!(j.verdict == Verdict::Fail && j.detail.contains("3 outputs back, 4 expected"), "A8: {}", j.detail);
    let j = judge_a8(&r, &model, 1, &[1.0, -2.0, 0.5, 3.0, 0.0]);
    assert!(j.verdict == Verdict::Fail && j.detail.contains("5 outputs back, 4 expected"), "A8: {}", j.detail);
}

#[test]
fn a_flushed_subnormal_is_a_deviation_only_where_the_probe_saw_flushing() {
    // The smallest positive subnormal, 2^-149, back as +0.
    let (expect, got) = ([1.0f32.to_bits(), 0x0000_0001], [1.0f32.to_bits(), 0]);
    let (verdict, _, detail) = judge_dequant(Format::Fp32, false, &expect, &got);
    assert_eq!(verdict, Verdict::Fail, "no flushing probed: {detail}");
    assert_eq!(judge_dequant(Format::Fp32, true, &expect, &got).0, Verdict::PlatformDeviation);
    // The wrong sign of zero is no flush, whatever the probe says.
    assert_eq!(judge_dequant(Format::Fp32, true, &expect, &[1.0f32.to_bits(), 0x8000_0000]).0, Verdict::Fail);

    // An exact output of 1e-40 (subnormal) back as 0.
    let r = reference(&[1e-40]);
    assert_eq!(a32(&r, None, &[0.0]).0, Verdict::Fail, "no flushing probed");
    assert_eq!(a32(&r, Some("probe".into()), &[0.0]).0, Verdict::PlatformDeviation);
}
