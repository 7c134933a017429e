//! One crafted file per reader rule: a valid five-file artifact, one edit, and the rule the
//! reader must name. Every edit starts from a fixture that opens (checked in roundtrip.rs), so
//! the refusal is caused by the edit alone.

use crate::common::*;
use ninfer_wgpu::container::{rule, Artifact, HEADER_BYTES};
use serde_json::{json, Value};

/// A fresh fixture, one edit, and the rule the reader must name.
#[track_caller]
fn case(tag: &str, edit: impl FnOnce(&Fixture), rule: &'static str) {
    let f = fixture(tag, Some(500));
    edit(&f);
    assert_rule(Artifact::open(&f.entry), rule);
}

/// A JSON edit as a case.
#[track_caller]
fn json_case(tag: &str, edit: impl FnOnce(&mut Value), rule: &'static str) {
    case(tag, |f| edit_json(&f.entry, edit), rule);
}

fn object<'v>(root: &'v mut Value, id: &str) -> &'v mut Value {
    root["objects"].as_array_mut().unwrap().iter_mut().find(|o| o["id"] == id).unwrap()
}

fn remove(v: &mut Value, key: &str) {
    v.as_object_mut().unwrap().remove(key);
}

fn part(f: &Fixture, i: usize) -> std::path::PathBuf {
    f.files()[i].clone()
}

#[test]
fn entry_header_needs_32_bytes_and_the_magic() {
    case("hdr-short", |f| edit_bytes(&f.entry, |b| b.truncate(20)), rule::ENTRY_HEADER);
    // Version 2 of the same magic is not this format.
    case("hdr-version", |f| edit_bytes(&f.entry, |b| b[7] = 2), rule::ENTRY_HEADER);
    case("hdr-part-magic", |f| edit_bytes(&f.entry, |b| b[..8].copy_from_slice(b"NINPRT\x00\x03")), rule::ENTRY_HEADER);
}

#[test]
fn json_bytes_is_positive_and_inside_the_file() {
    case(
        "jb-zero",
        |f| edit_bytes(&f.entry, |b| b[8..16].copy_from_slice(&0u64.to_le_bytes())),
        rule::ENTRY_JSON_BYTES,
    );
    case(
        "jb-huge",
        |f| edit_bytes(&f.entry, |b| b[8..16].copy_from_slice(&u64::MAX.to_le_bytes())),
        rule::ENTRY_JSON_BYTES,
    );
    case(
        "jb-past-end",
        |f| {
            edit_bytes(&f.entry, |b| {
                let n = b.len() as u64;
                b[8..16].copy_from_slice(&n.to_le_bytes())
            })
        },
        rule::ENTRY_JSON_BYTES,
    );
}

#[test]
fn the_gap_after_unpadded_json_is_zero() {
    let f = fixture("gap", Some(500));
    let text = json_text(&f.entry);
    // Without space padding the gap holds zero bytes: still a valid artifact.
    rebuild_entry(&f.entry, text.trim_end().as_bytes(), false);
    Artifact::open(&f.entry).expect("a zero gap after unpadded JSON is valid");
    let json_end = HEADER_BYTES + text.trim_end().len();
    edit_bytes(&f.entry, |b| b[json_end + 1] = b' ');
    assert_rule(Artifact::open(&f.entry), rule::ENTRY_GAP);
}

#[test]
fn the_entry_size_is_exact() {
    case("size-long", |f| edit_bytes(&f.entry, |b| b.push(0)), rule::ENTRY_SIZE);
    case(
        "size-short",
        |f| {
            edit_bytes(&f.entry, |b| {
                b.pop();
            })
        },
        rule::ENTRY_SIZE,
    );
    json_case("size-claim", |v| v["files"][0]["payload_bytes"] = json!(501), rule::ENTRY_SIZE);
}

#[test]
fn json_must_be_utf8() {
    case(
        "utf8",
        |f| {
            let mut bytes = json_text(&f.entry).trim_end().as_bytes().to_vec();
            let at = bytes.windows(7).position(|w| w == b"fixture").unwrap();
            bytes[at] = 0xFF;
            rebuild_entry(&f.entry, &bytes, true);
        },
        rule::JSON_UTF8,
    );
}

#[test]
fn json_must_be_well_formed() {
    case("syntax-open", |f| edit_text(&f.entry, |t| t[..t.len() - 1].to_owned()), rule::JSON_SYNTAX);
    case("syntax-trailing", |f| edit_text(&f.entry, |t| format!("{t} {{}}")), rule::JSON_SYNTAX);
    case("syntax-comma", |f| edit_text(&f.entry, |t| t.replacen("\"uses\":", "\"uses\":,", 1)), rule::JSON_SYNTAX);
}

#[test]
fn duplicate_keys_are_refused_at_any_depth() {
    // serde_json alone would keep the second `uses` silently.
    case(
        "dup-root",
        |f| edit_text(&f.entry, |t| t.replacen("\"uses\":[", "\"uses\":[],\"uses\":[", 1)),
        rule::JSON_DUPLICATE_KEY,
    );
    // Same value twice is still two keys.
    case(
        "dup-object",
        |f| edit_text(&f.entry, |t| t.replacen("\"kind\":\"tensor\"", "\"kind\":\"tensor\",\"kind\":\"tensor\"", 1)),
        rule::JSON_DUPLICATE_KEY,
    );
    case(
        "dup-metadata",
        |f| edit_text(&f.entry, |t| t.replacen("\"name\":\"fixture\"", "\"name\":\"fixture\",\"name\":\"other\"", 1)),
        rule::JSON_DUPLICATE_KEY,
    );
}

#[test]
fn numbers_beyond_f64_are_refused_as_non_finite() {
    case(
        "nonfinite-1e999",
        |f| edit_text(&f.entry, |t| t.replacen("\"name\":\"fixture\"", "\"name\":\"fixture\",\"x\":1e999", 1)),
        rule::JSON_NON_FINITE,
    );
    case(
        "nonfinite-neg",
        |f| edit_text(&f.entry, |t| t.replacen("\"layers\":1", "\"layers\":-1e400", 1)),
        rule::JSON_NON_FINITE,
    );
    // NaN and Infinity are not JSON at all.
    case(
        "nonfinite-nan",
        |f| edit_text(&f.entry, |t| t.replacen("\"layers\":1", "\"layers\":NaN", 1)),
        rule::JSON_SYNTAX,
    );
}

#[test]
fn the_root_is_an_object() {
    case("root-array", |f| rebuild_entry(&f.entry, b"[]", true), rule::ROOT_OBJECT);
}

#[test]
fn unknown_root_members_are_refused() {
    json_case("root-unknown", |v| v["version"] = json!(3), rule::UNKNOWN_MEMBER);
}

#[test]
fn required_root_members_are_present() {
    for member in ["components", "objects", "bindings", "uses", "files"] {
        json_case(&format!("root-missing-{member}"), |v| remove(v, member), rule::REQUIRED_MEMBER);
    }
}

#[test]
fn root_members_have_their_types() {
    json_case("type-uses", |v| v["uses"] = json!({}), rule::MEMBER_TYPE);
    json_case("type-components", |v| v["components"] = json!([]), rule::MEMBER_TYPE);
    json_case("type-objects-empty", |v| v["objects"] = json!([]), rule::MEMBER_TYPE);
    json_case("type-files-empty", |v| v["files"] = json!([]), rule::MEMBER_TYPE);
    json_case("type-provenance", |v| v["provenance"] = json!("grouped_absmax"), rule::MEMBER_TYPE);
    json_case("type-metadata", |v| v["metadata"] = json!(null), rule::MEMBER_TYPE);
}

#[test]
fn metadata_name_is_a_non_empty_string() {
    json_case("name-empty", |v| v["metadata"]["name"] = json!(""), rule::METADATA_NAME);
    json_case("name-number", |v| v["metadata"]["name"] = json!(7), rule::METADATA_NAME);
}

#[test]
fn file_entries_have_exactly_path_and_positive_payload_bytes() {
    json_case("file-zero", |v| v["files"][4]["payload_bytes"] = json!(0), rule::FILE_ENTRY);
    json_case("file-string", |v| v["files"][1]["payload_bytes"] = json!("500"), rule::FILE_ENTRY);
    json_case("file-extra", |v| v["files"][1]["sha256"] = json!("00"), rule::FILE_ENTRY);
    json_case("file-missing", |v| remove(&mut v["files"][2], "path"), rule::FILE_ENTRY);
}

#[test]
fn the_entry_path_is_null_and_parts_have_names() {
    json_case("path-entry", |v| v["files"][0]["path"] = json!("model.ninfer"), rule::ENTRY_PATH_NULL);
    json_case("path-part-null", |v| v["files"][1]["path"] = json!(null), rule::ENTRY_PATH_NULL);
}

#[test]
fn part_paths_cannot_leave_the_directory() {
    for (i, bad) in ["../model.ninfer.part-0001", "sub/part", "sub\\part", "", ".", "..", "part\u{0}1", "/tmp/part"]
        .into_iter()
        .enumerate()
    {
        json_case(&format!("path-{i}"), |v| v["files"][1]["path"] = json!(bad), rule::PART_PATH);
    }
}

#[test]
fn part_paths_are_unique_and_not_the_entry() {
    json_case("path-dup", |v| v["files"][2]["path"] = v["files"][1]["path"].clone(), rule::PART_PATH_UNIQUE);
    json_case("path-self", |v| v["files"][1]["path"] = json!("model.ninfer"), rule::PART_PATH_UNIQUE);
}

#[test]
fn every_listed_part_exists() {
    case("part-missing", |f| std::fs::remove_file(part(f, 3)).unwrap(), rule::PART_OPEN);
}

#[test]
fn parts_start_with_their_header() {
    case("part-magic", |f| edit_bytes(&part(f, 2), |b| b[..8].copy_from_slice(b"NINFER\x00\x03")), rule::PART_HEADER);
    case("part-short", |f| edit_bytes(&part(f, 2), |b| b.truncate(31)), rule::PART_HEADER);
}

#[test]
fn part_index_matches_the_position_in_files() {
    case("part-index", |f| edit_bytes(&part(f, 2), |b| b[8] = 3), rule::PART_INDEX);
    // Two parts swapped on disk: each carries the other's index.
    case(
        "part-swap",
        |f| {
            let (a, b) = (part(f, 1), part(f, 2));
            let tmp = f.dir.join("swap");
            std::fs::rename(&a, &tmp).unwrap();
            std::fs::rename(&b, &a).unwrap();
            std::fs::rename(&tmp, &b).unwrap();
        },
        rule::PART_INDEX,
    );
}

#[test]
fn every_part_carries_the_artifact_id() {
    case("id-flip", |f| edit_bytes(&part(f, 4), |b| b[31] ^= 0x01), rule::ARTIFACT_ID);
    // A part from another artifact with the same layout.
    case(
        "id-foreign",
        |f| {
            let other = fixture("id-foreign-src", Some(500));
            std::fs::copy(&other.files()[1], part(f, 1)).unwrap();
        },
        rule::ARTIFACT_ID,
    );
}

#[test]
fn part_header_padding_is_zero() {
    case("part-gap", |f| edit_bytes(&part(f, 1), |b| b[4095] = 1), rule::PART_GAP);
}

#[test]
fn part_size_is_exact() {
    case("part-long", |f| edit_bytes(&part(f, 4), |b| b.push(0)), rule::PART_SIZE);
    case(
        "part-short-payload",
        |f| {
            edit_bytes(&part(f, 3), |b| {
                b.pop();
            })
        },
        rule::PART_SIZE,
    );
    case("part-no-payload", |f| edit_bytes(&part(f, 3), |b| b.truncate(4096)), rule::PART_SIZE);
}

#[test]
fn objects_are_tensors_or_resources() {
    json_case("kind-blob", |v| object(v, "tok")["kind"] = json!("blob"), rule::OBJECT_KIND);
    json_case("kind-missing", |v| remove(object(v, "b"), "kind"), rule::OBJECT_KIND);
    json_case("kind-number", |v| v["objects"][0] = json!(5), rule::OBJECT_KIND);
}

#[test]
fn tensor_objects_have_exactly_their_members() {
    json_case("tensor-extra", |v| object(v, "w")["dtype"] = json!("f32"), rule::TENSOR_MEMBERS);
    json_case("tensor-no-layout", |v| remove(object(v, "w"), "layout"), rule::TENSOR_MEMBERS);
    json_case("tensor-offset-string", |v| object(v, "w")["offset"] = json!("0"), rule::TENSOR_MEMBERS);
    json_case("tensor-offset-float", |v| object(v, "w")["offset"] = json!(0.0), rule::TENSOR_MEMBERS);
    json_case("tensor-format-number", |v| object(v, "w")["format"] = json!(4), rule::TENSOR_MEMBERS);
}

#[test]
fn resource_objects_have_exactly_their_members() {
    json_case("resource-shape", |v| object(v, "tok")["shape"] = json!([5]), rule::RESOURCE_MEMBERS);
    json_case("resource-no-encoding", |v| remove(object(v, "tok"), "encoding"), rule::RESOURCE_MEMBERS);
}

#[test]
fn ids_are_non_empty_strings_without_nul() {
    json_case("id-empty", |v| object(v, "tok")["id"] = json!(""), rule::OBJECT_ID);
    json_case("id-nul", |v| object(v, "tok")["id"] = json!("to\u{0}k"), rule::OBJECT_ID);
    json_case("id-number", |v| object(v, "tok")["id"] = json!(3), rule::OBJECT_ID);
}

#[test]
fn ids_are_unique_over_both_kinds() {
    json_case("id-dup", |v| object(v, "tok")["id"] = json!("w"), rule::OBJECT_ID_UNIQUE);
}

#[test]
fn shapes_have_rank_0_to_16_of_positive_integers() {
    json_case("shape-zero", |v| object(v, "b")["shape"] = json!([0]), rule::TENSOR_SHAPE);
    json_case("shape-negative", |v| object(v, "b")["shape"] = json!([-4]), rule::TENSOR_SHAPE);
    json_case("shape-float", |v| object(v, "b")["shape"] = json!([4.0]), rule::TENSOR_SHAPE);
    json_case("shape-rank17", |v| object(v, "b")["shape"] = json!(vec![1; 17]), rule::TENSOR_SHAPE);
    json_case("shape-overflow", |v| object(v, "b")["shape"] = json!([u64::MAX, 2]), rule::TENSOR_SHAPE);
    json_case("shape-string", |v| object(v, "b")["shape"] = json!("4"), rule::TENSOR_SHAPE);
}

#[test]
fn rank_16_is_allowed() {
    let f = fixture("shape-rank16", Some(500));
    // The element count still matches the 4 stored values; bytes are checked at first use.
    edit_json(&f.entry, |v| object(v, "b")["shape"] = json!([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2]));
    Artifact::open(&f.entry).expect("rank 16 opens");
}

#[test]
fn resources_may_sit_at_any_byte() {
    let f = fixture("resource-align", Some(500));
    let start = read_json(&f.entry)["objects"].as_array().unwrap().iter().find(|o| o["id"] == "tok").unwrap()["offset"]
        .as_u64()
        .unwrap();
    // Four bytes earlier: the zero gap before the resource, then its first byte.
    edit_json(&f.entry, |v| object(v, "tok")["offset"] = json!(start - 4));
    assert_eq!(&*Artifact::open(&f.entry).unwrap().resource("tok").unwrap(), b"\0\0\0\0h");
}

#[test]
fn divisors_is_a_positive_integer() {
    json_case("divisors-zero", |v| object(v, "b")["divisors"] = json!(0), rule::TENSOR_DIVISORS);
    json_case("divisors-string", |v| object(v, "b")["divisors"] = json!("2"), rule::TENSOR_DIVISORS);
}

#[test]
fn resource_encoding_is_raw_bytes_v1() {
    json_case("encoding", |v| object(v, "tok")["encoding"] = json!("base64"), rule::RESOURCE_ENCODING);
}

#[test]
fn resource_bytes_are_positive() {
    json_case("resource-empty", |v| object(v, "tok")["bytes"] = json!(0), rule::RESOURCE_BYTES);
}

#[test]
fn objects_are_sorted_and_never_overlap() {
    json_case("order-swap", |v| v["objects"].as_array_mut().unwrap().swap(0, 1), rule::OBJECTS_SORTED);
    // `g` moved back onto the end of `w` (544 bytes at 0): 512 is aligned but overlaps.
    json_case("order-overlap", |v| object(v, "g")["offset"] = json!(512), rule::OBJECTS_SORTED);
    json_case("order-same", |v| object(v, "g")["offset"] = json!(0), rule::OBJECTS_SORTED);
}

#[test]
fn objects_lie_inside_the_logical_payload() {
    json_case("bounds-past", |v| object(v, "tok")["bytes"] = json!(6), rule::OBJECT_BOUNDS);
    json_case("bounds-overflow", |v| object(v, "tok")["bytes"] = json!(u64::MAX), rule::OBJECT_BOUNDS);
    json_case("bounds-offset", |v| object(v, "b")["offset"] = json!(1u64 << 40), rule::OBJECT_BOUNDS);
}

#[test]
fn components_have_config_and_known_members() {
    json_case("component-no-config", |v| remove(&mut v["components"]["lm"], "config"), rule::COMPONENT);
    json_case("component-extra", |v| v["components"]["lm"]["weights"] = json!([]), rule::COMPONENT);
    json_case("component-config-array", |v| v["components"]["lm"]["config"] = json!([]), rule::COMPONENT);
    json_case("component-not-object", |v| v["components"]["lm"] = json!("lm"), rule::COMPONENT);
}

#[test]
fn component_targets_exist() {
    json_case("target", |v| v["components"]["draft"]["target"] = json!("big-lm"), rule::COMPONENT_TARGET);
}

#[test]
fn component_resources_name_resource_objects() {
    json_case(
        "resource-tensor",
        |v| v["components"]["lm"]["resources"]["tokenizer"] = json!("w"),
        rule::COMPONENT_RESOURCE,
    );
    json_case(
        "resource-missing",
        |v| v["components"]["lm"]["resources"]["tokenizer"] = json!("vocab"),
        rule::COMPONENT_RESOURCE,
    );
}

#[test]
fn bindings_are_an_object_or_parts() {
    json_case("binding-both", |v| v["bindings"]["gate"]["parts"] = json!([]), rule::BINDING);
    json_case("binding-empty-parts", |v| v["bindings"]["gate"] = json!({ "parts": [] }), rule::BINDING);
    json_case(
        "binding-range-short",
        |v| v["bindings"]["gate"] = json!({ "parts": [{ "object": "g", "range": [0] }] }),
        rule::BINDING,
    );
    json_case(
        "binding-part-extra",
        |v| v["bindings"]["gate"] = json!({ "parts": [{ "object": "g", "range": [0, 64], "axis": 0 }] }),
        rule::BINDING,
    );
    json_case("binding-string", |v| v["bindings"]["gate"] = json!("g"), rule::BINDING);
}

#[test]
fn bindings_name_tensor_objects() {
    json_case("binding-resource", |v| v["bindings"]["gate"] = json!({ "object": "tok" }), rule::BINDING_OBJECT);
    json_case("binding-missing", |v| v["bindings"]["gate"] = json!({ "object": "up" }), rule::BINDING_OBJECT);
}

#[test]
fn binding_ranges_are_non_empty_and_inside_the_object() {
    json_case(
        "range-empty",
        |v| v["bindings"]["gate"] = json!({ "parts": [{ "object": "g", "range": [64, 64] }] }),
        rule::BINDING_RANGE,
    );
    json_case(
        "range-reversed",
        |v| v["bindings"]["gate"] = json!({ "parts": [{ "object": "g", "range": [64, 0] }] }),
        rule::BINDING_RANGE,
    );
    json_case(
        "range-past",
        |v| v["bindings"]["gate"] = json!({ "parts": [{ "object": "g", "range": [0, 129] }] }),
        rule::BINDING_RANGE,
    );
}

#[test]
fn uses_have_parameter_input_and_known_members() {
    json_case("use-no-input", |v| remove(&mut v["uses"][0], "input"), rule::USE);
    json_case("use-extra", |v| v["uses"][0]["bias"] = json!("b"), rule::USE);
    json_case("use-input-number", |v| v["uses"][0]["input"] = json!(0), rule::USE);
}

#[test]
fn a_use_names_a_binding() {
    // An object id is not a binding name.
    json_case("use-object", |v| v["uses"][0]["parameter"] = json!("signs"), rule::USE_PARAMETER);
}

#[test]
fn activation_policy_is_one_of_three() {
    json_case("policy", |v| v["uses"][0]["activation_policy"] = json!("AllowA2"), rule::USE_POLICY);
    json_case("policy-case", |v| v["uses"][0]["activation_policy"] = json!("a16only"), rule::USE_POLICY);
}

#[test]
fn parameter_input_pairs_are_unique() {
    json_case("use-dup", |v| v["uses"][1]["parameter"] = json!("layer.w"), rule::USE_UNIQUE);
}

#[test]
fn auxiliary_roles_are_a_closed_set() {
    json_case("aux-role", |v| v["uses"][0]["auxiliaries"]["smooth_scales"] = json!({ "object": "b" }), rule::AUX_ROLE);
    // An auxiliary is a binding, with the binding rules.
    json_case(
        "aux-binding",
        |v| v["uses"][0]["auxiliaries"]["hadamard_signs"] = json!({ "object": "tok" }),
        rule::BINDING_OBJECT,
    );
}
