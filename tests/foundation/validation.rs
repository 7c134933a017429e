//! Every invalid word class and every non-canonical padding byte is refused with the rule named;
//! the legal edges right beside them are accepted.

use ninfer_wgpu::layout::PayloadGeometry;
use ninfer_wgpu::{
    EncodedTensor, Error, Format, Fp8RowWords, GroupedWords, Layout, LogicalWords, Nvfp4Words, TensorDesc,
};

fn grouped(format: Format, n: usize, k: usize, fill: i8, scale: u16) -> EncodedTensor<'static> {
    let (group, ..) = format.grouped().unwrap();
    let w = GroupedWords { format, n, k, codes: vec![fill; n * k], scales: vec![scale; n * k.div_ceil(group)] };
    EncodedTensor::encode(&LogicalWords::Grouped(w), Layout::RowSplitK128V1).unwrap()
}

fn mutated(t: &EncodedTensor, edits: &[(usize, u8)]) -> EncodedTensor<'static> {
    let mut p = t.payload().to_vec();
    for &(at, v) in edits {
        p[at] = v;
    }
    EncodedTensor::new(t.desc().clone(), p).unwrap()
}

fn scale_offset(t: &EncodedTensor) -> usize {
    match t.geometry() {
        PayloadGeometry::RowSplit(g) => g.scale_offset,
        _ => unreachable!(),
    }
}

/// Asserts an invalid-word error whose rule contains `needle`.
#[track_caller]
fn refused(t: &EncodedTensor, needle: &str) {
    match t.validate() {
        Err(Error::InvalidWord { rule, .. }) => {
            assert!(rule.contains(needle), "rule `{rule}` should mention `{needle}`")
        }
        other => panic!("expected an invalid word ({needle}), got {other:?}"),
    }
    assert!(t.decode().is_err(), "decode refuses what validate refuses");
    assert!(ninfer_wgpu::oracle::dequant(t).is_err(), "the oracle refuses it too");
}

#[track_caller]
fn bad_padding(t: &EncodedTensor, needle: &str) {
    match t.validate() {
        Err(Error::Padding { location, .. }) => {
            assert!(location.contains(needle), "location `{location}` should mention `{needle}`")
        }
        other => panic!("expected a padding error at {needle}, got {other:?}"),
    }
}

#[test]
fn q8_code_minus_128_is_refused_and_minus_127_accepted() {
    let t = grouped(Format::Q8G32Fp16, 1, 32, -127, 0x3C00);
    t.validate().unwrap();
    refused(&mutated(&t, &[(5, 0x80)]), "-128");
}

#[test]
fn t2_word_0b10_is_refused() {
    let t = grouped(Format::T2G128Fp16, 1, 128, -1, 0x3C00);
    t.validate().unwrap();
    // Byte 0 holds lanes 0..3 as 0b11 each; make lane 2 the word 0b10.
    refused(&mutated(&t, &[(0, 0b11_10_11_11)]), "0b10");
}

#[test]
fn grouped_scales_refuse_minus_zero_inf_and_nan() {
    for format in [Format::Q4G64Fp16, Format::Q5G64Fp16, Format::Q6G64Fp16, Format::Q8G32Fp16, Format::T2G128Fp16] {
        let t = grouped(format, 2, 70, 1, 0xBC00);
        t.validate().unwrap_or_else(|e| panic!("{format}: negative scales are ordinary multipliers: {e}"));
        let at = scale_offset(&t) + 2;
        refused(&mutated(&t, &[(at, 0x00), (at + 1, 0x80)]), "-0");
        refused(&mutated(&t, &[(at, 0x00), (at + 1, 0x7C)]), "finite");
        refused(&mutated(&t, &[(at, 0x01), (at + 1, 0xFC)]), "finite");
        // +0 with nonzero codes is refused; +0 with zero codes is the canonical zero group.
        refused(&mutated(&t, &[(at, 0x00), (at + 1, 0x00)]), "+0 scale");
        let zero = grouped(format, 1, 70, 0, 0x0000);
        zero.validate().unwrap();
        let subnormal = grouped(format, 1, 70, 1, 0x0001);
        subnormal.validate().unwrap();
    }
}

#[test]
fn q2_keeps_every_finite_scale_but_refuses_inf_and_nan() {
    for scale in [0x0000u16, 0x8000, 0x0001, 0xFBFF] {
        grouped(Format::Q2G64Fp16, 1, 64, 2, scale).validate().unwrap_or_else(|e| panic!("q2 scale {scale:#06x}: {e}"));
    }
    let t = grouped(Format::Q2G64Fp16, 1, 64, 2, 0x3C00);
    let at = scale_offset(&t);
    refused(&mutated(&t, &[(at, 0x00), (at + 1, 0x7C)]), "finite");
    refused(&mutated(&t, &[(at, 0x00), (at + 1, 0xFE)]), "finite");
}

#[test]
fn row_split_padding_must_be_canonical() {
    // q4 [1, 65]: lanes 65..127 of group 1 are padding lanes, groups >= 2 do not exist (K_pad 128).
    let t = grouped(Format::Q4G64Fp16, 1, 65, 3, 0x3C00);
    bad_padding(&mutated(&t, &[(32 + 1, 0x10)]), "group 1");
    bad_padding(&mutated(&t, &[(100, 0x01)]), "gap");
    // q8 [1, 33]: groups 2 and 3 are padding groups: scale 0 and codes 0.
    let t = grouped(Format::Q8G32Fp16, 1, 33, 3, 0x3C00);
    let at = scale_offset(&t);
    bad_padding(&mutated(&t, &[(at + 4, 0x01)]), "padding group 2");
    bad_padding(&mutated(&t, &[(3 * 32, 0x01)]), "padding group 3");
    // q2 padding lanes are word 1 (byte 0x55), not zero bytes.
    let t = grouped(Format::Q2G64Fp16, 1, 65, 2, 0x3C00);
    assert_eq!(t.payload()[16 + 1], 0x55);
    bad_padding(&mutated(&t, &[(16 + 1, 0x00)]), "group 1");
    // q5/q6 high planes pad with zeros too.
    let t = grouped(Format::Q6G64Fp16, 1, 65, -1, 0x3C00);
    let PayloadGeometry::RowSplit(g) = t.geometry().clone() else { panic!() };
    bad_padding(&mutated(&t, &[(g.high_offset + 16 + 8, 0x04)]), "high plane");
}

fn nvfp4() -> EncodedTensor<'static> {
    let w = Nvfp4Words {
        n: 128,
        k: 64,
        codes: vec![0xF; 128 * 64],
        scales: vec![0x7E; 128 * 4],
        divisors: vec![0.5f32.to_bits()],
    };
    EncodedTensor::encode(&LogicalWords::Nvfp4(w), Layout::BlockScaleK16M128x4V1).unwrap()
}

#[test]
fn nvfp4_scales_and_divisors() {
    let t = nvfp4();
    t.validate().unwrap();
    let (scale_at, divisor_at) = (4096 + 17, 4608);
    refused(&mutated(&t, &[(scale_at, 0x80)]), "sign bit zero");
    refused(&mutated(&t, &[(scale_at, 0x88)]), "sign bit zero");
    refused(&mutated(&t, &[(scale_at, 0x7F)]), "NaN");
    mutated(&t, &[(scale_at, 0x00)]).validate().unwrap();
    for bad in [0.0f32, -0.0, -1.0, f32::INFINITY, f32::NAN] {
        let b = bad.to_le_bytes();
        refused(
            &mutated(&t, &[(divisor_at, b[0]), (divisor_at + 1, b[1]), (divisor_at + 2, b[2]), (divisor_at + 3, b[3])]),
            "strictly positive",
        );
    }
    let tiny = f32::from_bits(1).to_le_bytes();
    mutated(
        &t,
        &[(divisor_at, tiny[0]), (divisor_at + 1, tiny[1]), (divisor_at + 2, tiny[2]), (divisor_at + 3, tiny[3])],
    )
    .validate()
    .unwrap();
}

fn fp8(format: Format, layout: Layout, codes: Vec<u8>, scale: u16) -> EncodedTensor<'static> {
    let w = Fp8RowWords { format, n: 1, k: codes.len(), codes, scales: vec![scale] };
    EncodedTensor::encode(&LogicalWords::Fp8Row(w), layout).unwrap()
}

#[test]
fn fp8_codes_and_row_scales() {
    for (format, layout, scale_at, inf) in [
        (Format::Fp8E4m3fnRowBf16, Layout::RowScaleV1, 256, 0x7F80u16),
        (Format::Fp8E4m3fnRowFp16, Layout::RowInterleavedV1, 4, 0x7C00),
    ] {
        let t = fp8(format, layout, vec![0x7E, 0xFE, 0x01, 0x80], 0x3C00);
        t.validate().unwrap();
        refused(&mutated(&t, &[(1, 0xFF)]), "NaN");
        refused(&mutated(&t, &[(2, 0x7F)]), "NaN");
        let set = |w: u16| [(scale_at, w as u8), (scale_at + 1, (w >> 8) as u8)];
        refused(&mutated(&t, &set(0x8000)), "sign bit zero");
        refused(&mutated(&t, &set(0xBC00)), "sign bit zero");
        refused(&mutated(&t, &set(inf)), "finite");
        refused(&mutated(&t, &set(inf | 1)), "finite");
        refused(&mutated(&t, &set(0x0000)), "signed-zero codes");
        mutated(&t, &set(0x0001)).validate().unwrap();
        fp8(format, layout, vec![0x00, 0x80, 0x80, 0x00], 0x0000).validate().unwrap();
    }
    let t = fp8(Format::Fp8E4m3fnRowBf16, Layout::RowScaleV1, vec![1, 2], 0x3C00);
    bad_padding(&mutated(&t, &[(200, 1)]), "gap");
}

#[test]
fn encoders_refuse_invalid_words_instead_of_storing_them() {
    let w = GroupedWords { format: Format::Q8G32Fp16, n: 1, k: 2, codes: vec![-128, 0], scales: vec![0x3C00] };
    assert!(matches!(
        EncodedTensor::encode(&LogicalWords::Grouped(w), Layout::RowSplitK128V1),
        Err(Error::InvalidWord { .. })
    ));
    let w = GroupedWords { format: Format::Q4G64Fp16, n: 1, k: 2, codes: vec![8, 0], scales: vec![0x3C00] };
    assert!(
        matches!(
            EncodedTensor::encode(&LogicalWords::Grouped(w), Layout::RowSplitK128V1),
            Err(Error::InvalidWord { .. })
        ),
        "+8 is not a q4 code"
    );
    let w = GroupedWords { format: Format::Q4G64Fp16, n: 1, k: 2, codes: vec![0, 0], scales: vec![] };
    assert!(
        matches!(EncodedTensor::encode(&LogicalWords::Grouped(w), Layout::RowSplitK128V1), Err(Error::Words(_))),
        "scale count checked"
    );
    let w = Fp8RowWords { format: Format::Fp8E4m3fnRowBf16, n: 1, k: 1, codes: vec![1], scales: vec![0x3C00] };
    assert!(
        matches!(
            EncodedTensor::encode(&LogicalWords::Fp8Row(w), Layout::RowInterleavedV1),
            Err(Error::FormatLayout { .. })
        ),
        "bf16 rows live in row_scale_v1"
    );
}

#[test]
fn construction_names_the_rule_and_the_expected_value() {
    let desc = TensorDesc::new(Format::Q4G64Fp16, Layout::RowSplitK128V1, &[1, 65]);
    match EncodedTensor::new(desc, vec![0u8; 257]) {
        Err(Error::PayloadSize { expected: 260, actual: 257, .. }) => {}
        other => panic!("{other:?}"),
    }
    let cases = [
        (TensorDesc::new(Format::Q4G64Fp16, Layout::ContiguousLeV1, &[1, 64]), "row_split_k128_v1"),
        (TensorDesc::new(Format::Q4G64Fp16, Layout::RowSplitK128V1, &[64]), "rank is 2"),
        (TensorDesc::new(Format::Q4G64Fp16, Layout::RowSplitK128V1, &[0, 64]), "positive"),
        (TensorDesc::new(Format::Nvfp4, Layout::BlockScaleK16M128x4V1, &[100, 64]), "N % 128"),
        (TensorDesc::new(Format::Nvfp4, Layout::BlockScaleK16M128x4V1, &[128, 48]), "K % 64"),
        (TensorDesc::new(Format::Nvfp4, Layout::BlockScaleK16M128x4V1, &[256, 64]).with_divisors(4), "multiple of 128"),
        (TensorDesc::new(Format::Fp32, Layout::ContiguousLeV1, &[2]).with_divisors(2), "divisors is 1"),
        (TensorDesc::new(Format::Fp32, Layout::ContiguousLeV1, &[1; 17]), "rank is 0..16"),
        (TensorDesc::new(Format::GgufQ8_0, Layout::GgufBlocksV1, &[1, 33]), "K % block_values"),
    ];
    for (desc, needle) in cases {
        let err = EncodedTensor::new(desc.clone(), vec![]).unwrap_err().to_string();
        assert!(err.contains(needle), "{desc:?}: `{err}` should name `{needle}`");
    }
}
