//! The `quantize` input parsers: the header forms NumPy writes, the refusals, and every prefix
//! of a valid file refused without a panic. Files are assembled here byte by byte.

use ninfer_wgpu::container::sources::{parse_npy, parse_safetensors, FloatData};

/// An `.npy` file of `version` (1: u16 header length; 2: u32) around a header dict text.
fn npy(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        out.extend((dict.len() as u16).to_le_bytes());
    } else {
        out.extend((dict.len() as u32).to_le_bytes());
    }
    out.extend(dict.as_bytes());
    out.extend(data);
    out
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn npy_headers_as_numpy_writes_them() {
    let t = parse_npy(
        &npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }    \n", &f32s(&[1.0, 2.0, 3.0])),
        "v",
    )
    .unwrap();
    assert_eq!((t.shape.clone(), t.data), (vec![3], FloatData::F32(vec![1.0, 2.0, 3.0])));
    // Rank 0, a version-2 header, double quotes, no trailing comma.
    let t = parse_npy(&npy(2, "{\"descr\": \"<f2\", \"shape\": (), \"fortran_order\": False}\n", &[0x00, 0x3C]), "s")
        .unwrap();
    assert_eq!((t.shape.clone(), t.data), (vec![], FloatData::F16(vec![0x3C00])));
    let t =
        parse_npy(&npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }\n", &f32s(&[5.0, 6.0])), "m")
            .unwrap();
    assert_eq!(t.shape, vec![1, 2]);
}

#[test]
fn npy_refuses_what_it_cannot_read_exactly() {
    let refused = |dict: &str, data: &[u8], needle: &str| {
        let e = parse_npy(&npy(1, dict, data), "x").unwrap_err().to_string();
        assert!(e.contains(needle), "{dict}: {e}");
    };
    refused("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", &[0; 4], "little-endian");
    refused("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", &[0; 8], "<f8");
    refused("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", &[0; 16], "C order");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", &[0; 12], "need 16 data bytes");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", &[0; 20], "found 20");
    refused("{'descr': '<f4', 'shape': (2,), }", &[0; 8], "required");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", &[0; 8], "dimension");
    refused(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
        &[],
        "overflows",
    );
}

fn safetensors(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

#[test]
fn safetensors_reads_every_tensor_and_checks_offsets() {
    let data = [f32s(&[1.0, -1.0]), vec![0x80, 0x3F]].concat();
    let ok = safetensors(
        r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]},"__metadata__":{}}"#,
        &data,
    );
    let ts = parse_safetensors(&ok).unwrap();
    assert_eq!(ts.len(), 2);
    assert_eq!(ts[1].data, FloatData::Bf16(vec![0x3F80]));
    for (header, needle) in [
        (r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}}"#, "invalid shape, data type, or offset"),
        (r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#, "invalid shape, data type, or offset"),
        (
            r#"{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]}}"#,
            "F64",
        ),
        (r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}"#, "offset"),
        // Overlapping data, a gap, and a key given twice (serde would keep the last silently).
        (
            r#"{"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            "offset",
        ),
        (r#"{"a":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]}}"#, "offset"),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]}}"#,
            "appears twice",
        ),
    ] {
        let e = parse_safetensors(&safetensors(header, &data)).unwrap_err().to_string();
        assert!(e.contains(needle), "{header}: {e}");
    }
    let e = parse_safetensors(&safetensors(r#"{"__metadata__":{}}"#, &[])).unwrap_err().to_string();
    assert!(e.contains("no tensors"), "{e}");
}

/// An integer tensor has integer words and refuses the float view: the fuzzer found the float
/// view of an i32 tensor answering an empty vector, which a caller could take for no data.
#[test]
fn an_integer_tensor_refuses_the_float_view_and_a_float_tensor_the_integer_one() {
    let data = [[7i32, -3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(), vec![0x80, 0x3F]].concat();
    let ts = parse_safetensors(&safetensors(
        r#"{"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]}}"#,
        &data,
    ))
    .unwrap();
    assert_eq!(ts[0].to_i32().unwrap(), [7, -3]);
    let e = ts[0].to_f32().unwrap_err().to_string();
    assert!(e.contains("a: an integer tensor has no float values"), "{e}");
    assert_eq!(ts[1].to_f32().unwrap(), [1.0]);
    assert!(ts[1].to_i32().is_err());
}

#[test]
fn every_prefix_of_an_input_is_refused_without_panic() {
    let n = npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", &f32s(&[1.0, 2.0]));
    for len in 0..n.len() {
        assert!(parse_npy(&n[..len], "x").is_err(), "npy prefix {len}");
    }
    let s = safetensors(r#"{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#, &[0, 0x3C, 0, 0x3C]);
    for len in 0..s.len() {
        assert!(parse_safetensors(&s[..len]).is_err(), "safetensors prefix {len}");
    }
}
