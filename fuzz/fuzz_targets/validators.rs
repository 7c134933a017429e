//! Every layout's validator on arbitrary payloads: the fast scan and the word-by-word reference
//! must agree, and a payload both accept decodes in the oracle. Byte 0 picks the format, bytes
//! 1..3 the shape (reduced to one the layout allows), the rest is the payload, repeated to size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::layout::{self, PayloadGeometry};
use ninfer_wgpu::{Category, Format};

fuzz_target!(|data: &[u8]| {
    let [f, a, b, body @ ..] = data else { return };
    let formats: Vec<Format> = Format::ALL.into_iter().filter(|f| f.category() != Category::GgufBlock).collect();
    let format = formats[*f as usize % formats.len()];
    let (shape, divisors) = match format.category() {
        // nvfp4: N a multiple of 128 per divisor, K a multiple of 64.
        Category::BlockScaledFloat => {
            let divisors = 1 + (*a as usize % 2);
            (vec![128 * divisors, 64 * (1 + *b as usize % 3)], divisors)
        }
        _ => (vec![1 + *a as usize % 5, 1 + *b as usize % 300], 1),
    };
    let Ok(g) = PayloadGeometry::new(format, format.layout(), &shape, divisors) else { return };
    if body.is_empty() {
        return;
    }
    let payload: Vec<u8> = body.iter().copied().cycle().take(g.bytes()).collect();
    let scan = g.scan(&payload);
    let reference = layout::validate_reference(&g, &shape, &payload);
    assert_eq!(scan, reference.is_ok(), "{format} {shape:?}: scan {scan}, reference {reference:?}");
    if scan {
        let words = layout::decode(&g, &shape, &payload).expect("a valid payload decodes");
        ninfer_wgpu::oracle::dequant_words(&words).expect("valid words reconstruct");
    }
});
