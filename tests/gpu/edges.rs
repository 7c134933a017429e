//! Block fields at their edges, every value of them, on every adapter: what random words reach
//! only by chance.

use super::*;
use ninfer_wgpu::{BlockWords, DirectWords, LogicalWords};

/// Every E8M0 scale byte with every E2M1 code: the two scales whose `2^(e - 128)` is a binary32
/// subnormal (e = 0, 1; weights up to 12 · 2^-128, most of them normal), and e = 254, 255, whose
/// larger codes overflow to ±inf as in ggml. Bit-exact on every adapter; a device that flushes
/// may flush only weights that are themselves subnormal.
#[test]
fn mxfp4_decodes_every_scale_and_code_exactly_on_every_adapter() {
    let mut bytes = Vec::with_capacity(256 * 17);
    for e in 0..=255u8 {
        bytes.push(e);
        // Byte j holds codes j and 15 - j: every code in the low nibbles and the high ones.
        bytes.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    }
    let words = LogicalWords::Blocks(BlockWords { format: Format::GgufMxfp4, n: 8, k: 1024, bytes });
    let t = EncodedTensor::encode(&words, Layout::GgufBlocksV1).unwrap();
    for selector in selectors() {
        let Some(gpu) = open(&selector, GpuOptions::default()) else { continue };
        let flushes = gpu.platform().probes.flushes_subnormal_results;
        let r = block_on(conformance::check_dequant(&gpu, &t)).unwrap();
        match flushes {
            Some(false) => assert_eq!(r.verdict, Verdict::Pass, "{selector}: {}", r.detail),
            Some(true) | None => assert_ne!(r.verdict, Verdict::Fail, "{selector}: {}", r.detail),
        }
    }
}

/// Every binary16 word (±0, subnormals, normals, ±inf, every NaN payload) widened to binary32
/// bit for bit by dequant and by gather (the codec's branch-free widening), and through an A32
/// product, on every adapter. Subnormal binary16 values are binary32 normals: no device may
/// flush them.
#[test]
fn fp16_widens_every_binary16_word_exactly_on_every_adapter() {
    let words = LogicalWords::Direct(DirectWords {
        format: Format::Fp16,
        shape: vec![256, 256],
        words: (0..=0xffff).collect(),
    });
    let t = EncodedTensor::encode(&words, Layout::ContiguousLeV1).unwrap();
    let finite = LogicalWords::Direct(DirectWords {
        format: Format::Fp16,
        shape: vec![248, 256],
        // The finite words only (exponent below 31), for a product that must come out finite.
        words: (0..=0xffffu32).filter(|h| h & 0x7c00 != 0x7c00).collect(),
    });
    let finite = EncodedTensor::encode(&finite, Layout::ContiguousLeV1).unwrap();
    let x = vec![1.0f32; 256];
    for selector in selectors() {
        let Some(gpu) = open(&selector, GpuOptions::default()) else { continue };
        let r = block_on(conformance::check_dequant(&gpu, &t)).unwrap();
        assert_eq!(r.verdict, Verdict::Pass, "{selector} dequant: {}", r.detail);
        let r = block_on(conformance::check_gather(&gpu, &t, &[255, 0, 124, 252, 3])).unwrap();
        assert_eq!(r.verdict, Verdict::Pass, "{selector} gather: {}", r.detail);
        let r = block_on(conformance::check_matvec(&gpu, &finite, &x, Variant::Workgroup)).unwrap();
        assert_ne!(r.verdict, Verdict::Fail, "{selector} matvec: {}", r.detail);
    }
}
