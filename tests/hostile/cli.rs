//! Classes 4, 5, 7 and 8 through the command line: non-regular files are refused before a
//! blocking open, reads stop at what the command needs, bench shapes are checked before
//! allocation, errors stay short, and non-finite outputs from finite operands fail the run.

use super::files::{cli, TempDir};
use ninfer_wgpu::container::{ArtifactWriter, Binding};
use ninfer_wgpu::encode::direct::{self, DirectSource};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An artifact at `entry` with one fp32 tensor `w` bound under its own name.
fn fp32_artifact(entry: PathBuf, shape: &[usize], values: &[f32]) -> PathBuf {
    let mut writer = ArtifactWriter::new();
    writer
        .add_encoded("w", direct::persist(ninfer_wgpu::Format::Fp32, shape, DirectSource::F32(values)).unwrap())
        .unwrap();
    writer.bind("w", Binding::Object("w".into()));
    writer.write(&entry).unwrap();
    entry
}

fn f32_file(dir: &TempDir, name: &str, values: &[f32]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, values.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
    p
}

/// Fails with exit code 2 and `needle` in its short error, instead of blocking on the file
/// (the hang guard, [`ninfer_wgpu_testkit::HANG`], is the only clock).
#[track_caller]
fn refused_quickly(args: &[&str], needle: &str) {
    let out = cli().run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?} should say `{needle}`: {err}");
    assert!(err.len() < 800, "{args:?}: a short error, got {} characters", err.len());
}

#[test]
fn fifos_devices_and_directories_are_refused_before_any_read() {
    let dir = TempDir::new("fifo");
    let fifo = dir.join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let model = fp32_artifact(dir.join("w.ninfer"), &[1, 2], &[1.0, 2.0]);
    let x = f32_file(&dir, "x.f32", &[1.0, 1.0]);
    refused_quickly(&["inspect", s(&fifo)], "not a regular file");
    refused_quickly(&["dequant", s(&fifo), "w", "-o", s(&dir.join("o"))], "not a regular file");
    refused_quickly(&["matvec", s(&model), "w", "--x", s(&fifo)], "not a regular file");
    refused_quickly(&["gather", s(&model), "w", "--rows", &format!("@{}", s(&fifo))], "not a regular file");
    refused_quickly(&["quantize", s(&fifo), s(&dir.join("q.ninfer")), "--format", "bf16"], "not a regular file");
    refused_quickly(&["inspect", s(dir.path())], "a directory");
    refused_quickly(&["matvec", s(&model), "w", "--x", "/dev/zero"], "not a regular file");
    refused_quickly(&["quantize", "/dev/zero", s(&dir.join("q.ninfer")), "--format", "bf16"], "not a regular file");
    // A regular file longer than J columns of K values is not read past them.
    let long = f32_file(&dir, "long.f32", &[1.0; 3]);
    refused_quickly(&["matvec", s(&model), "w", "--x", s(&long)], "longer than the 8 bytes");
    assert!(cli().run(&["matvec", s(&model), "w", "--x", s(&x)]).status.success());

    // A part file that is a FIFO: the entry lists it, the reader refuses it.
    let mut writer = ArtifactWriter::new().part_limit(4096);
    let big: Vec<f32> = (0..4096).map(|i| i as f32).collect();
    writer
        .add_encoded("w", direct::persist(ninfer_wgpu::Format::Fp32, &[4, 1024], DirectSource::F32(&big)).unwrap())
        .unwrap();
    let parted = dir.join("parted.ninfer");
    writer.write(&parted).unwrap();
    let part = dir.join("parted.ninfer.part-0001");
    std::fs::remove_file(&part).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&part).status().unwrap().success());
    refused_quickly(&["inspect", s(&parted)], "not a regular file");
}

#[test]
fn bench_shapes_are_checked_before_anything_is_allocated() {
    for shape in ["18446744073709551615x1", "100000x100000", "0x5", "4096"] {
        let out = cli().run(&["bench", "--shape", shape, "--formats", "bf16"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--shape {shape} is an error, not a panic: {err}");
        assert!(err.contains("shape"), "--shape {shape}: {err}");
    }
    // A fixed run count is one or more, and a u16: refused before an adapter is opened.
    for runs in ["0", "-1", "65536", "many"] {
        let arg = format!("--runs={runs}");
        let out = cli().run(&["bench", &arg, "--formats", "bf16"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--runs {runs} is an error, not a panic: {err}");
        assert!(err.contains("--runs"), "--runs {runs}: {err}");
    }
}

#[test]
fn errors_quote_little_of_what_a_hostile_file_holds() {
    let dir = TempDir::new("short");
    // An npy header of 2 MB that is not a dict.
    let header = format!("{{'descr': '<f4', 'shape': (1,), 'junk{}': 1}}\n", "x".repeat(2 << 20));
    let mut npy = b"\x93NUMPY\x02\x00".to_vec();
    npy.extend((header.len() as u32).to_le_bytes());
    npy.extend(header.as_bytes());
    let path = dir.join("big.npy");
    std::fs::write(&path, npy).unwrap();
    refused_quickly(&["quantize", s(&path), s(&dir.join("o.ninfer")), "--format", "bf16"], "more characters");
    // A name that is an object and a binding of itself is listed once.
    let model = fp32_artifact(dir.join("w.ninfer"), &[1, 2], &[1.0, 2.0]);
    let out = cli().run(&["dequant", s(&model), "nope", "-o", s(&dir.join("o"))]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("valid names: w\n") || err.trim_end().ends_with("valid names: w"), "{err}");
}

#[test]
fn a_non_finite_output_from_finite_operands_fails_the_run() {
    let dir = TempDir::new("overflow");
    let ones = f32_file(&dir, "ones.f32", &[1.0; 4]);
    let two = f32_file(&dir, "two.f32", &[1.0; 2]);
    // 3e38 + 3e38 is past binary32 on every device: exit 1, the row named.
    let over = fp32_artifact(dir.join("over.ninfer"), &[1, 2], &[3e38, 3e38]);
    for device in ["cpu", "gpu"] {
        let out = cli().run(&["matvec", s(&over), "w", "--x", s(&two), "--device", device]);
        let err = String::from_utf8_lossy(&out.stderr);
        if device == "gpu" && err.contains("no adapter") {
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{device}: {err}");
        assert!(err.contains("y[0]") && err.contains("overflowed"), "{device}: {err}");
    }
    // The exact sum is 0; a partial sum may overflow on a GPU. Either a finite 0 or a failure.
    let cancel = fp32_artifact(dir.join("cancel.ninfer"), &[1, 4], &[3e38, 3e38, -3e38, -3e38]);
    for device in ["cpu", "gpu"] {
        let out = cli().run(&["matvec", s(&cancel), "w", "--x", s(&ones), "--device", device]);
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => assert!(f32::from_le_bytes(out.stdout[..4].try_into().unwrap()).is_finite(), "{device}: {err}"),
            Some(1) => assert!(err.contains("overflowed"), "{device}: {err}"),
            _ if device == "gpu" && err.contains("no adapter") => {}
            code => panic!("{device}: exit {code:?}: {err}"),
        }
    }
    // An infinite weight makes an infinite output legitimately: exit 0, with a note.
    let inf = fp32_artifact(dir.join("inf.ninfer"), &[1, 2], &[f32::INFINITY, 1.0]);
    let out = cli().run(&["matvec", s(&inf), "w", "--x", s(&two)]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not all finite"));
}
