//! Shared fixtures: a temporary directory, a small artifact exercising every kind of member, and
//! byte-level editors that rebuild the entry around an edited JSON text.

use ninfer_wgpu::container::{
    ActivationPolicy, ArtifactWriter, AuxRole, Binding, BindingPart, Component, Use, HEADER_BYTES, PAYLOAD_ALIGN,
};
use ninfer_wgpu::encode::direct::{self, DirectSource};
use ninfer_wgpu::encode::grouped;
use ninfer_wgpu::encode::Source;
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{EncodedTensor, Error, Format, Layout, TensorDesc};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use ninfer_wgpu_testkit::{write_safetensors, TempDir};

/// The fixture's tensors as written, by object id.
pub struct Fixture {
    pub dir: TempDir,
    pub entry: PathBuf,
    pub tensors: BTreeMap<String, EncodedTensor<'static>>,
    pub resource: Vec<u8>,
}

impl Fixture {
    /// Every file of the artifact, entry first.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut out = vec![self.entry.clone()];
        for i in 1.. {
            let p = self.dir.join(&format!("model.ninfer.part-{i:04}"));
            if !p.exists() {
                break;
            }
            out.push(p);
        }
        out
    }
}

/// K of the fixture's q4 weight: not a multiple of the group (64) or of the split (128).
pub const K: usize = 130;
pub const N: usize = 4;

/// Writes `model.ninfer`: a q4 weight [4, 130] from grouped_absmax, a gguf_q8_0 [2, 64], an int32
/// column permutation [64], bf16 Hadamard signs [130], an fp32 scalar divisor, an fp32 bias [4]
/// and a 5-byte resource; bindings (whole and row parts), two uses with every auxiliary role,
/// two components. With `part_limit` 500 it spans five files and `w` and `signs` straddle.
pub fn fixture(tag: &str, part_limit: Option<u64>) -> Fixture {
    let dir = TempDir::new(tag);
    let entry = dir.join("model.ninfer");
    let mut rng = Rng::new(0xC0_47A1_4E45);
    let values: Vec<f32> = (0..N * K).map(|_| rng.unit() * 3.0).collect();
    let w = grouped::grouped_absmax(Format::Q4G64Fp16, N, K, Source::F32(&values)).unwrap();
    let gguf_bytes: Vec<u8> = (0..2 * 2 * 34).map(|i| (i * 7 + 3) as u8).collect();
    let g = EncodedTensor::new(TensorDesc::new(Format::GgufQ8_0, Layout::GgufBlocksV1, &[2, 64]), gguf_bytes).unwrap();
    let cols: Vec<i32> = (0..64).rev().collect();
    let cols = direct::persist(Format::Int32, &[64], DirectSource::I32(&cols)).unwrap();
    let signs: Vec<u16> = (0..K).map(|i| if i % 3 == 0 { 0xBF80 } else { 0x3F80 }).collect();
    let signs = direct::persist(Format::Bf16, &[K], DirectSource::Bf16(&signs)).unwrap();
    let div = direct::persist(Format::Fp32, &[], DirectSource::F32(&[2.0])).unwrap();
    let b = direct::persist(Format::Fp32, &[4], DirectSource::F32(&[0.5, -1.0, 1e-3, 7.0])).unwrap();
    let resource = b"hello".to_vec();

    let mut tensors = BTreeMap::new();
    let mut writer = ArtifactWriter::new();
    if let Some(limit) = part_limit {
        writer = writer.part_limit(limit);
    }
    for (id, e) in [("w", w), ("g", g_encoded(g)), ("cols", cols), ("signs", signs), ("div", div), ("b", b)] {
        tensors.insert(id.to_owned(), e.tensor.clone());
        writer.add_encoded(id, e).unwrap();
    }
    writer.add_resource("tok", resource.clone());
    writer.bind("layer.w", Binding::Object("w".into()));
    // Rows 0..2 and 3..4 of w: elements [0, 2K) and [3K, 4K).
    writer.bind(
        "layer.w_top",
        Binding::Parts(vec![
            BindingPart { object: "w".into(), range: 0..2 * K as u64 },
            BindingPart { object: "w".into(), range: 3 * K as u64..4 * K as u64 },
        ]),
    );
    writer.bind("gate", Binding::Object("g".into()));
    writer.bind("b", Binding::Object("b".into()));
    let aux = |pairs: &[(AuxRole, &str)]| pairs.iter().map(|(r, id)| (*r, Binding::Object((*id).into()))).collect();
    writer.add_use(Use {
        parameter: "layer.w".into(),
        input: "x".into(),
        activation_policy: Some(ActivationPolicy::A16Only),
        auxiliaries: aux(&[(AuxRole::HadamardSigns, "signs"), (AuxRole::ActivationInputDivisor, "div")]),
    });
    writer.add_use(Use {
        parameter: "gate".into(),
        input: "x".into(),
        activation_policy: None,
        auxiliaries: aux(&[(AuxRole::InputColumns, "cols")]),
    });
    let config = |v: Value| v.as_object().cloned().unwrap();
    writer.add_component(
        "lm",
        Component {
            config: config(json!({ "layers": 1 })),
            target: None,
            resources: [("tokenizer".to_owned(), "tok".to_owned())].into(),
            proposal: None,
        },
    );
    writer.add_component(
        "draft",
        Component {
            config: config(json!({})),
            target: Some("lm".into()),
            resources: BTreeMap::new(),
            proposal: Some(config(json!({ "k": 4 }))),
        },
    );
    writer.set_metadata(config(json!({ "name": "fixture" })));
    writer.write(&entry).unwrap();
    Fixture { dir, entry, tensors, resource }
}

/// gguf blocks have no encoder; the fixture imports raw block bytes as they would arrive.
fn g_encoded(t: EncodedTensor<'static>) -> ninfer_wgpu::encode::Encoded {
    ninfer_wgpu::encode::Encoded {
        tensor: t,
        provenance: ninfer_wgpu::encode::Provenance::new("import_encoded").with("source", "test blocks"),
    }
}

/// `json_bytes` and the payload start of an entry file's bytes.
pub fn entry_layout(bytes: &[u8]) -> (usize, usize) {
    let json_bytes = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
    let payload_start = (HEADER_BYTES + json_bytes).div_ceil(PAYLOAD_ALIGN) * PAYLOAD_ALIGN;
    (json_bytes, payload_start)
}

/// The entry's JSON text (padding included).
pub fn json_text(entry: &Path) -> String {
    let bytes = std::fs::read(entry).unwrap();
    let (json_bytes, _) = entry_layout(&bytes);
    String::from_utf8(bytes[HEADER_BYTES..HEADER_BYTES + json_bytes].to_vec()).unwrap()
}

pub fn read_json(entry: &Path) -> Value {
    serde_json::from_str(&json_text(entry)).unwrap()
}

/// Rebuilds the entry around new JSON bytes, keeping the header's artifact id and the payload.
/// `pad`: pad with spaces to the 4096 boundary as writers do; otherwise leave a zero gap.
pub fn rebuild_entry(entry: &Path, json: &[u8], pad: bool) {
    let old = std::fs::read(entry).unwrap();
    let (_, payload_start) = entry_layout(&old);
    let payload = &old[payload_start..];
    let mut json = json.to_vec();
    if pad {
        let end = (HEADER_BYTES + json.len()).div_ceil(PAYLOAD_ALIGN) * PAYLOAD_ALIGN;
        json.resize(end - HEADER_BYTES, b' ');
    }
    let mut out = old[..HEADER_BYTES].to_vec();
    out[8..16].copy_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(&json);
    out.resize((HEADER_BYTES + json.len()).div_ceil(PAYLOAD_ALIGN) * PAYLOAD_ALIGN, 0);
    out.extend_from_slice(payload);
    std::fs::write(entry, out).unwrap();
}

/// Edits the JSON root as a value and rewrites the entry.
pub fn edit_json(entry: &Path, f: impl FnOnce(&mut Value)) {
    let mut v = read_json(entry);
    f(&mut v);
    rebuild_entry(entry, &serde_json::to_vec(&v).unwrap(), true);
}

/// Edits the JSON text (for what a `Value` cannot hold: duplicate keys, bad numbers, bad bytes).
pub fn edit_text(entry: &Path, f: impl FnOnce(&str) -> String) {
    let text = json_text(entry);
    let edited = f(text.trim_end());
    assert_ne!(edited, text.trim_end(), "the edit changed nothing");
    rebuild_entry(entry, edited.as_bytes(), true);
}

/// Applies `f` to a file's bytes.
pub fn edit_bytes(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// Asserts that `r` failed on `rule`, and that the message quotes it.
#[track_caller]
pub fn assert_rule<T: std::fmt::Debug>(r: Result<T, Error>, rule: &'static str) {
    match r {
        Err(e @ Error::Container { rule: got, .. }) if got == rule => {
            let message = e.to_string();
            assert!(message.contains(rule), "the message names the rule: {message}");
        }
        other => panic!("expected a refusal under rule {rule:?}, got {other:?}"),
    }
}
