//! Class 1: a payload with an illegal word or non-canonical padding is refused by every command
//! and on every device with the rule named, and `inspect` does not call it supported.

use super::files::{cli, TempDir};
use ninfer_wgpu::container::{ArtifactWriter, Binding};
use ninfer_wgpu::layout::PayloadGeometry;
use ninfer_wgpu::testgen::{random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Format};

/// A valid tensor of `format`, then `edit` applied to its payload with its geometry at hand.
fn broken(format: Format, shape: &[usize], edit: impl Fn(&PayloadGeometry, &mut Vec<u8>)) -> EncodedTensor<'static> {
    let mut rng = Rng::new(3);
    let words = random_words(format, shape, 1, &mut rng, Words::Finite).unwrap();
    let t = EncodedTensor::encode(&words, format.layout()).unwrap();
    let mut p = t.payload().to_vec();
    edit(t.geometry(), &mut p);
    EncodedTensor::new(t.desc().clone(), p).unwrap()
}

fn row_scale_at(g: &PayloadGeometry) -> usize {
    match g {
        PayloadGeometry::RowScale(g) => g.scale_offset,
        PayloadGeometry::RowSplit(g) => g.scale_offset,
        other => panic!("no scale plane in {other:?}"),
    }
}

/// (name, tensor, words of the rule the refusal must quote).
fn cases() -> Vec<(&'static str, EncodedTensor<'static>, &'static str)> {
    let fp8 = Format::Fp8E4m3fnRowBf16;
    vec![
        ("fp8_nan_code", broken(fp8, &[2, 8], |_, p| p[3] = 0x7F), "0x7f and 0xff are NaN"),
        ("fp8_negative_scale", broken(fp8, &[2, 8], |g, p| p[row_scale_at(g) + 1] |= 0x80), "sign bit zero"),
        (
            "fp8_nan_scale",
            broken(fp8, &[2, 8], |g, p| p[row_scale_at(g)..row_scale_at(g) + 2].copy_from_slice(&[0xC0, 0x7F])),
            "finite",
        ),
        (
            "q4_inf_scale",
            broken(Format::Q4G64Fp16, &[1, 64], |g, p| {
                p[row_scale_at(g)..row_scale_at(g) + 2].copy_from_slice(&[0x00, 0x7C])
            }),
            "finite",
        ),
        (
            "q4_negative_zero_scale",
            broken(Format::Q4G64Fp16, &[1, 64], |g, p| {
                p[row_scale_at(g)..row_scale_at(g) + 2].copy_from_slice(&[0x00, 0x80])
            }),
            "never -0",
        ),
        ("q8_code_0x80", broken(Format::Q8G32Fp16, &[1, 32], |_, p| p[0] = 0x80), "-128"),
        ("t2_word_0b10", broken(Format::T2G128Fp16, &[1, 128], |_, p| p[0] = 0b10), "0b10"),
        // q4 [1, 64]: the second group of the 128-lane row is padding and holds code 0.
        ("q4_padding", broken(Format::Q4G64Fp16, &[1, 64], |_, p| p[40] = 0x01), "padding"),
        (
            "nvfp4_zero_divisor",
            broken(Format::Nvfp4, &[128, 64], |g, p| {
                let PayloadGeometry::BlockScale(g) = g else { unreachable!() };
                p[g.divisor_offset..g.divisor_offset + 4].fill(0);
            }),
            "strictly positive",
        ),
        (
            "nvfp4_negative_scale",
            broken(Format::Nvfp4, &[128, 64], |g, p| {
                let PayloadGeometry::BlockScale(g) = g else { unreachable!() };
                p[g.scale_offset] = 0x80 | 0x38;
            }),
            "sign bit zero",
        ),
    ]
}

#[test]
fn every_device_and_inspect_refuse_an_invalid_payload_naming_the_rule() {
    let dir = TempDir::new("payloads");
    let mut writer = ArtifactWriter::new();
    let cases = cases();
    for (name, t, _) in &cases {
        writer.add_tensor(*name, t.clone());
        writer.bind(*name, Binding::Object((*name).to_string()));
    }
    let entry = dir.join("broken.ninfer");
    writer.write(&entry).unwrap();
    let file = entry.to_str().unwrap();
    let report: serde_json::Value = serde_json::from_str(&cli().ok(&["inspect", file, "--json"])).unwrap();
    for (name, t, rule) in &cases {
        let k = t.shape()[1];
        let x = dir.join("x.f32");
        std::fs::write(&x, vec![0u8; 4 * k]).unwrap();
        let out = dir.join("out.f32");
        let mut messages = Vec::new();
        for device in ["cpu", "gpu"] {
            let dequant = ["dequant", file, name, "--device", device, "-o", out.to_str().unwrap()];
            let matvec = ["matvec", file, name, "--x", x.to_str().unwrap(), "--device", device];
            let gather = ["gather", file, name, "--rows", "0", "--device", device];
            for args in [&dequant[..], &matvec[..], &gather[..]] {
                let err = cli().fails(args);
                assert!(err.contains(rule), "{name}: {args:?} should name `{rule}`: {err}");
                messages.push(err);
            }
        }
        assert!(messages.windows(2).all(|w| w[0] == w[1]), "{name}: one message on every path: {messages:?}");
        let shown = report["tensors"].as_array().unwrap().iter().find(|e| e["id"] == *name).unwrap();
        let error = shown["error"].as_str().unwrap_or_else(|| panic!("{name}: inspect calls it {shown}"));
        assert!(error.contains(rule), "{name}: inspect says {error}");
    }
}
