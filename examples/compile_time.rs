//! Times pipeline creation of a format's matmul kernel on one adapter, up to its first dispatch
//! (shader compile time is most of a conformance run on CPU drivers; Mesa caches compiled
//! shaders, so only a first run is cold). `cargo run --release --example compile_time --
//! ADAPTER FORMAT [WGSL_FILE]`: with a file, that WGSL is compiled instead (to try a change
//! without rebuilding); without one, the assembled kernel is also written to
//! `target/kernel.wgsl`.
use ninfer_wgpu::gpu::kernels::{assemble, KernelKey, Op, Variant};
use ninfer_wgpu::gpu::{Gpu, GpuOptions};
use ninfer_wgpu::native::block_on;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [adapter, format, rest @ ..] = args.as_slice() else {
        return Err("usage: compile_time ADAPTER FORMAT [WGSL_FILE]".into());
    };
    let gpu = block_on(Gpu::open(&GpuOptions { adapter: Some(adapter.clone()), ..Default::default() }))?;
    let key = KernelKey { format: format.parse()?, op: Op::Matmul, variant: Variant::Workgroup };
    let source = match rest.first() {
        Some(path) => std::fs::read_to_string(path)?,
        None => {
            let s = assemble(key)?;
            std::fs::write("target/kernel.wgsl", &s)?;
            s
        }
    };
    let device = gpu.device();
    // The crate's binding layout: the params uniform, three planes, the op input, the output.
    let entry = |binding: u32, ty| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
        count: None,
    };
    let storage_ty = |read_only| wgpu::BufferBindingType::Storage { read_only };
    let entries = [
        entry(0, wgpu::BufferBindingType::Uniform),
        entry(1, storage_ty(true)),
        entry(2, storage_ty(true)),
        entry(3, storage_ty(true)),
        entry(4, storage_ty(true)),
        entry(5, storage_ty(false)),
    ];
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let t = Instant::now();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some(key.entry_point()),
        compilation_options: wgpu::PipelineCompilationOptions {
            zero_initialize_workgroup_memory: false,
            ..Default::default()
        },
        cache: None,
    });
    // GL compiles at the first dispatch: run one over zero rows.
    let buffer = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor { label: None, size: 256, usage, mapped_at_creation: false })
    };
    let uniform = buffer(wgpu::BufferUsages::UNIFORM);
    let storage: Vec<wgpu::Buffer> = (0..5).map(|_| buffer(wgpu::BufferUsages::STORAGE)).collect();
    let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
    entries.extend(
        storage.iter().zip(1..).map(|(b, i)| wgpu::BindGroupEntry { binding: i, resource: b.as_entire_binding() }),
    );
    let bind_group =
        device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries: &entries });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    gpu.queue().submit([encoder.finish()]);
    gpu.wait()?;
    println!("{} on {}: {:.2} s", key.label(), gpu.platform().summary(), t.elapsed().as_secs_f64());
    Ok(())
}
