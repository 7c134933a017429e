//! Classes 2, 3 and 6: readers are linear-time and memory-bounded, and refuse files whose parts
//! disagree (overlapping tensors, partial blocks, ragged or self-repeating bindings). Linear time
//! is checked by counting work at n and 2n ([`super::assert_linear`]), not by a clock: a busy
//! machine slows both alike, a quadratic reader quadruples its count.

use super::files::TempDir;
use ninfer_wgpu::container::{rule, Artifact, ArtifactWriter, Binding, BindingPart};
use ninfer_wgpu::gguf::reader::{Array, GgufFile, Value};
use ninfer_wgpu::testgen::{random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Format, Layout, TensorDesc};

/// A GGUF v3 image: `kv` writes the metadata pairs, then tensor infos (name, dims, type,
/// offset), alignment padding and `data`.
fn gguf(n_kv: u64, kv: &[u8], tensors: &[(String, Vec<u64>, u32, u64)], data: &[u8]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend((tensors.len() as u64).to_le_bytes());
    b.extend(n_kv.to_le_bytes());
    b.extend(kv);
    for (name, dims, ty, offset) in tensors {
        b.extend((name.len() as u64).to_le_bytes());
        b.extend(name.as_bytes());
        b.extend((dims.len() as u32).to_le_bytes());
        dims.iter().for_each(|d| b.extend(d.to_le_bytes()));
        b.extend(ty.to_le_bytes());
        b.extend(offset.to_le_bytes());
    }
    b.resize(b.len().div_ceil(32) * 32, 0);
    b.extend(data);
    b
}

/// `prefix` and `i` in 7 digits. Names of one length: strings of different lengths compare
/// unequal without comparing their bytes, which would hide most of a scan's work from the count.
fn name(prefix: &str, i: usize) -> String {
    format!("{prefix}{i:07}")
}

fn string(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as u64).to_le_bytes());
    b.extend(s.as_bytes());
}

fn expect_error(bytes: Vec<u8>, needle: &str) {
    let e = GgufFile::from_bytes(bytes).err().unwrap_or_else(|| panic!("accepted; expected `{needle}`")).to_string();
    assert!(e.contains(needle), "expected `{needle}`: {e}");
    assert!(e.len() < 700, "a short error: {} characters", e.len());
}

/// A GGUF of `n` u8 metadata pairs whose last key repeats the first. Names of one length, as
/// [`name`] makes them, so that a scan compares every pair.
fn repeated_key(n: usize) -> Vec<u8> {
    let mut kv = Vec::new();
    for i in 0..n {
        string(&mut kv, &name("key.", if i == n - 1 { 0 } else { i }));
        kv.extend(0u32.to_le_bytes()); // u8
        kv.push(7);
    }
    gguf(n as u64, &kv, &[], &[])
}

/// A GGUF of `n` tensor infos whose last name repeats the first. Unknown ggml types have no
/// size, so the infos need no data.
fn repeated_name(n: usize) -> Vec<u8> {
    let tensors: Vec<_> = (0..n).map(|i| (name("t.", if i == n - 1 { 0 } else { i }), vec![4], 99, 0)).collect();
    gguf(0, &[], &tensors, &[])
}

#[test]
fn duplicate_checks_over_320k_keys_and_320k_tensors_are_linear() {
    // Counted first, at sizes where a quadratic check still ends (2·10^8 comparisons at 2n);
    // then the size a hostile file would use.
    super::assert_linear("duplicate keys", 10_000, repeated_key, |b| expect_error(b, "keys are unique"));
    super::assert_linear("duplicate tensor names", 10_000, repeated_name, |b| {
        expect_error(b, "tensor names are unique")
    });
    expect_error(repeated_key(320_000), "keys are unique");
    expect_error(repeated_name(320_000), "tensor names are unique");
}

#[test]
fn a_64_mb_metadata_array_is_kept_as_64_mb() {
    let n = 64 << 20;
    let mut kv = Vec::new();
    string(&mut kv, "big");
    kv.extend(9u32.to_le_bytes()); // array
    kv.extend(0u32.to_le_bytes()); // of u8
    kv.extend((n as u64).to_le_bytes());
    kv.resize(kv.len() + n, 0xAB);
    let f = GgufFile::from_bytes(gguf(1, &kv, &[], &[])).unwrap();
    match f.metadata("big") {
        Some(Value::Array(Array::U8(v))) => assert_eq!((v.len(), v.capacity()), (n, n), "one byte per element"),
        other => panic!("{:?}", other.map(|_| "another representation")),
    }
}

#[test]
fn gguf_partial_blocks_and_overlapping_tensors_are_refused_at_open() {
    // q8_0 (type 8) with K = 33: no whole number of 32-value blocks per row.
    expect_error(gguf(0, &[], &[("w".into(), vec![33, 2], 8, 0)], &[0; 128]), "multiple of its block");
    // q4_1 (type 3, not registered) with the same defect.
    expect_error(gguf(0, &[], &[("w".into(), vec![33], 3, 0)], &[0; 64]), "multiple of its block");
    let two = |second: u64| gguf(0, &[], &[("a".into(), vec![32], 8, 0), ("b".into(), vec![32], 8, second)], &[0; 128]);
    expect_error(two(0), "without overlapping");
    expect_error(two(32), "without overlapping"); // q8_0 [32] is 34 bytes: 32 overlaps
    assert!(GgufFile::from_bytes(two(64)).is_ok(), "the next aligned offset is fine");
}

fn bf16(rng: &mut Rng, shape: &[usize]) -> EncodedTensor<'static> {
    EncodedTensor::encode(&random_words(Format::Bf16, shape, 1, rng, Words::Finite).unwrap(), Layout::ContiguousLeV1)
        .unwrap()
}

/// An artifact of `n` one-value bf16 tensors `t0`, `t1`, ...
fn many_tensors(dir: &TempDir, n: usize) -> std::path::PathBuf {
    let mut rng = Rng::new(9);
    let mut writer = ArtifactWriter::new();
    let one = bf16(&mut rng, &[1]);
    for i in 0..n {
        writer.add_tensor(name("t", i), one.clone());
    }
    let entry = dir.join(&format!("many-{n}.ninfer"));
    writer.write(&entry).unwrap();
    entry
}

/// Opens an artifact and looks every tensor up by its id.
fn open_and_resolve_all(entry: std::path::PathBuf) -> Artifact {
    let a = Artifact::open(&entry).unwrap();
    for o in a.objects() {
        a.tensor(&o.id).unwrap().validate().unwrap();
    }
    a
}

#[test]
fn an_artifact_of_100k_tensors_opens_and_resolves_in_linear_time() {
    let dir = TempDir::new("many");
    super::assert_linear("open and resolve every tensor", 10_000, |n| many_tensors(&dir, n), open_and_resolve_all);
    let a = open_and_resolve_all(many_tensors(&dir, 100_000));
    let e = a.tensor("missing").unwrap_err().to_string();
    assert!(e.contains("and 99988 more") && e.len() < 400, "{e}");
    assert!(dir.path().exists());
}

fn parts(list: &[(&str, u64, u64)]) -> Binding {
    Binding::Parts(list.iter().map(|&(o, b, e)| BindingPart { object: o.into(), range: b..e }).collect())
}

#[test]
fn ragged_and_self_repeating_bindings_are_refused_on_use() {
    let dir = TempDir::new("bindings");
    let mut rng = Rng::new(10);
    let mut writer = ArtifactWriter::new();
    writer.add_tensor("a", bf16(&mut rng, &[8, 256]));
    writer.add_tensor("b", bf16(&mut rng, &[4, 128]));
    writer.add_tensor("c", bf16(&mut rng, &[4, 256]));
    writer.bind("ragged", parts(&[("a", 0, 8 * 256), ("b", 0, 4 * 128)]));
    writer.bind("stacked", parts(&[("a", 0, 8 * 256), ("c", 256, 4 * 256)]));
    let repeats = |n: usize| parts(&vec![("a", 0, 8 * 256); n]);
    writer.bind("repeats", repeats(100_000));
    writer.bind("repeats-10k", repeats(10_000));
    writer.bind("repeats-20k", repeats(20_000));
    let entry = dir.join("b.ninfer");
    writer.write(&entry).unwrap();
    let a = Artifact::open(&entry).unwrap();
    let e = a.binding("ragged").unwrap_err().to_string();
    assert!(e.contains(rule::BINDING_STACK) && e.contains("[4, 128]"), "{e}");
    let shapes: Vec<Vec<usize>> = a.binding("stacked").unwrap().iter().map(|t| t.shape().to_vec()).collect();
    assert_eq!(shapes, [vec![8, 256], vec![3, 256]]);
    let refused = |name: &str| {
        let e = a.binding(name).unwrap_err().to_string();
        assert!(e.contains(rule::BINDING_EXPANSION), "{name}: {e}");
    };
    super::assert_linear(
        "a self-repeating binding",
        10_000,
        |n| format!("repeats-{}k", n / 1000),
        |name| refused(&name),
    );
    refused("repeats");
}

#[test]
fn a_gguf_tensor_past_the_data_is_refused_and_an_unknown_name_lists_few() {
    let tensors: Vec<_> = (0..40_000u64).map(|i| (format!("t{i}"), vec![32], 8, i * 64)).collect();
    let data = vec![0u8; 40_000 * 64];
    let f = GgufFile::from_bytes(gguf(0, &[], &tensors, &data)).unwrap();
    let e = f.tensor("nope").unwrap_err().to_string();
    assert!(e.contains("and 39988 more") && e.len() < 400, "{e}");
    let short = gguf(0, &[], &[("w".into(), vec![32], 8, 0)], &[0; 16]);
    expect_error(short, "inside the file");
    let desc = TensorDesc::new(Format::GgufQ8_0, Layout::GgufBlocksV1, &[1, 32]);
    assert_eq!(desc.encoded_bytes().unwrap(), 34);
}

#[test]
fn a_32_mb_metadata_array_costs_its_text_not_a_tree() {
    let dir = TempDir::new("metadata");
    let mut rng = Rng::new(11);
    let mut writer = ArtifactWriter::new();
    writer.add_tensor("w", bf16(&mut rng, &[2, 2]));
    let small = dir.join("small.ninfer");
    writer.write(&small).unwrap();
    // Rebuild the entry around the same root plus `metadata: {"big": [0, 0, ...]}` (32 MB).
    let file = std::fs::read(&small).unwrap();
    let json_bytes = u64::from_le_bytes(file[8..16].try_into().unwrap()) as usize;
    let payload = &file[(32 + json_bytes).div_ceil(4096) * 4096..];
    let root = std::str::from_utf8(&file[32..32 + json_bytes]).unwrap().trim_end();
    let zeros = 16 << 20;
    let mut json = root.strip_suffix('}').unwrap().to_string();
    json.push_str(r#","metadata":{"big":["#);
    json.push_str(&"0,".repeat(zeros - 1));
    json.push_str("0]}}");
    let mut entry = file[..8].to_vec();
    entry.extend((json.len() as u64).to_le_bytes());
    entry.extend(&file[16..32]);
    entry.extend(json.as_bytes());
    entry.resize((32 + json.len()).div_ceil(4096) * 4096, 0);
    entry.extend(payload);
    let big = dir.join("big.ninfer");
    std::fs::write(&big, entry).unwrap();
    let (a, peak) = super::peak_allocation(|| Artifact::open(&big).unwrap());
    assert!(peak < 3 * json.len(), "opening took {peak} bytes for {} bytes of JSON", json.len());
    let metadata = a.root().metadata.as_ref().unwrap();
    assert_eq!(metadata.text().len(), json.len() - root.len() - r#","metadata":}"#.len() + 1);
    assert!(metadata.member("big").is_some_and(|v| v.as_array().is_some_and(|v| v.len() == zeros)));
}
