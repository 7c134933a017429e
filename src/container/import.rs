//! `import`: a GGUF file into a `.ninfer` artifact. Every tensor of a registered type keeps its
//! bytes (`import_encoded`: gguf_* blocks byte for byte, ggml F32/BF16/I32 as the direct formats
//! whose C-order words they are), each bound under its GGUF name; the GGUF metadata is kept
//! under the artifact metadata's `gguf` member.

use super::{ArtifactWriter, Binding};
use crate::encode::Provenance;
use crate::error::{short_list, Error, Result};
use crate::gguf::reader::{Array, GgufFile, TensorKind, Value};
use serde_json::{json, Map, Value as Json};

/// What an import wrote and what it left out.
pub struct Imported<'a> {
    pub writer: ArtifactWriter<'a>,
    /// (name, format, shape, payload bytes) of every imported tensor, in file order.
    pub tensors: Vec<(String, &'static str, Vec<usize>, usize)>,
    /// (name, ggml type) of every tensor whose type the registry does not hold.
    pub skipped: Vec<(String, &'static str)>,
}

/// Plans the artifact of `file`; tensors of unregistered types are an error naming them unless
/// `skip_unsupported`, when they are listed in `skipped` instead.
pub fn from_gguf(file: &GgufFile, skip_unsupported: bool) -> Result<Imported<'_>> {
    let skipped: Vec<(String, &'static str)> = file
        .tensors
        .iter()
        .filter_map(|t| match t.kind {
            TensorKind::NotRegistered { type_name } => Some((t.name.clone(), type_name)),
            TensorKind::Registered { .. } => None,
        })
        .collect();
    if !skipped.is_empty() && !skip_unsupported {
        let named: Vec<String> = skipped.iter().map(|(n, t)| format!("{n} ({t})")).collect();
        return Err(Error::Unsupported(format!(
            "{} tensor(s) have ggml types this registry does not hold: {}; --skip-unsupported imports the rest",
            skipped.len(),
            short_list(named.iter().map(String::as_str))
        )));
    }
    let mut writer = ArtifactWriter::new();
    let mut tensors = Vec::new();
    for info in &file.tensors {
        let TensorKind::Registered { format, .. } = info.kind else { continue };
        let t = file.tensor(&info.name)?;
        t.validate()?;
        tensors.push((info.name.clone(), format.name(), t.shape().to_vec(), t.payload().len()));
        let provenance = Provenance::new("import_encoded").with("source", "gguf").with("ggml_type", info.ggml_type);
        writer.set_provenance(&info.name, &provenance)?;
        writer.add_tensor(info.name.clone(), t);
        writer.bind(info.name.clone(), Binding::Object(info.name.clone()));
    }
    if tensors.is_empty() {
        return Err(Error::Unsupported("the GGUF file holds no tensor of a registered type".into()));
    }
    let mut gguf = Map::new();
    for (key, value) in &file.metadata {
        gguf.insert(key.clone(), json_of(value));
    }
    let mut metadata = Map::new();
    metadata.insert("gguf".into(), Json::Object(gguf));
    metadata.insert("gguf_version".into(), json!(file.version));
    writer.set_metadata(metadata);
    Ok(Imported { writer, tensors, skipped })
}

/// A float as JSON: its value when finite; JSON has no NaN or infinity, so those keep their bits
/// as a string rather than being dropped or replaced.
fn float(v: f64, bits: String) -> Json {
    serde_json::Number::from_f64(v).map(Json::Number).unwrap_or(Json::String(bits))
}

fn json_of(v: &Value) -> Json {
    match v {
        Value::U8(x) => json!(x),
        Value::I8(x) => json!(x),
        Value::U16(x) => json!(x),
        Value::I16(x) => json!(x),
        Value::U32(x) => json!(x),
        Value::I32(x) => json!(x),
        Value::U64(x) => json!(x),
        Value::I64(x) => json!(x),
        Value::F32(x) => float(*x as f64, format!("f32:{:#010x}", x.to_bits())),
        Value::F64(x) => float(*x, format!("f64:{:#018x}", x.to_bits())),
        Value::Bool(x) => json!(x),
        Value::String(x) => json!(x),
        Value::Array(a) => array_json(a),
    }
}

fn array_json(a: &Array) -> Json {
    match a {
        Array::U8(v) => json!(v),
        Array::I8(v) => json!(v),
        Array::U16(v) => json!(v),
        Array::I16(v) => json!(v),
        Array::U32(v) => json!(v),
        Array::I32(v) => json!(v),
        Array::U64(v) => json!(v),
        Array::I64(v) => json!(v),
        Array::F32(v) => {
            Json::Array(v.iter().map(|x| float(*x as f64, format!("f32:{:#010x}", x.to_bits()))).collect())
        }
        Array::F64(v) => Json::Array(v.iter().map(|x| float(*x, format!("f64:{:#018x}", x.to_bits()))).collect()),
        Array::Bool(v) => json!(v),
        Array::String(v) => json!(v),
        Array::Array(v) => Json::Array(v.iter().map(array_json).collect()),
    }
}
