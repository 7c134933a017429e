//! The oracle's reconstruction equations and its f64 product.

use ninfer_wgpu::oracle::{dequant, matvec, Dequantized};
use ninfer_wgpu::{DirectWords, EncodedTensor, Error, Format, GroupedWords, Layout, LogicalWords, Nvfp4Words};

fn f32s(t: &EncodedTensor) -> Vec<f32> {
    match dequant(t).unwrap() {
        Dequantized::F32(v) => v,
        Dequantized::I32(_) => panic!("float tensor"),
    }
}

#[test]
fn grouped_weights_are_signed_scale_times_code() {
    // q4 [1, 130]: group 0 scale -0.5 (a negative scale is an ordinary multiplier), group 1 the
    // smallest subnormal 2^-24, group 2 the largest finite 65504.
    let mut codes = vec![0i8; 130];
    codes[0] = -8;
    codes[1] = 7;
    codes[64] = 7;
    codes[128] = -8;
    let w = GroupedWords { format: Format::Q4G64Fp16, n: 1, k: 130, codes, scales: vec![0xB800, 0x0001, 0x7BFF] };
    let t = EncodedTensor::encode(&LogicalWords::Grouped(w), Layout::RowSplitK128V1).unwrap();
    let v = f32s(&t);
    assert_eq!(v[0], 4.0, "-0.5 * -8");
    assert_eq!(v[1], -3.5);
    assert_eq!(v[2].to_bits(), 0x8000_0000, "code 0 times a negative scale is -0");
    assert_eq!(v[64], 7.0 * 2f32.powi(-24), "subnormal scale kept exactly");
    assert_eq!(v[128], -8.0 * 65504.0);
    // q2 is offset coded: word 0 means -1.
    let w = GroupedWords { format: Format::Q2G64Fp16, n: 1, k: 4, codes: vec![-1, 0, 1, 2], scales: vec![0x4000] };
    let t = EncodedTensor::encode(&LogicalWords::Grouped(w), Layout::RowSplitK128V1).unwrap();
    assert_eq!(f32s(&t), vec![-2.0, 0.0, 2.0, 4.0]);
}

#[test]
fn nvfp4_divides_once_by_its_own_sources_divisor() {
    let n = 256;
    let mut codes = vec![0u8; n * 64];
    codes[0] = 0x7; // 6.0
    codes[200 * 64 + 17] = 0xA; // -1.0
    let w = Nvfp4Words { n, k: 64, codes, scales: vec![0x7E; n * 4], divisors: vec![3f32.to_bits(), 7f32.to_bits()] };
    let t = EncodedTensor::encode(&LogicalWords::Nvfp4(w), Layout::BlockScaleK16M128x4V1).unwrap();
    let v = f32s(&t);
    assert_eq!(v[0], 896.0, "6 * 448 / 3");
    assert_eq!(v[200 * 64 + 17], -448.0f32 / 7.0, "row 200 belongs to the second source");
    assert_eq!(v[1].to_bits(), 0, "+0 code");
}

#[test]
fn matvec_accumulates_in_f64_from_exact_weights() {
    let words = vec![1.0f32, 2.0, -3.0, 1e-8, 1e8, -1e8].into_iter().map(f32::to_bits).collect();
    let w = DirectWords { format: Format::Fp32, shape: vec![2, 3], words };
    let t = EncodedTensor::encode(&LogicalWords::Direct(w), Layout::ContiguousLeV1).unwrap();
    let r = matvec(&t, &[1.0, 0.5, 2.0]).unwrap();
    assert_eq!(r.y[0], 1.0 + 1.0 - 6.0);
    assert_eq!(r.y[1], 1e-8f32 as f64 + 0.5e8 - 2e8, "f64 keeps the small term an f32 sum would lose");
    assert_eq!(r.abs[0], 1.0 + 1.0 + 6.0);
}

#[test]
fn matvec_refuses_int32_wrong_rank_and_wrong_x() {
    let w = DirectWords { format: Format::Int32, shape: vec![1, 2], words: vec![1, 2] };
    let t = EncodedTensor::encode(&LogicalWords::Direct(w), Layout::ContiguousLeV1).unwrap();
    assert!(matches!(matvec(&t, &[1.0, 1.0]), Err(Error::Unsupported(m)) if m.contains("int32 has no matmul")));
    let w = DirectWords { format: Format::Bf16, shape: vec![2], words: vec![0x3F80, 0x4000] };
    let t = EncodedTensor::encode(&LogicalWords::Direct(w), Layout::ContiguousLeV1).unwrap();
    assert!(matches!(matvec(&t, &[1.0, 1.0]), Err(Error::Unsupported(_))), "rank 1 has no matvec");
    let w = DirectWords { format: Format::Bf16, shape: vec![1, 2], words: vec![0x3F80, 0x4000] };
    let t = EncodedTensor::encode(&LogicalWords::Direct(w), Layout::ContiguousLeV1).unwrap();
    assert!(matches!(matvec(&t, &[1.0]), Err(Error::Shape { .. })));
    assert_eq!(matvec(&t, &[1.0, 0.25]).unwrap().y, vec![1.5]);
}
