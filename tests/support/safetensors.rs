//! A safetensors file written byte by byte (a u64 header length, the JSON header, the data), so
//! tests build checkpoints independently of the reader under test.

use serde_json::{json, Value};
use std::path::Path;

/// `(name, dtype, shape, little-endian data)` per tensor, laid out in order.
pub fn write_safetensors(path: &Path, tensors: &[(&str, &str, Vec<usize>, Vec<u8>)]) {
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), json!({ "format": "pt" }));
    let mut data: Vec<u8> = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        header.insert(
            (*name).into(),
            json!({ "dtype": dtype, "shape": shape, "data_offsets": [data.len(), data.len() + bytes.len()] }),
        );
        data.extend(bytes);
    }
    let text = serde_json::to_vec(&Value::Object(header)).unwrap();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text);
    out.extend(data);
    std::fs::write(path, out).unwrap();
}
