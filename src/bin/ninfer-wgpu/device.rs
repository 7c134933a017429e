//! The commands about this machine and the registry: `devices`, `capabilities`, `formats`.

use crate::args::GpuArgs;
use crate::{json, open};
use ninfer_wgpu::gpu::{self, capability};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::{Error, Format};

pub fn devices(as_json: bool) -> Result<bool, Error> {
    let list = block_on(gpu::adapters());
    if as_json {
        json(&list.iter().map(|a| &a.platform).collect::<Vec<_>>())?;
        return Ok(true);
    }
    if list.is_empty() {
        println!("no adapters found");
    }
    for (i, a) in list.iter().enumerate() {
        let p = &a.platform;
        println!("[{i}] {}", p.summary());
        println!(
            "    vendor {:#06x} device {:#06x}; features: {}",
            p.vendor,
            p.device,
            if p.features.is_empty() { "none".to_string() } else { p.features.join(", ") }
        );
        println!(
            "    max buffer {} B, max storage binding {} B, storage offset alignment {}, workgroups/dim {}, subgroup size {}..{}",
            p.limits.max_buffer_size, p.limits.max_storage_buffer_binding_size, p.limits.min_storage_buffer_offset_alignment, p.limits.max_compute_workgroups_per_dimension, p.subgroup_min_size, p.subgroup_max_size
        );
    }
    Ok(true)
}

pub fn capabilities(args: &GpuArgs, as_json: bool) -> Result<bool, Error> {
    let gpu = open(args)?;
    let rows = capability::table(Some(gpu.platform()));
    if as_json {
        json(&serde_json::json!({ "platform": gpu.platform(), "rows": rows }))?;
        return Ok(true);
    }
    println!("{}", gpu.platform().summary());
    println!(
        "probes: subnormal results flushed: {:?}; subgroups contiguous: {:?}",
        gpu.platform().probes.flushes_subnormal_results,
        gpu.platform().probes.subgroups_contiguous
    );
    for broken in &gpu.platform().probes.broken {
        println!("probe answered neither way: {broken}");
    }
    println!("{:<22} {:<26} {:<8} {:<10} status", "format", "layout", "op", "variant");
    for r in rows {
        let status = match (r.status, r.tiled_from) {
            (capability::Status::Supported, Some(j)) => format!("supported, tiled from {j} columns"),
            (capability::Status::Supported, None) => "supported".to_string(),
            (capability::Status::Unsupported(reason), _) => format!("unsupported: {reason}"),
        };
        println!("{:<22} {:<26} {:<8} {:<10} {status}", r.format, r.layout, r.op, r.variant);
    }
    Ok(true)
}

/// Where a ggml block keeps its binary16 multipliers, for scripts that make valid blocks
/// (tests/independent/gguf_fixtures.py).
pub fn f16_fields(f: ninfer_wgpu::format::F16Fields) -> serde_json::Value {
    match f {
        ninfer_wgpu::format::F16Fields::At(at) => serde_json::json!({ "at": at }),
        ninfer_wgpu::format::F16Fields::TopNibbles(at) => serde_json::json!({ "top_nibbles": at }),
        // No binary16 field ("at" empty, so readers of the older rows need no new case); the
        // E8M0 scale byte's offset beside it.
        ninfer_wgpu::format::F16Fields::E8m0(at) => serde_json::json!({ "at": [], "e8m0": at }),
    }
}

pub fn formats(as_json: bool) -> Result<bool, Error> {
    let rows: Vec<serde_json::Value> = Format::ALL
        .into_iter()
        .map(|f| {
            let s = f.spec();
            serde_json::json!({ "name": s.name, "category": format!("{:?}", s.category), "code_bits": s.code_bits, "geometry": format!("{:?}", s.geometry), "ggml_type": s.gguf.map(|t| t.id), "ggml_name": s.gguf.map(|t| t.ggml_name), "ggml_f16_fields": s.gguf.map(|t| f16_fields(t.f16)), "bits_per_weight": f.bits_per_weight(), "layouts": f.layouts().iter().map(|l| l.name()).collect::<Vec<_>>() })
        })
        .collect();
    if as_json {
        json(&rows)?;
        return Ok(true);
    }
    println!("{:<22} {:<18} {:>8} {:>6}  {:<26} geometry", "format", "category", "bits/w", "ggml", "layout");
    for f in Format::ALL {
        let s = f.spec();
        println!(
            "{:<22} {:<18} {:>8.4} {:>6}  {:<26} {:?}",
            s.name,
            format!("{:?}", s.category),
            f.bits_per_weight(),
            s.gguf.map(|t| t.id.to_string()).unwrap_or_default(),
            f.layout().name(),
            s.geometry
        );
    }
    Ok(true)
}
