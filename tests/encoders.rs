//! Conversion methods, bit for bit: grouped_absmax's section 7 examples, fp8_row_maxabs, the
//! direct conversions, encoded imports and grouped_search's guarantees.

use ninfer_wgpu::encode::direct::{self, DirectSource};
use ninfer_wgpu::encode::fp8_row::fp8_row_maxabs;
use ninfer_wgpu::encode::grouped::{grouped_absmax, grouped_search, SearchOptions};
use ninfer_wgpu::encode::{import, Source};
use ninfer_wgpu::numeric::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use ninfer_wgpu::oracle::{dequant, Dequantized};
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{EncodedTensor, Error, Format, GroupedWords, LogicalWords};

fn grouped(t: &EncodedTensor) -> GroupedWords {
    match t.decode().unwrap() {
        LogicalWords::Grouped(w) => w,
        other => panic!("not grouped: {other:?}"),
    }
}

fn absmax(format: Format, row: &[f32]) -> GroupedWords {
    grouped(&grouped_absmax(format, 1, row.len(), Source::F32(row)).unwrap().tensor)
}

#[test]
fn integral_rounding_is_ties_to_even_after_the_reciprocal() {
    // amax 7 with q4: raw scale 7 / 7 = 1.0 exactly, so codes are the rounded values themselves.
    let w = absmax(Format::Q4G64Fp16, &[7.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5]);
    assert_eq!(w.scales, vec![0x3C00]);
    assert_eq!(w.codes, vec![7, 0, 0, 2, -2, 2, -2], "+0.5→0, -0.5→0, ±1.5→±2, ±2.5→±2");
}

#[test]
fn qmax_not_abs_qmin_is_the_denominator() {
    for (format, qmax) in
        [(Format::Q4G64Fp16, 7.0), (Format::Q5G64Fp16, 15.0), (Format::Q6G64Fp16, 31.0), (Format::Q8G32Fp16, 127.0)]
    {
        let w = absmax(format, &[qmax, -qmax, 1.0]);
        assert_eq!(w.scales, vec![0x3C00], "{format}: amax / qmax = 1");
        assert_eq!(&w.codes[..2], &[qmax as i8, -qmax as i8], "{format}");
    }
}

#[test]
fn reciprocal_multiply_not_division_selects_the_code() {
    // Found by search: s16 = 0x4750 (7.3125) from amax 51.187046; x = 25.593748.
    // x * round_f32(1 / s) = 3.5 exactly (rounds to 4), while round_f32(x / s) = 3.4999998 (3).
    let amax = f32::from_bits(0x424c_bf89);
    let x = f32::from_bits(0x41cc_bfff);
    let s = f16_to_f32(0x4750);
    assert_eq!(f32_to_f16(amax / 7.0), 0x4750);
    assert_eq!((x * (1.0 / s)).round_ties_even(), 4.0);
    assert_eq!((x / s).round_ties_even(), 3.0, "the division path would choose 3");
    let w = absmax(Format::Q4G64Fp16, &[amax, x]);
    assert_eq!(w.scales, vec![0x4750]);
    assert_eq!(w.codes, vec![7, 4], "the reciprocal path's code");
}

#[test]
fn subnormal_scales_rescue_and_clamp_after_rounding() {
    // amax = 7 * 2.4 * 2^-24: raw scale 2.4 * 2^-24 rounds to the subnormal 2 * 2^-24 (0x0002),
    // so x / s reaches ±8.4: q4 clamps +8 to 7 but keeps -8; q8 keeps -127, never -128.
    let tiny = 2f32.powi(-24);
    let w = absmax(Format::Q4G64Fp16, &[7.0 * 2.4 * tiny, -7.0 * 2.4 * tiny]);
    assert_eq!(w.scales, vec![0x0002]);
    assert_eq!(w.codes, vec![7, -8]);
    let w = absmax(Format::Q8G32Fp16, &[-127.0 * 1.2 * tiny, 127.0 * 1.2 * tiny]);
    assert_eq!(w.codes, vec![-127, 127], "clamped to ±127: Q8 never emits -128");
    // A nonzero amax whose raw scale rounds to binary16 zero is rescued as 0x0001.
    let w = absmax(Format::Q4G64Fp16, &[1e-12, -3e-13]);
    assert_eq!(w.scales, vec![0x0001], "2^-24 underflow rescue");
    assert_eq!(w.codes, vec![0, 0]);
}

#[test]
fn overflow_and_non_finite_sources_fail() {
    let err = grouped_absmax(Format::Q4G64Fp16, 1, 2, Source::F32(&[1e6, 1.0])).unwrap_err();
    assert!(err.to_string().contains("overflows binary16"), "{err}");
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let err = grouped_absmax(Format::Q8G32Fp16, 1, 2, Source::F32(&[1.0, bad])).unwrap_err();
        assert!(err.to_string().contains("non-finite"), "{err}");
    }
    assert!(grouped_absmax(Format::Q4G64Fp16, 1, 2, Source::Bf16(&[0x3F80, 0x7F80])).is_err(), "bf16 infinity refused");
}

#[test]
fn zero_groups_and_partial_last_groups() {
    let w = absmax(Format::Q4G64Fp16, &[-0.0; 64]);
    assert_eq!(
        (w.scales.clone(), w.codes.iter().all(|&c| c == 0)),
        (vec![0x0000], true),
        "all-zero (even -0) group: +0 scale"
    );
    // K = 65: the last group holds one logical value and is scaled from it alone.
    let mut row = vec![100.0f32; 64];
    row.push(0.7);
    let w = absmax(Format::Q4G64Fp16, &row);
    assert_eq!(w.scales[1], f32_to_f16(0.7 / 7.0));
    assert_eq!(w.codes[64], 7);
}

#[test]
fn bf16_and_binary16_sources_convert_exactly() {
    let bf: Vec<u16> = [1.5f32, -0.3, 7.0, 1e-3].iter().map(|&x| f32_to_bf16(x)).collect();
    let as_f32: Vec<f32> = bf.iter().map(|&w| bf16_to_f32(w)).collect();
    let a = grouped_absmax(Format::Q6G64Fp16, 1, 4, Source::Bf16(&bf)).unwrap();
    let b = grouped_absmax(Format::Q6G64Fp16, 1, 4, Source::F32(&as_f32)).unwrap();
    assert_eq!(a.tensor.payload(), b.tensor.payload());
    let h: Vec<u16> = [0.5f32, -2.0, 0.001].iter().map(|&x| f32_to_f16(x)).collect();
    let hf: Vec<f32> = h.iter().map(|&w| f16_to_f32(w)).collect();
    assert_eq!(
        grouped_absmax(Format::Q8G32Fp16, 1, 3, Source::F16(&h)).unwrap().tensor.payload(),
        grouped_absmax(Format::Q8G32Fp16, 1, 3, Source::F32(&hf)).unwrap().tensor.payload()
    );
    assert_eq!(a.provenance.method, "grouped_absmax");
}

#[test]
fn q2_and_t2_targets_are_refused() {
    for f in [Format::Q2G64Fp16, Format::T2G128Fp16, Format::Nvfp4, Format::Bf16] {
        assert!(matches!(grouped_absmax(f, 1, 1, Source::F32(&[1.0])), Err(Error::Unsupported(_))), "{f}");
        assert!(
            matches!(
                grouped_search(f, 1, 1, Source::F32(&[1.0]), SearchOptions::default()),
                Err(Error::Unsupported(_))
            ),
            "{f}"
        );
    }
    assert!(grouped_absmax(Format::Q4G64Fp16, 2, 3, Source::F32(&[1.0; 5])).is_err(), "shape mismatch");
}

fn weighted_error(t: &EncodedTensor, source: &[f32], imp: &[f32]) -> f64 {
    let Dequantized::F32(v) = dequant(t).unwrap() else { panic!() };
    let k = imp.len();
    v.iter().zip(source).enumerate().map(|(i, (&a, &b))| imp[i % k] as f64 * (a as f64 - b as f64).powi(2)).sum()
}

#[test]
fn grouped_search_is_valid_and_never_worse_than_absmax() {
    let mut rng = Rng::new(5);
    let (n, k) = (8, 200);
    let source: Vec<f32> = (0..n * k).map(|_| rng.unit() * rng.unit() * 3.0).collect();
    let imp: Vec<f32> = (0..k).map(|_| 0.1 + rng.unit().abs()).collect();
    for format in [Format::Q4G64Fp16, Format::Q5G64Fp16, Format::Q6G64Fp16, Format::Q8G32Fp16] {
        let base = grouped_absmax(format, n, k, Source::F32(&source)).unwrap();
        for negative_scales in [false, true] {
            let s = grouped_search(
                format,
                n,
                k,
                Source::F32(&source),
                SearchOptions { importance: Some(&imp), negative_scales },
            )
            .unwrap();
            s.tensor.validate().unwrap();
            let (eb, es) = (weighted_error(&base.tensor, &source, &imp), weighted_error(&s.tensor, &source, &imp));
            assert!(es <= eb, "{format}: search {es} > absmax {eb}");
            assert!(es < eb, "{format}: on random data some candidate beats absmax ({es} vs {eb})");
            let w = grouped(&s.tensor);
            if !negative_scales {
                assert!(w.scales.iter().all(|&s| s & 0x8000 == 0), "{format}: negative scales only when enabled");
            }
        }
    }
    let zero = grouped_search(Format::Q4G64Fp16, 1, 64, Source::F32(&[0.0; 64]), SearchOptions::default()).unwrap();
    assert_eq!(grouped(&zero.tensor).scales, vec![0x0000]);
    assert!(grouped_search(
        Format::Q4G64Fp16,
        1,
        2,
        Source::F32(&[1.0, 2.0]),
        SearchOptions { importance: Some(&[1.0]), negative_scales: false }
    )
    .is_err());
}

#[test]
fn negative_scales_reach_qmin_for_a_positive_extreme() {
    // Eight equal positive values: only the scale -m/8 puts m exactly on a q4 code (-8).
    let m = 1.0f32;
    let row = [m, m, -m * 0.875, 0.0];
    let s = grouped_search(
        Format::Q4G64Fp16,
        1,
        4,
        Source::F32(&row),
        SearchOptions { importance: None, negative_scales: true },
    )
    .unwrap();
    let w = grouped(&s.tensor);
    let Dequantized::F32(v) = dequant(&s.tensor).unwrap() else { panic!() };
    assert_eq!(v, row.to_vec(), "exact with scale {:#06x} and codes {:?}", w.scales[0], w.codes);
}

fn fp8_words(t: &EncodedTensor) -> (Vec<u8>, Vec<u16>) {
    match t.decode().unwrap() {
        LogicalWords::Fp8Row(w) => (w.codes, w.scales),
        other => panic!("{other:?}"),
    }
}

#[test]
fn fp8_row_maxabs_follows_the_reference() {
    // Row max 448 * 2: scale 2.0 exactly (bf16 0x4000, binary16 0x4000); codes are x / 2.
    let row = [896.0f32, -448.0, 1.0, -0.0, 3.0];
    for format in [Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16] {
        let e = fp8_row_maxabs(format, 1, 5, Source::F32(&row)).unwrap();
        let (codes, scales) = fp8_words(&e.tensor);
        assert_eq!(scales, vec![0x4000], "{format}");
        assert_eq!(codes, vec![0x7E, 0xF6, 0x30, 0x80, 0x38 | 0x04], "{format}: 448, -224, 0.5, -0, 1.5");
        assert_eq!(e.provenance.method, "fp8_row_maxabs");
    }
    // All-zero rows: positive-zero codes and scale, whatever the zeros' signs.
    let e = fp8_row_maxabs(Format::Fp8E4m3fnRowBf16, 2, 2, Source::F32(&[-0.0, 0.0, 1.0, 2.0])).unwrap();
    let (codes, scales) = fp8_words(&e.tensor);
    assert_eq!((&codes[..2], scales[0]), (&[0u8, 0][..], 0x0000));
    // Binary16 scale overflow is refused; underflow is rescued to 0x0001.
    assert!(fp8_row_maxabs(Format::Fp8E4m3fnRowFp16, 1, 1, Source::F32(&[65504.0 * 448.0 * 2.0])).is_err());
    let e = fp8_row_maxabs(Format::Fp8E4m3fnRowFp16, 1, 1, Source::F32(&[1e-9])).unwrap();
    assert_eq!(fp8_words(&e.tensor).1, vec![0x0001]);
    assert!(fp8_row_maxabs(Format::Fp8E4m3fnRowBf16, 1, 1, Source::F32(&[f32::NAN])).is_err());
    assert!(fp8_row_maxabs(Format::Q4G64Fp16, 1, 1, Source::F32(&[1.0])).is_err(), "fp8 targets only");
}

#[test]
fn fp8_rows_are_independent_of_chunking() {
    let mut rng = Rng::new(9);
    let data: Vec<f32> = (0..6 * 50).map(|_| rng.unit() * 10f32.powi(rng.range(-3, 3) as i32)).collect();
    for format in [Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16] {
        let whole = fp8_words(&fp8_row_maxabs(format, 6, 50, Source::F32(&data)).unwrap().tensor);
        let mut codes = Vec::new();
        let mut scales = Vec::new();
        for rows in data.chunks(100) {
            let (c, s) = fp8_words(&fp8_row_maxabs(format, rows.len() / 50, 50, Source::F32(rows)).unwrap().tensor);
            codes.extend(c);
            scales.extend(s);
        }
        assert_eq!(whole, (codes, scales), "{format}");
    }
}

#[test]
fn direct_formats_persist_bit_for_bit_and_never_convert_implicitly() {
    let nan = f32::from_bits(0x7F80_0001);
    let e = direct::persist(Format::Fp32, &[3], DirectSource::F32(&[nan, -0.0, f32::from_bits(1)])).unwrap();
    assert_eq!(e.tensor.payload(), &[0x01, 0x00, 0x80, 0x7F, 0, 0, 0, 0x80, 1, 0, 0, 0]);
    let e = direct::persist(Format::Bf16, &[2], DirectSource::Bf16(&[0x7F81, 0x8000])).unwrap();
    assert_eq!(e.tensor.payload(), &[0x81, 0x7F, 0x00, 0x80]);
    let e = direct::persist(Format::Int32, &[2], DirectSource::I32(&[i32::MIN, -1])).unwrap();
    assert_eq!(e.tensor.payload(), &[0, 0, 0, 0x80, 0xFF, 0xFF, 0xFF, 0xFF]);
    for (format, source) in [
        (Format::Bf16, DirectSource::F32(&[1.0])),
        (Format::Int32, DirectSource::F32(&[1.0])),
        (Format::Fp32, DirectSource::I32(&[1])),
    ] {
        assert!(
            matches!(direct::persist(format, &[1], source), Err(Error::Unsupported(m)) if m.contains("no implicit conversion"))
        );
    }
    let e = direct::f32_to_bf16(&[4], &[f32::from_bits(0x3F80_8000), f32::from_bits(0x3F81_8000), nan, -0.0]).unwrap();
    assert_eq!(
        e.tensor.payload(),
        &[0x80, 0x3F, 0x82, 0x3F, 0xC0, 0x7F, 0x00, 0x80],
        "ties to even; NaN stays NaN (quiet)"
    );
}

/// A GGUF block: binary16 d then the code bytes.
fn block(d: u16, codes: &[u8]) -> Vec<u8> {
    let mut b = d.to_le_bytes().to_vec();
    b.extend_from_slice(codes);
    b
}

#[test]
fn q2_imports_gguf_q2_0_blocks_by_byte_copy() {
    // [2, 64]: one block per row; scales -0 and +0 with nonzero codes are kept for Q2.
    let codes0: Vec<u8> = (0..16).map(|i| (i * 37) as u8).collect();
    let mut blocks = block(0x8000, &codes0);
    blocks.extend(block(0x0000, &[0xE4; 16]));
    let e = import::q2_from_gguf_q2_0(2, 64, &blocks).unwrap();
    let p = e.tensor.payload();
    assert_eq!(&p[..16], &codes0[..], "codes copied byte for byte");
    assert!(p[16..32].iter().all(|&b| b == 0x55), "padding group 1 of row 0 holds code 0 (0x55)");
    let ninfer_wgpu::layout::PayloadGeometry::RowSplit(g) = e.tensor.geometry() else { panic!() };
    assert_eq!(&p[g.scale_offset..g.scale_offset + 2], &[0x00, 0x80], "-0 scale kept");
    assert_eq!(&p[g.scale_offset + 2..g.scale_offset + 4], &[0, 0], "padding scale 0");
    let Dequantized::F32(v) = dequant(&e.tensor).unwrap() else { panic!() };
    assert_eq!(v[64 + 1], 0.0);
    // inf is refused; K must be a multiple of 64.
    assert!(import::q2_from_gguf_q2_0(1, 64, &block(0x7C00, &[0; 16])).is_err());
    assert!(import::q2_from_gguf_q2_0(1, 32, &block(0x3C00, &[0; 16])).is_err());
    assert!(import::q2_from_gguf_q2_0(1, 64, &blocks).is_err(), "block count checked");
}

#[test]
fn q8_imports_gguf_q8_0_blocks_and_refuses_invalid_words() {
    let codes: Vec<u8> = (0..32).map(|i| (i as i8 - 16) as u8).collect();
    let e = import::q8_from_gguf_q8_0(1, 32, &block(0x4000, &codes)).unwrap();
    let Dequantized::F32(v) = dequant(&e.tensor).unwrap() else { panic!() };
    assert_eq!(v[0], -32.0);
    assert_eq!(e.provenance.method, "import_encoded");
    let mut minus128 = codes.clone();
    minus128[3] = 0x80;
    for (d, c, rule) in [
        (0x8000u16, &codes, "-0"),
        (0x3C00, &minus128, "-128"),
        (0x0000, &codes, "+0 scale"),
        (0x7E00, &codes, "finite"),
    ] {
        match import::q8_from_gguf_q8_0(1, 32, &block(d, c)) {
            Err(Error::InvalidWord { rule: r, .. }) => assert!(r.contains(rule), "{r}"),
            other => panic!("{rule}: {other:?}"),
        }
    }
}

/// The piece-at-a-time view (how a model's q8_0 table reaches the GPU) makes exactly the whole
/// import's payload, from any offset in pieces of any size — padding groups at K = 96, rows of
/// several 128-value chunks at K = 640 — and refuses what the import refuses, in any row.
#[test]
fn q8_from_q8_0_pieces_are_the_whole_imports_bytes() {
    let seed = ninfer_wgpu::testgen::test_seed("q8_from_q8_0 pieces").unwrap();
    let mut rng = Rng::new(seed);
    let random_blocks = |count: usize, rng: &mut Rng| -> Vec<u8> {
        (0..count)
            .flat_map(|_| {
                let codes: Vec<u8> = (0..32).map(|_| rng.range(-127, 127) as i8 as u8).collect();
                block(0x2000 + rng.below(0x3000) as u16, &codes)
            })
            .collect()
    };
    for (n, k) in [(1, 32), (3, 96), (5, 640)] {
        let blocks = random_blocks(n * k / 32, &mut rng);
        let whole = import::q8_from_gguf_q8_0(n, k, &blocks).unwrap();
        let view = import::Q8FromQ8_0::new(n, k, &blocks).unwrap();
        assert_eq!(&view.desc(), whole.tensor.desc());
        let expected = whole.tensor.payload();
        assert_eq!(view.len(), expected.len());
        let mut all = vec![0xAA; view.len()];
        view.fill(0, &mut all).unwrap();
        assert!(all == expected, "[{n}, {k}]: the whole payload differs (seed {seed})");
        for _ in 0..300 {
            let start = rng.below(expected.len() as u64) as usize;
            let len = rng.below((expected.len() - start) as u64 + 1) as usize;
            let mut piece = vec![0xAA; len];
            view.fill(start, &mut piece).unwrap();
            assert!(piece == expected[start..start + len], "[{n}, {k}] bytes {start}+{len} (seed {seed})");
        }
        // Rows as a stream brings them (1 to 3 at a time): the same payload, in order.
        let mut rows = import::Q8FromQ8_0Rows::new(n, k, false).unwrap();
        assert_eq!(rows.desc(), view.desc());
        let mut streamed = Vec::new();
        let mut keep = |b: &[u8]| {
            streamed.extend_from_slice(b);
            Ok(())
        };
        let row_bytes = k / 32 * 34;
        let mut at = 0;
        while at < blocks.len() {
            let take = (1 + rng.below(3) as usize) * row_bytes;
            let end = (at + take).min(blocks.len());
            rows.rows(&blocks[at..end], &mut keep).unwrap();
            at = end;
        }
        rows.finish(&mut keep).unwrap();
        assert!(streamed == expected, "[{n}, {k}]: the streamed payload differs (seed {seed})");
        // A range past the payload is refused, not read past the blocks.
        assert!(view.fill(expected.len() - 1, &mut [0; 2]).is_err());
        assert!(view.fill(usize::MAX, &mut [0; 1]).is_err());
    }
    // A code of -128 in the last row, past the first rows checked at a time, and a short payload.
    let (n, k) = (4097, 32);
    let mut blocks = random_blocks(n, &mut rng);
    let last = blocks.len() - 5;
    blocks[last] = 0x80;
    match import::Q8FromQ8_0::new(n, k, &blocks) {
        Err(Error::InvalidWord { rule, .. }) => assert!(rule.contains("-128"), "{rule}"),
        other => panic!("code -128: {:?}", other.err()),
    }
    // Streamed, the row with -128 is refused as it comes; rows ending early are refused.
    let mut rows = import::Q8FromQ8_0Rows::new(n, k, false).unwrap();
    rows.rows(&blocks[..4096 * 34], &mut |_| Ok(())).unwrap();
    assert!(matches!(rows.rows(&blocks[4096 * 34..], &mut |_| Ok(())), Err(Error::InvalidWord { .. })));
    let mut rows = import::Q8FromQ8_0Rows::new(2, k, false).unwrap();
    rows.rows(&blocks[..34], &mut |_| Ok(())).unwrap();
    assert!(rows.finish(&mut |_| Ok(())).is_err(), "one row of two");
    assert!(matches!(import::Q8FromQ8_0::new(n, k, &blocks[1..]), Err(Error::PayloadSize { .. })));
}

#[test]
fn imports_of_t2_nvfp4_and_fp8_copy_and_validate() {
    assert!(import::t2(1, 3, &[-1, 0, 1], &[0x3C00]).is_ok());
    assert!(import::t2(1, 3, &[-2, 0, 1], &[0x3C00]).is_err(), "T2 word 0b10");
    let e = import::nvfp4(128, 64, &vec![0x9; 128 * 64], &vec![0x38; 128 * 4], &[2f32.to_bits()]).unwrap();
    let Dequantized::F32(v) = dequant(&e.tensor).unwrap() else { panic!() };
    assert_eq!(v[0], -0.25);
    assert!(
        import::nvfp4(128, 64, &vec![0; 128 * 64], &vec![0x80; 128 * 4], &[1f32.to_bits()]).is_err(),
        "negative-zero scale"
    );
    assert!(import::nvfp4(128, 64, &vec![0; 128 * 64], &vec![0; 128 * 4], &[0]).is_err(), "zero divisor");
    assert!(import::fp8(Format::Fp8E4m3fnRowFp16, 1, 2, &[0x7E, 0x01], &[0x3C00]).is_ok());
    assert!(import::fp8(Format::Fp8E4m3fnRowFp16, 1, 2, &[0x7F, 0x01], &[0x3C00]).is_err(), "NaN code");
    assert!(import::fp8(Format::Fp8E4m3fnRowBf16, 1, 2, &[0x01, 0x01], &[0x0000]).is_err(), "zero scale, nonzero code");
}
