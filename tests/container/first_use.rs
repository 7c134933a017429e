//! The rules checked when an object is first used: registered names, legal geometry, the
//! layout's encoded size, whole-row binding ranges and the auxiliaries of a use. An artifact
//! breaking one of them still opens, and its other objects stay usable.

use crate::common::*;
use ninfer_wgpu::container::{rule, Artifact};
use ninfer_wgpu::oracle::{self, Dequantized};
use serde_json::{json, Value};

fn object<'v>(root: &'v mut Value, id: &str) -> &'v mut Value {
    root["objects"].as_array_mut().unwrap().iter_mut().find(|o| o["id"] == id).unwrap()
}

/// Opens after `edit`, proves the bias is still usable, and returns the artifact.
fn opened_after(tag: &str, edit: impl FnOnce(&mut Value)) -> (Fixture, Artifact) {
    let f = fixture(tag, Some(500));
    edit_json(&f.entry, edit);
    let a = Artifact::open(&f.entry).expect("first-use rules do not stop an artifact from opening");
    assert_eq!(a.tensor("b").unwrap().payload(), f.tensors["b"].payload(), "other objects stay usable");
    (f, a)
}

#[test]
fn unknown_format_and_layout_names_are_refused_at_first_use() {
    let (_f, a) = opened_after("names-format", |v| object(v, "w")["format"] = json!("Q4"));
    assert_rule(a.tensor("w"), rule::TENSOR_NAMES);
    assert_rule(a.binding("layer.w"), rule::TENSOR_NAMES);
    let (_f, a) = opened_after("names-layout", |v| object(v, "w")["layout"] = json!("row_split_k128"));
    assert_rule(a.tensor_desc("w"), rule::TENSOR_NAMES);
}

#[test]
fn illegal_format_layout_pairs_and_divisors_are_refused_at_first_use() {
    let (_f, a) = opened_after("geometry-pair", |v| object(v, "w")["layout"] = json!("contiguous_le_v1"));
    assert_rule(a.tensor("w"), rule::TENSOR_GEOMETRY);
    // Only nvfp4 in block_scale_k16_m128x4_v1 may have divisors > 1.
    let (_f, a) = opened_after("geometry-divisors", |v| object(v, "w")["divisors"] = json!(2));
    assert_rule(a.tensor("w"), rule::TENSOR_GEOMETRY);
    let (_f, a) = opened_after("geometry-rank", |v| object(v, "w")["shape"] = json!([520]));
    assert_rule(a.tensor("w"), rule::TENSOR_GEOMETRY);
}

#[test]
fn bytes_must_equal_the_layouts_encoded_size() {
    let (_f, a) = opened_after("bytes-short", |v| object(v, "w")["bytes"] = json!(543));
    assert_rule(a.tensor("w"), rule::TENSOR_BYTES);
    // A shape whose encoded size is not the stored byte count: [4, 257] needs three K-splits.
    let (_f, a) = opened_after("bytes-shape", |v| object(v, "w")["shape"] = json!([N, 129 + 128]));
    assert_rule(a.tensor("w"), rule::TENSOR_BYTES);
}

#[test]
fn binding_ranges_resolve_only_as_whole_rows() {
    let (_f, a) = opened_after("rows-partial", |v| {
        v["bindings"]["layer.w_top"] = json!({ "parts": [{ "object": "w", "range": [1, 2 * K] }] })
    });
    assert_rule(a.binding("layer.w_top"), rule::BINDING_ROWS);
    let (_f, a) = opened_after("rows-end", |v| {
        v["bindings"]["layer.w_top"] = json!({ "parts": [{ "object": "w", "range": [0, K + 1] }] })
    });
    assert_rule(a.binding("layer.w_top"), rule::BINDING_ROWS);
}

#[test]
fn row_parts_resolve_to_the_rows_they_name() {
    let f = fixture("rows", Some(500));
    let a = Artifact::open(&f.entry).unwrap();
    let pieces = a.binding("layer.w_top").unwrap();
    let expected = [f.tensors["w"].slice_rows(0..2).unwrap(), f.tensors["w"].slice_rows(3..4).unwrap()];
    assert_eq!(pieces.len(), 2);
    for (p, e) in pieces.iter().zip(&expected) {
        assert_eq!(p.shape(), e.shape());
        assert_eq!(p.payload(), e.payload(), "rows are copied word for word");
    }
}

#[test]
fn row_parts_of_contiguous_tensors_stay_borrowed() {
    let (f, a) = opened_after("rows-borrowed", |v| {
        v["bindings"]["b"] = json!({ "parts": [{ "object": "b", "range": [1, 3] }] })
    });
    let pieces = a.binding("b").unwrap();
    assert_eq!(pieces[0].shape(), &[2]);
    assert_eq!(pieces[0].payload(), &f.tensors["b"].payload()[4..12]);
    let (_, payload) = pieces.into_iter().next().unwrap().into_parts();
    assert!(
        matches!(payload, std::borrow::Cow::Borrowed(_)),
        "a row range of a contiguous tensor in one file is not copied"
    );
}

#[test]
fn the_fixture_uses_resolve_with_their_auxiliaries() {
    let f = fixture("uses", Some(500));
    let a = Artifact::open(&f.entry).unwrap();
    let uses = a.root().uses.clone();
    let first = a.resolve_use(&uses[0]).unwrap();
    assert_eq!(first.parameter[0].shape(), &[N, K]);
    assert_eq!(first.auxiliaries.len(), 2);
    let second = a.resolve_use(&uses[1]).unwrap();
    let cols = &second.auxiliaries[&ninfer_wgpu::container::AuxRole::InputColumns][0];
    assert_eq!(oracle::dequant(cols).unwrap(), Dequantized::I32((0..64).rev().collect()));
}

fn use_after(tag: &str, which: usize, edit: impl FnOnce(&mut Value)) -> Result<(), ninfer_wgpu::Error> {
    let (_f, a) = opened_after(tag, edit);
    let u = a.root().uses[which].clone();
    a.resolve_use(&u).map(|_| ())
}

#[test]
fn the_activation_divisor_is_an_fp32_scalar() {
    assert_rule(
        use_after("aux-div-vector", 0, |v| {
            v["uses"][0]["auxiliaries"]["activation_input_divisor"] = json!({ "object": "b" })
        }),
        rule::AUX_DIVISOR,
    );
    // One bf16 element is a scalar of the wrong type.
    assert_rule(
        use_after("aux-div-bf16", 0, |v| {
            v["uses"][0]["auxiliaries"]["activation_input_divisor"] =
                json!({ "parts": [{ "object": "signs", "range": [0, 1] }] })
        }),
        rule::AUX_DIVISOR,
    );
    // A rank-1 fp32 element range of the bias is a whole-row [1] tensor: one element, still fp32,
    // so it is a valid scalar divisor.
    use_after("aux-div-row", 0, |v| {
        v["uses"][0]["auxiliaries"]["activation_input_divisor"] =
            json!({ "parts": [{ "object": "b", "range": [1, 2] }] })
    })
    .expect("one fp32 element is a scalar");
}

#[test]
fn hadamard_signs_are_bf16_of_length_k() {
    assert_rule(
        use_after("aux-signs-fp32", 0, |v| v["uses"][0]["auxiliaries"]["hadamard_signs"] = json!({ "object": "b" })),
        rule::AUX_HADAMARD,
    );
    assert_rule(
        use_after("aux-signs-short", 0, |v| {
            v["uses"][0]["auxiliaries"]["hadamard_signs"] =
                json!({ "parts": [{ "object": "signs", "range": [0, K - 1] }] })
        }),
        rule::AUX_HADAMARD,
    );
}

#[test]
fn input_columns_are_an_int32_permutation_for_gguf_only() {
    // On a q4 parameter.
    assert_rule(
        use_after("aux-cols-q4", 0, |v| v["uses"][0]["auxiliaries"]["input_columns"] = json!({ "object": "cols" })),
        rule::AUX_COLUMNS,
    );
    // Wrong length: K of the gguf parameter is 64.
    assert_rule(
        use_after("aux-cols-len", 1, |v| {
            v["uses"][1]["auxiliaries"]["input_columns"] = json!({ "parts": [{ "object": "cols", "range": [0, 32] }] })
        }),
        rule::AUX_COLUMNS,
    );
    assert_rule(
        use_after("aux-cols-type", 1, |v| v["uses"][1]["auxiliaries"]["input_columns"] = json!({ "object": "b" })),
        rule::AUX_COLUMNS,
    );
}

#[test]
fn input_columns_that_repeat_a_column_are_refused() {
    // Single file, so the payload offset of `cols` is payload_start + offset.
    let f = fixture("aux-cols-repeat", None);
    let v = read_json(&f.entry);
    let offset = v["objects"].as_array().unwrap().iter().find(|o| o["id"] == "cols").unwrap()["offset"]
        .as_u64()
        .unwrap() as usize;
    edit_bytes(&f.entry, |b| {
        let (_, start) = entry_layout(b);
        // cols[0] = 63 becomes 62, which cols[1] already holds.
        b[start + offset..start + offset + 4].copy_from_slice(&62i32.to_le_bytes());
    });
    let a = Artifact::open(&f.entry).unwrap();
    let u = a.root().uses[1].clone();
    assert_rule(a.resolve_use(&u), rule::AUX_COLUMNS);
}

#[test]
fn tensor_offsets_are_multiples_of_256_checked_at_first_use() {
    // container.md defers alignment, like sizes and names, to first use: the artifact opens and
    // only the misaligned tensor is refused.
    let f = fixture("offset-128", Some(500));
    edit_json(&f.entry, |v| object(v, "b")["offset"] = json!(2048 + 128));
    let a = Artifact::open(&f.entry).expect("a misaligned tensor does not stop the artifact opening");
    assert_eq!(a.tensor("w").unwrap().payload(), f.tensors["w"].payload(), "other objects stay usable");
    assert_rule(a.tensor("b"), rule::TENSOR_OFFSET);
}
