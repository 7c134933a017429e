//! Writer → reader round trips: single file and multi-part with straddling objects, the framing
//! the writer produces, crash safety, and opening without reading the payload.

use crate::common::*;
use ninfer_wgpu::container::{
    rule, Artifact, ArtifactWriter, Binding, ENTRY_MAGIC, HEADER_BYTES, PART_MAGIC, PAYLOAD_ALIGN,
};
use ninfer_wgpu::oracle;
use ninfer_wgpu::Error;
use std::borrow::Cow;

/// Which objects cross a file boundary, from the root's own numbers.
fn straddling(a: &Artifact) -> Vec<String> {
    let starts = a.root().file_starts();
    a.objects().iter().filter(|o| starts.iter().any(|&s| o.offset < s && s < o.end())).map(|o| o.id.clone()).collect()
}

/// Every tensor comes back with its payload and words unchanged; returns which were borrowed.
fn check_tensors(f: &Fixture, a: &Artifact) -> Vec<(String, bool)> {
    let mut borrowed = Vec::new();
    for (id, original) in &f.tensors {
        let t = a.tensor(id).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(t.desc(), original.desc(), "{id}: description survives");
        assert_eq!(t.payload(), original.payload(), "{id}: payload survives byte for byte");
        // gguf blocks have no oracle yet; every other tensor decodes to the same words.
        if original.format().category() != ninfer_wgpu::Category::GgufBlock {
            assert_eq!(
                oracle::dequant(&t).unwrap(),
                oracle::dequant(original).unwrap(),
                "{id}: reopened words identical"
            );
        }
        let (_, payload) = t.into_parts();
        borrowed.push((id.clone(), matches!(payload, Cow::Borrowed(_))));
    }
    assert_eq!(&*a.resource("tok").unwrap(), &f.resource[..]);
    borrowed
}

#[test]
fn single_file_round_trip_borrows_every_object_from_the_map() {
    let f = fixture("rt-single", None);
    assert_eq!(f.files().len(), 1);
    let a = Artifact::open(&f.entry).unwrap();
    assert_eq!(a.root().files.len(), 1);
    for (id, borrowed) in check_tensors(&f, &a) {
        assert!(borrowed, "{id}: an object inside one file is borrowed, not copied");
    }
}

#[test]
fn multi_part_round_trip_copies_only_objects_that_straddle_files() {
    let f = fixture("rt-parts", Some(500));
    let a = Artifact::open(&f.entry).unwrap();
    assert_eq!(a.root().files.len(), 5, "2309 payload bytes at 500 per file");
    assert_eq!(f.files().len(), 5);
    let across = straddling(&a);
    assert!(
        across.contains(&"w".to_owned()) && across.contains(&"signs".to_owned()),
        "the fixture straddles: {across:?}"
    );
    for (id, borrowed) in check_tensors(&f, &a) {
        assert_eq!(borrowed, !across.contains(&id), "{id}: borrowed exactly when it lies in one file");
    }
    // The same artifact written as one file holds the same logical payload.
    let single = fixture("rt-parts-single", None);
    let b = Artifact::open(&single.entry).unwrap();
    assert_eq!(a.objects(), b.objects());
    assert_eq!(a.root().payload_bytes(), b.root().payload_bytes());
}

#[test]
fn uses_bindings_components_and_metadata_round_trip() {
    let f = fixture("rt-root", Some(500));
    let a = Artifact::open(&f.entry).unwrap();
    let root = a.root();
    assert_eq!(root.bindings.len(), 4);
    assert_eq!(root.uses.len(), 2);
    assert_eq!(root.components["draft"].target.as_deref(), Some("lm"));
    assert_eq!(root.components["lm"].resources["tokenizer"], "tok");
    assert_eq!(root.metadata.as_ref().unwrap().member("name").unwrap(), "fixture");
    // Parsing the serialized root gives the same root.
    let again = ninfer_wgpu::container::Root::parse_bytes(&root.to_text().unwrap(), "model.ninfer").unwrap();
    assert_eq!(&again, root);
}

#[test]
fn provenance_from_the_encoders_is_recorded_per_object() {
    let f = fixture("rt-provenance", None);
    let a = Artifact::open(&f.entry).unwrap();
    let p = a.root().provenance.as_ref().expect("provenance recorded").parse().unwrap();
    assert_eq!(p["w"]["method"], "grouped_absmax");
    assert_eq!(p["w"]["params"]["format"], "q4_g64_fp16");
    assert_eq!(p["signs"]["method"], "persist");
    assert_eq!(p["g"]["method"], "import_encoded");
    assert!(p.get("tok").is_none(), "a resource added without provenance has none");
}

#[test]
fn the_json_is_padded_with_spaces_so_the_payload_starts_at_its_end() {
    let f = fixture("rt-padding", Some(500));
    let bytes = std::fs::read(&f.entry).unwrap();
    assert_eq!(bytes[..8], ENTRY_MAGIC);
    let (json_bytes, payload_start) = entry_layout(&bytes);
    assert_eq!(HEADER_BYTES + json_bytes, payload_start, "no gap: the JSON ends at the payload start");
    assert_eq!(payload_start % PAYLOAD_ALIGN, 0);
    let json = &bytes[HEADER_BYTES..payload_start];
    let text_end = json.iter().rposition(|&b| b != b' ').unwrap() + 1;
    assert_eq!(json[text_end - 1], b'}');
    assert!(json[text_end..].iter().all(|&b| b == b' '), "padding is ASCII spaces");
    assert_eq!(bytes.len(), payload_start + 500);
}

#[test]
fn parts_have_their_header_and_object_offsets_are_256_aligned() {
    let f = fixture("rt-framing", Some(500));
    let entry = std::fs::read(&f.entry).unwrap();
    for (i, p) in f.files().iter().enumerate().skip(1) {
        let bytes = std::fs::read(p).unwrap();
        assert_eq!(bytes[..8], PART_MAGIC);
        assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), i as u64);
        assert_eq!(bytes[16..32], entry[16..32], "part {i} carries the entry's id");
        assert!(bytes[32..PAYLOAD_ALIGN].iter().all(|&b| b == 0));
    }
    let a = Artifact::open(&f.entry).unwrap();
    for o in a.objects() {
        assert_eq!(o.offset % 256, 0, "{}: the writer aligns every object", o.id);
    }
}

#[test]
fn a_crash_between_parts_and_entry_leaves_nothing_that_opens() {
    let f = fixture("rt-crash", Some(500));
    let old_entry = std::fs::read(&f.entry).unwrap();
    // A second write of the same name completes; putting the old entry back reproduces the state
    // after a crash that renamed the new parts but not the new entry.
    let mut w = ArtifactWriter::new().part_limit(500);
    for (id, t) in &f.tensors {
        w.add_tensor(id.clone(), t.clone());
    }
    w.add_resource("tok", f.resource.clone());
    let written = w.write(&f.entry).unwrap();
    assert_eq!(written.files.len(), 5);
    Artifact::open(&f.entry).expect("the completed rewrite opens");
    std::fs::write(&f.entry, old_entry).unwrap();
    assert_rule(Artifact::open(&f.entry), rule::ARTIFACT_ID);
}

#[test]
fn writing_leaves_no_temporary_files_and_ids_are_fresh() {
    let f = fixture("rt-temps", Some(500));
    let names: Vec<String> = std::fs::read_dir(f.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 5, "only the entry and its parts: {names:?}");
    let first = Artifact::open(&f.entry).unwrap().artifact_id();
    let mut w = ArtifactWriter::new();
    w.add_resource("r", vec![1u8]);
    let second = w.write(f.dir.join("other.ninfer")).unwrap().artifact_id;
    assert_ne!(first, second, "artifact ids are random");
    assert_ne!(second, [0u8; 16]);
}

#[test]
fn the_writer_refuses_what_the_reader_would_and_creates_no_file() {
    let dir = TempDir::new("rt-refuse");
    let empty = ArtifactWriter::new();
    assert_rule(empty.write(dir.join("empty.ninfer")), rule::MEMBER_TYPE);
    let mut dup = ArtifactWriter::new();
    dup.add_resource("x", vec![1u8]);
    dup.add_resource("x", vec![2u8]);
    assert_rule(dup.write(dir.join("dup.ninfer")), rule::OBJECT_ID_UNIQUE);
    let mut dangling = ArtifactWriter::new();
    dangling.add_resource("x", vec![1u8]);
    dangling.bind("p", Binding::Object("missing".into()));
    assert_rule(dangling.write(dir.join("dangling.ninfer")), rule::BINDING_OBJECT);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
}

#[test]
fn names_resolve_as_object_ids_or_bindings() {
    let f = fixture("rt-resolve", None);
    let a = Artifact::open(&f.entry).unwrap();
    assert_eq!(a.resolve("w").unwrap()[0].payload(), f.tensors["w"].payload());
    assert_eq!(a.resolve("layer.w_top").unwrap().len(), 2);
    // `b` is both the object and a binding of that same object.
    assert_eq!(a.resolve("b").unwrap().len(), 1);
    assert!(matches!(a.resolve("nothing"), Err(Error::UnknownName { .. })));
    assert!(matches!(a.resolve("tok"), Err(Error::Unsupported(_))), "a resource is not a tensor");
}

/// Resident set size in bytes, from /proc (Linux).
#[cfg(target_os = "linux")]
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

/// Bytes this thread has read through read(2) and its kin (`rchar` of /proc/thread-self/io,
/// which counts reads whether or not they hit the page cache).
fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines().find_map(|l| l.strip_prefix("rchar: ")).unwrap().parse().unwrap()
}

#[test]
#[cfg(target_os = "linux")]
fn opening_a_16_gib_artifact_reads_headers_and_json_only() {
    const BIG: u64 = 16 << 30;
    let dir = TempDir::new("rt-sparse");
    let entry = dir.join("big.ninfer");
    let json = serde_json::json!({
        "components": {}, "bindings": {}, "uses": [],
        "objects": [{ "id": "big", "kind": "resource", "encoding": "raw_bytes_v1", "offset": 0, "bytes": BIG }],
        "files": [{ "path": null, "payload_bytes": BIG }],
    });
    let mut bytes = ENTRY_MAGIC.to_vec();
    let text = serde_json::to_vec(&json).unwrap();
    bytes.extend((text.len() as u64).to_le_bytes());
    bytes.extend([7u8; 16]);
    bytes.extend(&text);
    bytes.resize(PAYLOAD_ALIGN, 0);
    std::fs::write(&entry, &bytes).unwrap();
    // A sparse file: the 16 GiB payload occupies no disk and reads as zeros.
    let file = std::fs::OpenOptions::new().write(true).open(&entry).unwrap();
    file.set_len(PAYLOAD_ALIGN as u64 + BIG).unwrap();
    drop(file);
    let (before, read_before) = (resident(), bytes_read());
    let a = Artifact::open(&entry).unwrap();
    let (grown, read) = (resident().saturating_sub(before), bytes_read() - read_before);
    // Counted, not timed: reading the payload through read(2) counts its bytes here, touching
    // it through the map makes it resident. The headers and JSON are a few hundred bytes
    // (the reads of /proc itself are within the bound too).
    assert!(read < 1 << 20, "open read {read} bytes");
    assert!(grown < 256 << 20, "open made {grown} bytes resident");
    let big = a.resource("big").unwrap();
    assert!(matches!(big, Cow::Borrowed(_)) && big.len() as u64 == BIG);
    assert_eq!(big[big.len() - 1], 0, "the last byte is reachable through the map");
}

#[test]
fn parts_are_renamed_into_place_before_the_entry() {
    // Block the rename of the last part (a directory sits at its name): the write must fail
    // before the entry exists, so nothing half-written can be opened. Were the entry renamed
    // first, it would exist now.
    let f = fixture("rt-order", Some(500));
    let dir = f.dir.path().join("fresh");
    std::fs::create_dir(&dir).unwrap();
    let entry = dir.join("model.ninfer");
    let mut w = ArtifactWriter::new().part_limit(500);
    for (id, t) in &f.tensors {
        w.add_tensor(id.clone(), t.clone());
    }
    w.add_resource("tok", f.resource.clone());
    std::fs::create_dir(dir.join("model.ninfer.part-0004")).unwrap();
    assert!(w.write(&entry).is_err(), "a part that cannot be put in place fails the write");
    assert!(!entry.exists(), "the entry is renamed only after every part");
    std::fs::remove_dir(dir.join("model.ninfer.part-0004")).unwrap();
    w.write(&entry).unwrap();
    Artifact::open(&entry).expect("the retried write opens");
}
