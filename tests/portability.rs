//! Every assembled WGSL module validates under naga and translates to SPIR-V, MSL, HLSL and GLSL,
//! so the Metal, DX12 and browser paths are exercised on a machine that runs only Vulkan and GL.

use naga::back::{glsl, hlsl, msl, spv};
use naga::valid::{Capabilities, ValidationFlags, Validator};
use ninfer_wgpu::gpu::capability;
use ninfer_wgpu::gpu::kernels::{assemble, KernelKey, Variant};

/// The module's entry point as GLSL ES 3.10, the GL/GLES compute baseline.
fn glsl_es(module: &naga::Module, info: &naga::valid::ModuleInfo, entry: String) -> Result<(), String> {
    let options =
        glsl::Options { version: glsl::Version::Embedded { version: 310, is_webgl: false }, ..Default::default() };
    let pipeline =
        glsl::PipelineOptions { shader_stage: naga::ShaderStage::Compute, entry_point: entry, multiview: None };
    let mut out = String::new();
    glsl::Writer::new(&mut out, module, info, &options, &pipeline, naga::proc::BoundsCheckPolicies::default())
        .and_then(|mut w| w.write())
        .map(|_| ())
        .map_err(|e| format!("GLSL: {e}"))
}

fn translate(key: KernelKey) -> Result<(), String> {
    let source = assemble(key).map_err(|e| e.to_string())?;
    let module = naga::front::wgsl::parse_str(&source).map_err(|e| e.emit_to_string(&source))?;
    let caps = match key.variant {
        Variant::Workgroup | Variant::EmulatedDot => Capabilities::empty(),
        Variant::Subgroup => Capabilities::SUBGROUP,
    };
    let mut validator = Validator::new(ValidationFlags::all(), caps);
    if key.variant == Variant::Subgroup {
        validator
            .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
            .subgroup_operations(naga::valid::SubgroupOperationSet::all());
    }
    let info = validator.validate(&module).map_err(|e| format!("validation: {}", e.emit_to_string(&source)))?;
    let entry = key.entry_point().to_string();

    let mut spv_options = spv::Options::default();
    if key.variant == Variant::Subgroup {
        spv_options.lang_version = (1, 3);
    }
    spv::write_vec(&module, &info, &spv_options, None).map_err(|e| format!("SPIR-V: {e}"))?;

    let msl_options = msl::Options { lang_version: (2, 4), ..Default::default() };
    let msl_pipeline =
        msl::PipelineOptions { entry_point: Some((naga::ShaderStage::Compute, entry.clone())), ..Default::default() };
    msl::write_string(&module, &info, &msl_options, &msl_pipeline).map_err(|e| format!("MSL: {e}"))?;

    let hlsl_options = hlsl::Options { shader_model: hlsl::ShaderModel::V6_0, ..Default::default() };
    let hlsl_pipeline = hlsl::PipelineOptions { entry_point: Some((naga::ShaderStage::Compute, entry.clone())) };
    let mut hlsl_out = String::new();
    hlsl::Writer::new(&mut hlsl_out, &hlsl_options, &hlsl_pipeline)
        .write(&module, &info, None)
        .map_err(|e| format!("HLSL: {e}"))?;

    if key.variant != Variant::Subgroup {
        // GLSL ES 3.10 is the GL/GLES compute baseline; it has no subgroup operations.
        glsl_es(&module, &info, entry)?;
    }
    Ok(())
}

#[test]
fn every_kernel_validates_and_translates_to_every_backend_language() {
    let keys = capability::kernel_keys();
    let formats = ninfer_wgpu::Format::ALL.len();
    let codes = ninfer_wgpu::Format::ALL
        .iter()
        .filter(|f| {
            use ninfer_wgpu::Category::*;
            matches!(f.category(), GgufBlock | Grouped | BlockScaledFloat)
        })
        .count();
    assert_eq!(
        keys.len(),
        formats * 2 + (formats - 1) * (2 * 3 + 1) + codes * 3 * 3 + 4,
        "every format has dequant and gather, every float format matmul in two variants for one column, up \
         to eight and tiled (and the subgroup variant's tall tiled kernel; four types' tall one column too), every gguf, grouped and nvfp4 type matmul_a8 in three (packed dot, packed dot \
         with subgroups, emulated dot) for one column, up to eight and tiled"
    );
    let failures: Vec<String> =
        keys.iter().filter_map(|&k| translate(k).err().map(|e| format!("{}: {e}", k.label()))).collect();
    assert!(failures.is_empty(), "{} of {} kernels failed:\n{}", failures.len(), keys.len(), failures.join("\n"));
}

/// Kernels over activations, not keyed by a weight format: the library's activation ops and a
/// model's own kernels (`llm::kernels`), each with its entry point, in every target language.
#[test]
fn every_activation_and_model_kernel_validates_and_translates() {
    use ninfer_wgpu::gpu::kernels::{assemble_activation, ActivationOp};
    use ninfer_wgpu::llm::kernels::{ModelKernel, CPU_WG};
    let mut kernels: Vec<(String, String, &str)> = ActivationOp::ALL
        .iter()
        .map(|&op| (op.name().to_string(), assemble_activation(op), op.entry_point()))
        .collect();
    kernels.extend(ModelKernel::ALL.iter().map(|&k| (format!("llm/{}", k.name()), k.source(), k.entry_point())));
    // The synchronising kernels as CPU drivers compile them (kernels::CPU_WG invocations).
    kernels.extend(
        ModelKernel::ALL
            .iter()
            .map(|&k| (format!("llm/{} (CPU drivers)", k.name()), k.source_for(CPU_WG), k.entry_point())),
    );
    for (name, source, entry) in &kernels {
        let module =
            naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        let info = Validator::new(ValidationFlags::all(), Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        assert!(module.entry_points.iter().any(|e| e.name == *entry), "{name}: no entry point {entry}");
        spv::write_vec(&module, &info, &spv::Options::default(), None).expect("SPIR-V");
        let entry = entry.to_string();
        let msl_pipeline = msl::PipelineOptions {
            entry_point: Some((naga::ShaderStage::Compute, entry.clone())),
            ..Default::default()
        };
        let msl_options = msl::Options { lang_version: (2, 4), ..Default::default() };
        msl::write_string(&module, &info, &msl_options, &msl_pipeline).unwrap_or_else(|e| panic!("{name}: MSL: {e}"));
        let hlsl_options = hlsl::Options { shader_model: hlsl::ShaderModel::V6_0, ..Default::default() };
        let hlsl_pipeline = hlsl::PipelineOptions { entry_point: Some((naga::ShaderStage::Compute, entry.clone())) };
        let mut hlsl_out = String::new();
        hlsl::Writer::new(&mut hlsl_out, &hlsl_options, &hlsl_pipeline)
            .write(&module, &info, None)
            .unwrap_or_else(|e| panic!("{name}: HLSL: {e}"));
        glsl_es(&module, &info, entry).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn probes_validate_too() {
    use ninfer_wgpu::gpu::kernels::probe_sources;
    for (name, source, caps) in probe_sources() {
        let module =
            naga::front::wgsl::parse_str(&source).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&source)));
        let mut v =
            Validator::new(ValidationFlags::all(), if caps { Capabilities::SUBGROUP } else { Capabilities::empty() });
        v.subgroup_stages(naga::valid::ShaderStages::COMPUTE)
            .subgroup_operations(naga::valid::SubgroupOperationSet::all());
        v.validate(&module).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&source)));
    }
}
