//! The registry, row by row against the tables of numeric-formats.txt and layouts.md.

use ninfer_wgpu::format::{Category, CodeMapping, DirectWord, Geometry};
use ninfer_wgpu::{Error, Format, Layout};

/// (name, code bits, group, qmin, qmax, full-group bits/weight) — section 1's grouped table.
const GROUPED: [(&str, u32, usize, i32, i32, f64); 6] = [
    ("q2_g64_fp16", 2, 64, -1, 2, 2.25),
    ("q4_g64_fp16", 4, 64, -8, 7, 4.25),
    ("q5_g64_fp16", 5, 64, -16, 15, 5.25),
    ("q6_g64_fp16", 6, 64, -32, 31, 6.25),
    ("q8_g32_fp16", 8, 32, -127, 127, 8.50),
    ("t2_g128_fp16", 2, 128, -1, 1, 2.125),
];

/// (name, ggml type, block values, block bytes, bits/weight) — the GGUF table.
const GGUF: [(&str, u32, usize, usize, f64); 18] = [
    ("gguf_q8_0", 8, 32, 34, 8.50),
    ("gguf_q4_0", 2, 32, 18, 4.50),
    ("gguf_q5_0", 6, 32, 22, 5.50),
    ("gguf_q2_0", 42, 64, 18, 2.25),
    ("gguf_q2_k", 10, 256, 84, 2.625),
    ("gguf_q3_k", 11, 256, 110, 3.4375),
    ("gguf_q4_k", 12, 256, 144, 4.50),
    ("gguf_q5_k", 13, 256, 176, 5.50),
    ("gguf_q6_k", 14, 256, 210, 6.5625),
    ("gguf_iq2_xxs", 16, 256, 66, 2.0625),
    ("gguf_iq2_xs", 17, 256, 74, 2.3125),
    ("gguf_iq3_xxs", 18, 256, 98, 3.0625),
    ("gguf_iq1_s", 19, 256, 50, 1.5625),
    ("gguf_iq4_nl", 20, 32, 18, 4.50),
    ("gguf_iq3_s", 21, 256, 110, 3.4375),
    ("gguf_iq2_s", 22, 256, 82, 2.5625),
    ("gguf_iq4_xs", 23, 256, 136, 4.25),
    ("gguf_iq1_m", 29, 256, 56, 1.75),
];

/// (name, ggml type, block values, block bytes, bits/weight) — ggml's types past the reference's
/// table, registered with the numeric definitions of docs/ggml-formats.md (ggml-common.h's
/// block structs).
const GGUF_ADDITIONAL: [(&str, u32, usize, usize, f64); 5] = [
    ("gguf_q4_1", 3, 32, 20, 5.0),
    ("gguf_q5_1", 7, 32, 24, 6.0),
    ("gguf_mxfp4", 39, 32, 17, 4.25),
    ("gguf_tq1_0", 34, 256, 54, 1.6875),
    ("gguf_tq2_0", 35, 256, 66, 2.0625),
];

/// layouts.md's closed pair table, with the additional formats of docs/ggml-formats.md in
/// the layouts that format reference gives their kind (direct words, ggml blocks).
const PAIRS: [(&str, &[&str]); 6] = [
    ("contiguous_le_v1", &["bf16", "fp32", "int32", "fp16"]),
    ("row_split_k128_v1", &["q2_g64_fp16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"]),
    ("block_scale_k16_m128x4_v1", &["nvfp4"]),
    ("row_scale_v1", &["fp8_e4m3fn_row_bf16"]),
    ("row_interleaved_v1", &["fp8_e4m3fn_row_fp16"]),
    (
        "gguf_blocks_v1",
        &[
            "gguf_q8_0",
            "gguf_q4_0",
            "gguf_q5_0",
            "gguf_q2_0",
            "gguf_q2_k",
            "gguf_q3_k",
            "gguf_q4_k",
            "gguf_q5_k",
            "gguf_q6_k",
            "gguf_iq2_xxs",
            "gguf_iq2_xs",
            "gguf_iq3_xxs",
            "gguf_iq1_s",
            "gguf_iq4_nl",
            "gguf_iq3_s",
            "gguf_iq2_s",
            "gguf_iq4_xs",
            "gguf_iq1_m",
            "gguf_q4_1",
            "gguf_q5_1",
            "gguf_mxfp4",
            "gguf_tq1_0",
            "gguf_tq2_0",
        ],
    ),
];

#[test]
fn registry_holds_exactly_the_reference_formats() {
    // The reference's tables: three direct formats, the grouped table, nvfp4 and two fp8 rows,
    // and the GGUF table; then docs/ggml-formats.md's fp16 and additional ggml types. Each row
    // is checked by the tests below.
    let reference = 3 + GROUPED.len() + 3 + GGUF.len();
    assert_eq!(Format::ALL.len(), reference + 1 + GGUF_ADDITIONAL.len());
    let mut names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), Format::COUNT, "canonical names are unique");
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>(), Ok(f), "{f} parses back");
        assert_eq!(f.to_string(), f.name());
    }
}

#[test]
fn direct_rows_match_the_reference() {
    for (name, bits, category, word) in [
        ("bf16", 16, Category::DirectFloat, DirectWord::Bf16),
        ("fp32", 32, Category::DirectFloat, DirectWord::Binary32),
        ("int32", 32, Category::DirectInt, DirectWord::Int32),
        ("fp16", 16, Category::DirectFloat, DirectWord::Binary16),
    ] {
        let f: Format = name.parse().unwrap();
        let spec = f.spec();
        assert_eq!(spec.category, category, "{name}");
        assert_eq!(spec.code_bits, Some(bits), "{name}");
        assert_eq!(spec.geometry, Geometry::Direct { bytes: bits as usize / 8, word }, "{name}");
        assert_eq!(f.bits_per_weight(), bits as f64, "{name}");
        assert_eq!(spec.gguf, None);
    }
}

#[test]
fn grouped_rows_match_the_reference() {
    for (name, bits, group, qmin, qmax, bpw) in GROUPED {
        let f: Format = name.parse().unwrap();
        let spec = f.spec();
        assert_eq!(spec.category, Category::Grouped, "{name}");
        assert_eq!(spec.code_bits, Some(bits), "{name}");
        let mapping = if name.starts_with("q2") { CodeMapping::OffsetOne } else { CodeMapping::TwosComplement };
        assert_eq!(spec.geometry, Geometry::Grouped { group, qmin, qmax, mapping }, "{name}");
        assert_eq!(f.bits_per_weight(), bpw, "{name}: b + 16/G");
    }
}

#[test]
fn float_rows_match_the_reference() {
    let nvfp4 = Format::Nvfp4.spec();
    assert_eq!((nvfp4.name, nvfp4.category, nvfp4.code_bits), ("nvfp4", Category::BlockScaledFloat, Some(4)));
    assert_eq!(nvfp4.geometry, Geometry::BlockScaled { group: 16 });
    for name in ["fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16"] {
        let spec = name.parse::<Format>().unwrap().spec();
        assert_eq!((spec.category, spec.code_bits), (Category::RowScaledFloat, Some(8)), "{name}");
    }
}

#[test]
fn gguf_rows_match_the_reference() {
    for (name, ggml, values, bytes, bpw) in GGUF.into_iter().chain(GGUF_ADDITIONAL) {
        let f: Format = name.parse().unwrap();
        let spec = f.spec();
        assert_eq!(spec.category, Category::GgufBlock, "{name}");
        assert_eq!(spec.gguf.map(|t| t.id), Some(ggml), "{name}");
        assert_eq!(spec.geometry, Geometry::Block { values, bytes }, "{name}");
        assert_eq!(f.bits_per_weight(), bpw, "{name}");
        assert_eq!(Format::from_ggml_type(ggml), Some(f), "{name} by ggml type");
    }
    // f16 (ggml type 1) is a direct format, not a block type; q8_1 and q8_K are ggml's
    // activation types and ggml's own nvfp4 (40) is not registered.
    for id in [1, 9, 15, 40] {
        assert_eq!(Format::from_ggml_type(id), None, "ggml type {id}");
    }
}

#[test]
fn layout_pairs_are_the_closed_table_of_layouts_md() {
    for (layout, formats) in PAIRS {
        let l: Layout = layout.parse().unwrap();
        assert_eq!(l.to_string(), layout);
        let got: Vec<&str> = l.formats().iter().map(|f| f.name()).collect();
        assert_eq!(got, formats, "{layout}");
    }
    let total: usize = PAIRS.iter().map(|(_, f)| f.len()).sum();
    assert_eq!(total, Format::COUNT, "every format has exactly one layout");
}

#[test]
fn unknown_names_are_errors_listing_the_valid_names() {
    match "q4".parse::<Format>() {
        Err(Error::UnknownName { kind: "format", name, valid }) => {
            assert_eq!(name, "q4");
            for f in Format::ALL {
                assert!(valid.contains(f.name()), "{f} listed");
            }
        }
        other => panic!("expected an unknown-format error, got {other:?}"),
    }
    assert!(
        matches!("Q4_G64_FP16".parse::<Format>(), Err(Error::UnknownName { .. })),
        "names are canonical lower case"
    );
    assert!(matches!("row_split".parse::<Layout>(), Err(Error::UnknownName { kind: "layout", .. })));
}

#[test]
fn a_format_refuses_a_layout_outside_its_pair() {
    let err = Format::Q4G64Fp16.check_layout(Layout::ContiguousLeV1).unwrap_err();
    assert!(err.to_string().contains("row_split_k128_v1"), "{err}");
}

#[test]
fn every_grouped_format_has_a_packing() {
    // row_split packs only the widths layouts.md names; a new width must add its packing (and
    // the codecs' branch for it) rather than fall into another width's.
    for f in Format::ALL {
        if f.category() == Category::Grouped {
            assert!(ninfer_wgpu::layout::row_split::plane_spec(f).is_some(), "{f}: no row_split packing");
        }
    }
}

#[test]
fn every_ggml_type_row_is_consistent() {
    for f in Format::ALL {
        let Some(t) = f.gguf() else { continue };
        assert_eq!(f.spec().geometry, Geometry::Block { values: t.values, bytes: t.bytes }, "{f}");
        assert_eq!(f.name(), format!("gguf_{}", t.ggml_name.to_lowercase()), "{f}: the name is gguf_ + ggml's");
        let fields: &[usize] = match t.f16 {
            ninfer_wgpu::format::F16Fields::At(at) => at,
            ninfer_wgpu::format::F16Fields::TopNibbles(at) => &[at, at + 2, at + 4, at + 6],
            ninfer_wgpu::format::F16Fields::E8m0(at) => {
                assert!(at < t.bytes, "{f}: the E8M0 byte inside the block");
                &[]
            }
        };
        assert!(fields.iter().all(|&at| at + 2 <= t.bytes), "{f}: binary16 fields inside the block");
    }
}
