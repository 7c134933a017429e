//! `inspect`: a file's tensors with their capability status, and for a `.ninfer` artifact its
//! resources, bindings and uses. A GGUF's listing is streamed row by row, so a file of many small
//! tensors costs its reader's memory and no more (docs/untrusted-input.md#linear-time-and-bounded-memory).

use crate::files::open_gpu;
use ninfer_wgpu::container::{hex, Binding, ObjectKind};
use ninfer_wgpu::gguf::reader::{GgufFile, TensorInfo, TensorKind};
use ninfer_wgpu::gpu::capability::{self, Status};
use ninfer_wgpu::gpu::{GpuOptions, Op, Platform, Variant};
use ninfer_wgpu::model::Model;
use ninfer_wgpu::Error;
use serde::ser::{Serialize, Serializer};
use serde_json::json;
use std::io::Write;
use std::path::Path;

/// One row of a GGUF listing, fields in the order `--json` has always printed them.
#[derive(serde::Serialize)]
struct GgufRow<'a> {
    bytes: Option<u64>,
    dequant: Option<Status>,
    error: Option<String>,
    format: &'a str,
    gather: Option<Status>,
    id: &'a str,
    layout: Option<&'static str>,
    matmul: Option<Status>,
    matmul_a8: Option<Status>,
    shape: Vec<u64>,
}

fn gguf_row<'a>(t: &'a TensorInfo, platform: Option<&Platform>) -> GgufRow<'a> {
    match &t.kind {
        TensorKind::Registered { format, layout } => {
            let st = |op| Some(capability::status(*format, *layout, op, Variant::Workgroup, platform));
            GgufRow {
                bytes: t.bytes,
                dequant: st(Op::Dequant),
                error: None,
                format: format.name(),
                gather: st(Op::Gather),
                id: &t.name,
                layout: Some(layout.name()),
                matmul: st(Op::Matmul),
                // A8 runs with the emulated dot where the packed one is missing.
                matmul_a8: Some(capability::status(*format, *layout, Op::MatmulA8, Variant::EmulatedDot, platform)),
                shape: t.shape().into_iter().map(|d| d as u64).collect(),
            }
        }
        TensorKind::NotRegistered { type_name } => GgufRow {
            bytes: t.bytes,
            dequant: None,
            error: Some(format!("ggml type {} ({type_name}): format not registered", t.ggml_type)),
            format: type_name,
            gather: None,
            id: &t.name,
            layout: None,
            matmul: None,
            matmul_a8: None,
            // In the order a registered tensor's is printed (outermost first), not GGUF's.
            shape: t.shape().into_iter().map(|d| d as u64).collect(),
        },
    }
}

/// The rows as a JSON array, each made as it is written.
struct GgufRows<'a> {
    file: &'a GgufFile,
    platform: Option<&'a Platform>,
}

impl Serialize for GgufRows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.file.tensors.iter().map(|t| gguf_row(t, self.platform)))
    }
}

/// `inspect` of a GGUF file: tensors with format, shape, bytes and capability status.
fn inspect_gguf(file: &GgufFile, platform: Option<&Platform>, gpu_note: &str, as_json: bool) -> Result<bool, Error> {
    let io = |e: std::io::Error| Error::Io(e.to_string());
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if as_json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            alignment: u64,
            gguf_version: u32,
            // As a value: its keys sorted, as every `--json` object prints them.
            platform: serde_json::Value,
            tensors: GgufRows<'a>,
        }
        let report = Report {
            alignment: file.alignment,
            gguf_version: file.version,
            platform: serde_json::to_value(platform).map_err(|e| Error::Io(e.to_string()))?,
            tensors: GgufRows { file, platform },
        };
        serde_json::to_writer_pretty(&mut out, &report).map_err(|e| Error::Io(e.to_string()))?;
        writeln!(out).map_err(io)?;
        out.flush().map_err(io)?;
        return Ok(true);
    }
    writeln!(out, "GGUF v{}: {} metadata keys, {} tensors", file.version, file.metadata.len(), file.tensors.len())
        .map_err(io)?;
    print_header(&mut out, gpu_note).map_err(io)?;
    for t in &file.tensors {
        let row = serde_json::to_value(gguf_row(t, platform)).map_err(|e| Error::Io(e.to_string()))?;
        print_row(&mut out, &row).map_err(io)?;
    }
    out.flush().map_err(io)?;
    Ok(true)
}

fn print_header(out: &mut impl Write, gpu_note: &str) -> std::io::Result<()> {
    writeln!(out, "{gpu_note}")?;
    writeln!(
        out,
        "{:<24} {:<22} {:<26} {:<16} {:>12}  dequant / matmul / gather",
        "id", "format", "layout", "shape", "bytes"
    )
}

fn print_row(out: &mut impl Write, t: &serde_json::Value) -> std::io::Result<()> {
    let show = |s: &serde_json::Value| match s.get("status").and_then(|v| v.as_str()) {
        Some("supported") => "supported".to_string(),
        Some(_) => format!("unsupported: {}", s.get("reason").and_then(|r| r.as_str()).unwrap_or("")),
        None => "-".to_string(),
    };
    let status = match t["error"].as_str() {
        Some(e) => format!("error: {e}"),
        None => format!("{} / {} / {}", show(&t["dequant"]), show(&t["matmul"]), show(&t["gather"])),
    };
    writeln!(
        out,
        "{:<24} {:<22} {:<26} {:<16} {:>12}  {status}",
        t["id"].as_str().unwrap_or(""),
        t["format"].as_str().unwrap_or(""),
        t["layout"].as_str().unwrap_or(""),
        t["shape"].to_string(),
        t["bytes"].as_u64().unwrap_or(0)
    )
}

fn print_tensors(gpu_note: &str, tensors: &[serde_json::Value]) -> Result<bool, Error> {
    let io = |e: std::io::Error| Error::Io(e.to_string());
    let mut out = std::io::stdout().lock();
    print_header(&mut out, gpu_note).map_err(io)?;
    for t in tensors {
        print_row(&mut out, t).map_err(io)?;
    }
    Ok(true)
}

pub fn inspect(file: &Path, options: GpuOptions, as_json: bool) -> Result<bool, Error> {
    let opened = Model::open(file)?;
    let gpu = open_gpu(options);
    let platform: Option<&Platform> = gpu.as_ref().ok().map(|g| g.platform());
    let gpu_note = match &gpu {
        Ok(g) => format!("capability status on {}", g.platform().summary()),
        Err(e) => format!("no GPU adapter opened ({e}); capability status shown without platform rules"),
    };
    let artifact = match &opened {
        Model::Ninfer(a) => a,
        Model::Gguf(g) => return inspect_gguf(g, platform, &gpu_note, as_json),
    };
    let root = artifact.root();
    let mut tensors = Vec::new();
    let mut resources = Vec::new();
    for o in artifact.objects() {
        match &o.kind {
            ObjectKind::Tensor { format, layout, shape, divisors } => {
                // The first-use checks (names, geometry, size), then every word and padding
                // byte: a tensor no kernel would be given is not shown as supported.
                let status = artifact.tensor(&o.id).and_then(|t| {
                    t.validate()?;
                    let d = t.desc();
                    let st = |op| capability::status(d.format, d.layout, op, Variant::Workgroup, platform);
                    Ok((st(Op::Dequant), st(Op::Matmul), st(Op::Gather)))
                });
                let (dequant, matmul, gather, error) = match status {
                    Ok((d, m, g)) => (Some(d), Some(m), Some(g), None),
                    Err(e) => (None, None, None, Some(e.to_string())),
                };
                tensors.push(json!({ "id": o.id, "format": format, "layout": layout, "shape": shape, "divisors": divisors, "offset": o.offset, "bytes": o.bytes, "dequant": dequant, "matmul": matmul, "gather": gather, "error": error }));
            }
            ObjectKind::Resource { encoding } => {
                resources.push(json!({ "id": o.id, "encoding": encoding, "offset": o.offset, "bytes": o.bytes }))
            }
        }
    }
    let files: Vec<_> =
        root.files.iter().map(|f| json!({ "path": f.path, "payload_bytes": f.payload_bytes })).collect();
    if as_json {
        let report = json!({
            "artifact_id": hex(&artifact.artifact_id()),
            "files": files,
            "platform": platform,
            "gpu_error": gpu.as_ref().err().map(|e| e.to_string()),
            "tensors": tensors,
            "resources": resources,
            "bindings": root.bindings.keys().collect::<Vec<_>>(),
            "uses": root.uses.iter().map(|u| json!({ "parameter": u.parameter, "input": u.input })).collect::<Vec<_>>(),
        });
        // The metadata goes out as the text it is stored as, never built into a tree.
        #[derive(serde::Serialize)]
        struct Report<'a> {
            #[serde(flatten)]
            report: serde_json::Value,
            metadata: Option<&'a ninfer_wgpu::container::RawJson>,
        }
        let report = Report { report, metadata: root.metadata.as_ref() };
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| Error::Io(e.to_string()))?);
        return Ok(true);
    }
    let name = root.metadata.as_ref().and_then(|m| m.member("name"));
    let name = name.as_ref().and_then(|n| n.as_str()).unwrap_or("(unnamed)");
    println!(
        "{name}: artifact {} in {} file(s), {} payload bytes",
        hex(&artifact.artifact_id()),
        root.files.len(),
        root.payload_bytes()
    );
    print_tensors(&gpu_note, &tensors)?;
    for r in &resources {
        println!(
            "resource {} ({}, {} bytes)",
            r["id"].as_str().unwrap_or(""),
            r["encoding"].as_str().unwrap_or(""),
            r["bytes"].as_u64().unwrap_or(0)
        );
    }
    for (name, b) in &root.bindings {
        let what = match b {
            Binding::Object(id) => id.clone(),
            Binding::Parts(parts) => parts
                .iter()
                .map(|p| format!("{}[{}..{})", p.object, p.range.start, p.range.end))
                .collect::<Vec<_>>()
                .join(" + "),
        };
        println!("binding {name} = {what}");
    }
    for u in &root.uses {
        println!("use {} on {}", u.parameter, u.input);
    }
    Ok(true)
}
