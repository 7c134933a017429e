//! A mutation corpus over a valid five-file artifact: truncations, flipped bytes, header fields,
//! and random edits of the JSON as a value and as text. Opening and then using everything (every
//! object, binding and use, decoding what resolves) must return values — never panic.

use crate::common::*;
use ninfer_wgpu::container::{Artifact, ObjectKind, HEADER_BYTES};
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{oracle, Category, Error};
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// Opens and uses everything; the first error stops it, as it would stop a user.
fn exercise(entry: &Path) -> Result<(), Error> {
    let a = Artifact::open(entry)?;
    for o in a.objects() {
        match o.kind {
            ObjectKind::Tensor { .. } => {
                if let Ok(t) = a.tensor(&o.id) {
                    let _ = t.validate();
                    if t.format().category() != Category::GgufBlock {
                        let _ = oracle::dequant(&t);
                    }
                }
            }
            ObjectKind::Resource { .. } => {
                let _ = a.resource(&o.id);
            }
        }
    }
    for name in a.root().bindings.keys() {
        let _ = a.binding(name);
    }
    for u in &a.root().uses {
        let _ = a.resolve_use(u);
    }
    Ok(())
}

/// Every node's JSON pointer.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            m.iter().for_each(|(k, c)| pointers(c, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out))
        }
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| pointers(c, format!("{at}/{i}"), out)),
        _ => {}
    }
}

fn pick<'t, T>(rng: &mut Rng, items: &'t [T]) -> &'t T {
    &items[rng.below(items.len() as u64) as usize]
}

/// One random edit of the root value.
fn edit_value(rng: &mut Rng, root: &mut Value) -> String {
    let mut all = Vec::new();
    pointers(root, String::new(), &mut all);
    let at = pick(rng, &all).clone();
    let replacements = [
        json!(null),
        json!(true),
        json!(-1),
        json!(0),
        json!(1),
        json!(255),
        json!(256),
        json!(1u64 << 53),
        json!(u64::MAX),
        json!(1.5),
        json!(""),
        json!("w"),
        json!("x\u{0}"),
        json!("../x"),
        json!([]),
        json!({}),
        json!([0, 0]),
        json!([0, 1u64 << 62]),
        json!({ "object": "w" }),
        json!([1, 1, 1]),
    ];
    match rng.below(3) {
        0 => {
            let r = pick(rng, &replacements).clone();
            if let Some(node) = root.pointer_mut(&at) {
                *node = r.clone();
            }
            format!("{at} = {r}")
        }
        1 => {
            let (parent, key) = at.rsplit_once('/').unwrap_or(("", ""));
            match root.pointer_mut(parent) {
                Some(Value::Object(m)) => {
                    m.remove(key);
                }
                Some(Value::Array(a)) => {
                    if let Ok(i) = key.parse::<usize>() {
                        if i < a.len() {
                            a.remove(i);
                        }
                    }
                }
                _ => {}
            }
            format!("delete {at}")
        }
        _ => {
            if let Some(Value::Object(m)) = root.pointer_mut(&at) {
                m.insert("extra".into(), json!(1));
            } else if let Some(Value::Array(a)) = root.pointer_mut(&at) {
                let copy = a.first().cloned().unwrap_or(json!(0));
                a.push(copy);
            }
            format!("grow {at}")
        }
    }
}

/// One random edit of the JSON text.
fn edit_text_bytes(rng: &mut Rng, text: &mut Vec<u8>) -> String {
    let len = text.len() as u64;
    let at = rng.below(len) as usize;
    let span = (1 + rng.below(8) as usize).min(text.len() - at);
    match rng.below(3) {
        0 => {
            text.drain(at..at + span);
            format!("text delete {at}+{span}")
        }
        1 => {
            let copy = text[at..at + span].to_vec();
            text.splice(at..at, copy);
            format!("text duplicate {at}+{span}")
        }
        _ => {
            let c = *pick(rng, b"{}[],:\"0-e.9\\ ");
            text.insert(at, c);
            format!("text insert {:?} at {at}", c as char)
        }
    }
}

/// Mutates the artifact's files (already restored to the originals); returns what it did.
fn mutate(rng: &mut Rng, files: &[std::path::PathBuf], originals: &[Vec<u8>]) -> String {
    let i = rng.below(files.len() as u64) as usize;
    let len = originals[i].len() as u64;
    // Most interesting bytes are in the first page: headers and JSON.
    let near = |rng: &mut Rng| if rng.below(4) > 0 { rng.below(len.min(4096 + 64)) } else { rng.below(len) };
    match rng.below(6) {
        0 => {
            let n = near(rng) as usize;
            edit_bytes(&files[i], |b| b.truncate(n));
            format!("truncate file {i} to {n}")
        }
        1 => {
            let mut what = format!("flip in file {i}:");
            for _ in 0..1 + rng.below(4) {
                let at = near(rng) as usize;
                let x = 1 + rng.below(255) as u8;
                edit_bytes(&files[i], |b| b[at] ^= x);
                what += &format!(" {at}^{x:#x}");
            }
            what
        }
        2 => {
            let v = [0u64, 1, 4063, 4064, 4065, len - 1, len, u64::MAX, 1 << 40][rng.below(9) as usize];
            let field = if i == 0 { "json_bytes" } else { "part_index" };
            edit_bytes(&files[i], |b| b[8..16].copy_from_slice(&v.to_le_bytes()));
            format!("file {i} {field} = {v}")
        }
        3 | 4 => {
            let mut root = read_json(&files[0]);
            let what = edit_value(rng, &mut root);
            rebuild_entry(&files[0], &serde_json::to_vec(&root).unwrap(), rng.below(2) == 0);
            what
        }
        _ => {
            let mut text = json_text(&files[0]).trim_end().as_bytes().to_vec();
            let what = edit_text_bytes(rng, &mut text);
            rebuild_entry(&files[0], &text, true);
            what
        }
    }
}

#[test]
fn the_mutation_corpus_never_panics() {
    let f = fixture("corpus", Some(500));
    let files = f.files();
    let originals: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let seed = ninfer_wgpu::testgen::test_seed("container corpus").expect("seed");
    let mut rng = Rng::new(seed);
    let (mut opened, mut refused, mut panics) = (0, 0, Vec::new());
    for case in 0..1200 {
        for (p, b) in files.iter().zip(&originals) {
            std::fs::write(p, b).unwrap();
        }
        let what = mutate(&mut rng, &files, &originals);
        match catch_unwind(AssertUnwindSafe(|| exercise(&f.entry))) {
            Ok(Ok(())) => opened += 1,
            Ok(Err(_)) => refused += 1,
            Err(_) => panics.push(format!("case {case}: {what}")),
        }
    }
    println!("{opened} opened, {refused} refused");
    assert!(panics.is_empty(), "seed {seed}: panics on {panics:#?}");
    // The corpus is only meaningful if it reaches both outcomes often.
    assert!(refused > 300 && opened > 50, "seed {seed}: {opened} opened, {refused} refused");
}

#[test]
fn every_prefix_of_the_entry_is_refused_without_panic() {
    let f = fixture("prefixes", None);
    let original = std::fs::read(&f.entry).unwrap();
    // Each header byte, then every 97th byte of the JSON and payload.
    let cuts: Vec<usize> = (0..=HEADER_BYTES).chain((HEADER_BYTES..original.len()).step_by(97)).collect();
    for n in cuts {
        std::fs::write(&f.entry, &original[..n]).unwrap();
        assert!(Artifact::open(&f.entry).is_err(), "a {n}-byte prefix of a {}-byte entry opened", original.len());
    }
}
