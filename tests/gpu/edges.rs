//! Block fields at their edges, every value of them, on every adapter: what random words reach
//! only by chance.

use super::*;
use ninfer_wgpu::{BlockWords, LogicalWords};

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
