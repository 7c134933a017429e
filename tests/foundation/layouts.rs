//! Every known vector and worked geometry of layouts.md, byte for byte.

use ninfer_wgpu::layout::PayloadGeometry;
use ninfer_wgpu::oracle::{dequant, Dequantized};
use ninfer_wgpu::{
    DirectWords, EncodedTensor, Format, Fp8RowWords, GroupedWords, Layout, LogicalWords, Nvfp4Words, TensorDesc,
};

/// Scales of the known-bytes table: 1.5 and 0.25 as binary16.
const S1_5: u16 = 0x3E00;
const S0_25: u16 = 0x3400;

/// Row 0 of a [1, k] grouped tensor starting with `codes`, the rest zero; group scales cycle
/// through 1.5 and 0.25.
fn grouped_row(format: Format, k: usize, codes: &[i8]) -> EncodedTensor<'static> {
    let (group, ..) = format.grouped().unwrap();
    let mut all = vec![0i8; k];
    all[..codes.len()].copy_from_slice(codes);
    let scales = (0..k.div_ceil(group)).map(|g| [S1_5, S0_25][g % 2]).collect();
    EncodedTensor::encode(
        &LogicalWords::Grouped(GroupedWords { format, n: 1, k, codes: all, scales }),
        Layout::RowSplitK128V1,
    )
    .unwrap()
}

fn row_split(t: &EncodedTensor) -> ninfer_wgpu::layout::row_split::Geometry {
    match t.geometry() {
        PayloadGeometry::RowSplit(g) => g.clone(),
        other => panic!("not row split: {other:?}"),
    }
}

/// (format, K, codes, base bytes, high bytes, scale_offset): one row of the layouts.md table.
type GroupedVector = (Format, usize, &'static [i8], &'static [u8], &'static [u8], usize);

#[test]
fn known_bytes_of_the_grouped_formats() {
    let cases: [GroupedVector; 5] = [
        (Format::Q4G64Fp16, 65, &[-8, -7, -1, 0, 1, 7], &[0x98, 0x0f, 0x71], &[], 256),
        (Format::Q5G64Fp16, 130, &[-16, -15, -1, 0, 1, 15], &[0x10, 0x0f, 0xf1], &[0x07], 512),
        (Format::Q6G64Fp16, 65, &[-32, -31, -17, -16, -1, 0, 15, 31], &[0x10, 0x0f, 0x0f, 0xff], &[0xea, 0x43], 512),
        (Format::Q8G32Fp16, 33, &[-127, -1, 0, 1, 127], &[0x81, 0xff, 0x00, 0x01, 0x7f], &[], 256),
        (Format::T2G128Fp16, 130, &[-1, 0, 1, 1, -1, 0, 0, 1], &[0x53, 0x43], &[], 256),
    ];
    for (format, k, codes, base, high, scale_offset) in cases {
        let t = grouped_row(format, k, codes);
        let g = row_split(&t);
        let p = t.payload();
        assert_eq!(g.scale_offset, scale_offset, "{format} K={k} scale_offset");
        assert_eq!(&p[..base.len()], base, "{format} K={k} base bytes");
        assert_eq!(&p[g.high_offset..g.high_offset + high.len()], high, "{format} K={k} high bytes");
        assert_eq!(&p[scale_offset..scale_offset + 2], &S1_5.to_le_bytes(), "{format} group 0 scale");
        assert_eq!(&p[scale_offset + 2..scale_offset + 4], &S0_25.to_le_bytes(), "{format} group 1 scale");
        // And back: the decoded words are the ones written.
        let LogicalWords::Grouped(w) = t.decode().unwrap() else { panic!() };
        assert_eq!(&w.codes[..codes.len()], codes, "{format} codes decode back");
    }
    // q2: -1 0 1 2 are words 0 1 2 3, lowest lane lowest.
    let t = grouped_row(Format::Q2G64Fp16, 128, &[-1, 0, 1, 2]);
    assert_eq!(t.payload()[0], 0xe4);
    assert_eq!(t.payload()[1], 0x55, "code 0 is word 1: 0x55 for four zero codes");
}

#[test]
fn worked_geometry_q5_2x130() {
    let geometry = TensorDesc::new(Format::Q5G64Fp16, Layout::RowSplitK128V1, &[2, 130]).geometry().unwrap();
    let PayloadGeometry::RowSplit(g) = geometry else { panic!() };
    assert_eq!(
        (g.k_pad, g.gpr, g.base_bytes, g.high_offset, g.high_bytes, g.scale_offset, g.bytes),
        (256, 4, 256, 256, 64, 512, 528)
    );
    // Code (1, 129) = 15 (low nibble 0xF, high bit 0) or -1 (word 31: high bit 1): g 2, i 1, rec 6.
    let mut codes = vec![0i8; 260];
    codes[130 + 129] = -1;
    let scales = vec![S1_5; 6];
    let mut scales_marked = scales.clone();
    scales_marked[3 + 2] = 0x3C00; // row 1, group 2
    let t = EncodedTensor::encode(
        &LogicalWords::Grouped(GroupedWords { format: Format::Q5G64Fp16, n: 2, k: 130, codes, scales: scales_marked }),
        Layout::RowSplitK128V1,
    )
    .unwrap();
    let p = t.payload();
    assert_eq!(p.len(), 528);
    assert_eq!(p[192], 0xF0, "low nibble of code (1,129) is the high nibble of byte 192");
    assert_eq!(p[304], 0x02, "high bit of code (1,129) is bit 1 of byte 304");
    assert_eq!(&p[524..526], &[0x00, 0x3C], "scale of (1, group 2) at bytes 524..525");
}

#[test]
fn worked_payload_sizes() {
    for (format, shape, bytes) in [
        (Format::Q2G64Fp16, [2, 128], 264),
        (Format::T2G128Fp16, [1, 130], 260),
        (Format::Q4G64Fp16, [7168, 5120], 19_496_960),
        (Format::Q5G64Fp16, [2, 130], 528),
    ] {
        assert_eq!(
            TensorDesc::new(format, Layout::RowSplitK128V1, &shape).encoded_bytes(),
            Ok(bytes),
            "{format} {shape:?}"
        );
    }
}

#[test]
fn nvfp4_worked_geometry_and_swizzle() {
    let PayloadGeometry::BlockScale(g) =
        TensorDesc::new(Format::Nvfp4, Layout::BlockScaleK16M128x4V1, &[128, 64]).geometry().unwrap()
    else {
        panic!()
    };
    assert_eq!((g.code_bytes, g.scale_offset, g.scale_bytes, g.divisor_offset, g.bytes), (4096, 4096, 512, 4608, 4612));
    for row in 0..128 {
        for lane in 0..4 {
            assert_eq!(g.scale_index(row, lane), 4096 + (row % 32) * 16 + (row / 32) * 4 + lane);
        }
    }
    let PayloadGeometry::BlockScale(g) =
        TensorDesc::new(Format::Nvfp4, Layout::BlockScaleK16M128x4V1, &[256, 128]).geometry().unwrap()
    else {
        panic!()
    };
    assert_eq!(g.scale_index(200, 100 / 16), 16384 + 1674);
    assert_eq!((g.divisor_offset, g.bytes), (18432, 18436));
    // Element (200, 100) encodes into code byte 12850's low nibble and the swizzled scale byte.
    let mut w = Nvfp4Words {
        n: 256,
        k: 128,
        codes: vec![0; 256 * 128],
        scales: vec![0; 256 * 8],
        divisors: vec![2.0f32.to_bits()],
    };
    w.codes[200 * 128 + 100] = 0x7;
    w.codes[200 * 128 + 101] = 0x9;
    w.scales[200 * 8 + 6] = 0x38;
    let t = EncodedTensor::encode(&LogicalWords::Nvfp4(w), Layout::BlockScaleK16M128x4V1).unwrap();
    let p = t.payload();
    assert_eq!(p[12850], 0x97, "even k in the low nibble");
    assert_eq!(p[16384 + 1674], 0x38);
    assert_eq!(&p[18432..18436], &2.0f32.to_le_bytes());
    let Dequantized::F32(v) = dequant(&t).unwrap() else { panic!() };
    assert_eq!(v[200 * 128 + 100], 6.0 * 1.0 / 2.0, "e2m1 6 * e4m3 1.0 / d_w 2");
    assert_eq!(v[200 * 128 + 101], -0.5 / 2.0);
}

#[test]
fn row_scale_v1_example() {
    let codes = vec![0x00, 0x80, 0x38, 0xb8, 0x40, 0xc0, 0x7e, 0xfe];
    let w = Fp8RowWords {
        format: Format::Fp8E4m3fnRowBf16,
        n: 2,
        k: 4,
        codes: codes.clone(),
        scales: vec![0x3F00, 0x4000],
    };
    let t = EncodedTensor::encode(&LogicalWords::Fp8Row(w), Layout::RowScaleV1).unwrap();
    let p = t.payload();
    assert_eq!(p.len(), 260);
    assert_eq!(&p[..8], &codes[..]);
    assert!(p[8..256].iter().all(|&b| b == 0), "zero gap up to the 256 boundary");
    assert_eq!(&p[256..260], &[0x00, 0x3F, 0x00, 0x40]);
    let Dequantized::F32(v) = dequant(&t).unwrap() else { panic!() };
    let bits: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
    let expect: Vec<u32> = [0.0f32, -0.0, 0.5, -0.5, 4.0, -4.0, 896.0, -896.0].iter().map(|x| x.to_bits()).collect();
    assert_eq!(bits, expect, "0, -0, 0.5, -0.5 / 4, -4, 896, -896 (signed zeros included)");
}

#[test]
fn row_interleaved_v1_example() {
    let w = Fp8RowWords {
        format: Format::Fp8E4m3fnRowFp16,
        n: 2,
        k: 4,
        codes: vec![0, 128, 56, 184, 64, 192, 126, 254],
        scales: vec![0x3800, 0x4000],
    };
    let t = EncodedTensor::encode(&LogicalWords::Fp8Row(w), Layout::RowInterleavedV1).unwrap();
    assert_eq!(t.payload(), &[0x00, 0x80, 0x38, 0xb8, 0x00, 0x38, 0x40, 0xc0, 0x7e, 0xfe, 0x00, 0x40]);
    assert_eq!(TensorDesc::new(Format::Fp8E4m3fnRowFp16, Layout::RowInterleavedV1, &[2, 160]).encoded_bytes(), Ok(324));
}

#[test]
fn contiguous_le_v1_words_are_little_endian_and_exact() {
    let w = DirectWords { format: Format::Fp32, shape: vec![2], words: vec![0x7F80_0001, 0x8000_0000] };
    let t = EncodedTensor::encode(&LogicalWords::Direct(w), Layout::ContiguousLeV1).unwrap();
    assert_eq!(t.payload(), &[0x01, 0x00, 0x80, 0x7F, 0x00, 0x00, 0x00, 0x80]);
    let w = DirectWords { format: Format::Bf16, shape: vec![], words: vec![0xFF81] };
    let t = EncodedTensor::encode(&LogicalWords::Direct(w), Layout::ContiguousLeV1).unwrap();
    assert_eq!(t.payload(), &[0x81, 0xFF], "rank 0 holds one element");
    let w = DirectWords { format: Format::Int32, shape: vec![1, 2], words: vec![0x8000_0000, 0x7FFF_FFFF] };
    let t = EncodedTensor::encode(&LogicalWords::Direct(w), Layout::ContiguousLeV1).unwrap();
    assert_eq!(dequant(&t).unwrap(), Dequantized::I32(vec![i32::MIN, i32::MAX]));
}

#[test]
fn gguf_blocks_v1_geometry() {
    let g = TensorDesc::new(Format::GgufQ4_0, Layout::GgufBlocksV1, &[3, 64]);
    assert_eq!(g.encoded_bytes(), Ok(3 * 2 * 18));
    assert!(TensorDesc::new(Format::GgufQ4K, Layout::GgufBlocksV1, &[1, 128]).encoded_bytes().is_err(), "K % 256");
}

#[test]
fn row_slices_and_gathers_are_valid_standalone_tensors() {
    use ninfer_wgpu::testgen::{random_words, Rng, Words};
    let mut rng = Rng::new(7);
    let cases: [(Format, Layout, [usize; 2], usize); 7] = [
        (Format::Q2G64Fp16, Layout::RowSplitK128V1, [5, 130], 1),
        (Format::Q5G64Fp16, Layout::RowSplitK128V1, [5, 65], 1),
        (Format::Q6G64Fp16, Layout::RowSplitK128V1, [4, 200], 1),
        (Format::Fp8E4m3fnRowBf16, Layout::RowScaleV1, [5, 7], 1),
        (Format::Fp8E4m3fnRowFp16, Layout::RowInterleavedV1, [5, 7], 1),
        (Format::Bf16, Layout::ContiguousLeV1, [5, 3], 1),
        (Format::Nvfp4, Layout::BlockScaleK16M128x4V1, [384, 64], 3),
    ];
    for (format, layout, shape, divisors) in cases {
        let words = random_words(format, &shape, divisors, &mut rng, Words::All).unwrap();
        let t = EncodedTensor::encode(&words, layout).unwrap();
        let full = match dequant(&t).unwrap() {
            Dequantized::F32(v) => v,
            Dequantized::I32(_) => unreachable!(),
        };
        let k = shape[1];
        let rows: Vec<u32> =
            if format == Format::Nvfp4 { (128..256).rev().chain(0..128).collect() } else { vec![3, 0, 3, 1] };
        let picked = t.gather_rows(&rows).unwrap();
        picked.validate().unwrap_or_else(|e| panic!("{format}: gathered tensor is valid: {e}"));
        assert_eq!(picked.shape(), &[rows.len(), k]);
        let Dequantized::F32(v) = dequant(&picked).unwrap() else { panic!() };
        for (i, r) in rows.iter().map(|&r| r as usize).enumerate() {
            let got: Vec<u32> = v[i * k..(i + 1) * k].iter().map(|x| x.to_bits()).collect();
            let want: Vec<u32> = full[r * k..(r + 1) * k].iter().map(|x| x.to_bits()).collect();
            assert_eq!(got, want, "{format}: gathered row {i} is source row {r}");
        }
        let slice_rows = if format == Format::Nvfp4 { 128..384 } else { 1..4 };
        let s = t.slice_rows(slice_rows.clone()).unwrap();
        s.validate().unwrap();
        let Dequantized::F32(v) = dequant(&s).unwrap() else { panic!() };
        assert_eq!(
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            full[slice_rows.start * k..slice_rows.end * k].iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{format} slice"
        );
    }
}

#[test]
fn nvfp4_gathers_regroup_divisors_or_refuse_mixed_tiles() {
    let n = 256;
    let w = Nvfp4Words {
        n,
        k: 64,
        codes: vec![2; n * 64],
        scales: vec![0x38; n * 4],
        divisors: vec![1f32.to_bits(), 4f32.to_bits()],
    };
    let t = EncodedTensor::encode(&LogicalWords::Nvfp4(w), Layout::BlockScaleK16M128x4V1).unwrap();
    let same_source = t.slice_rows(128..256).unwrap();
    assert_eq!(same_source.desc().divisors, 1, "one source matrix, one divisor");
    let mixed: Vec<u32> = (64..192).collect();
    assert!(t.gather_rows(&mixed).is_err(), "a 128-row tile mixing two divisors is not representable");
}
