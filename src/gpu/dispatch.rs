//! Turning a [`Plan`] into wgpu objects (uniforms, bind groups, the output and activation
//! buffers) and running it. All decisions were made by the pure planner in `plan`.

use super::kernels::{self, KernelKey};
use super::plan::{Plan, PlaneBinding, Window};
use super::platform::{self, Probes};
use super::{Gpu, GpuTensor, POISON};
use crate::error::{Error, Result};
use std::num::NonZeroU64;
use wgpu::util::DeviceExt;

pub(super) fn bind_group_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("ninfer-wgpu kernel bindings"),
        entries: &[
            // 0: Params (uniform), one per dispatch: at a dynamic offset, so a bound op's bind
            // group serves every count it is recorded with (src/gpu/bound.rs).
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: NonZeroU64::new(PARAMS_BYTES),
                },
                count: None,
            },
            // 1..3: windows of the payload buffer, one per plane (or the i-quant grid).
            storage(1, true),
            storage(2, true),
            storage(3, true),
            // 4: the op's input: matmul's activation columns, gather's row pairs (a small dummy
            // for dequant, which declares no binding 4).
            storage(4, true),
            // 5: the output words.
            storage(5, false),
            // 6: plane 0's window again, read as vec4<u32> where Params::vec0 says the window allows it.
            storage(6, true),
            // 7: gather's status words (out-of-range ids); a spare for the other ops.
            storage(7, false),
        ],
    })
}

/// Bytes of one parameter block as bound: `Params` padded to the 16-byte units some backends
/// size uniform blocks in.
pub(super) const PARAMS_BYTES: u64 = (std::mem::size_of::<super::params::Params>() as u64).div_ceil(16) * 16;

/// A uniform buffer holding `params`, padded to [`PARAMS_BYTES`].
fn params_buffer(device: &wgpu::Device, params: &super::params::Params, label: &str) -> wgpu::Buffer {
    let mut bytes = bytemuck::bytes_of(params).to_vec();
    bytes.resize(PARAMS_BYTES as usize, 0);
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &bytes,
        usage: wgpu::BufferUsages::UNIFORM,
    })
}

/// A kernel planned over one tensor, ready to run many times.
pub struct Prepared {
    /// A8: the activation quantization dispatch, recorded before the kernel's passes.
    quantize: Option<(wgpu::ComputePipeline, wgpu::BindGroup, [u32; 2])>,
    pipeline: wgpu::ComputePipeline,
    passes: Vec<(wgpu::BindGroup, [u32; 2])>,
    /// The output buffers in output order, with their words.
    outputs: Vec<(wgpu::Buffer, u64)>,
    out_words: u64,
    label: String,
}

/// Most bytes one read-back copies to the host at a time.
pub const READ_CHUNK: u64 = 64 << 20;

fn range(buffer: &wgpu::Buffer, w: Window) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer, offset: w.start, size: NonZeroU64::new(w.size.max(4)) })
}

impl Prepared {
    /// Creates the objects of `plan`; `input` is matmul's activation columns or gather's index
    /// pairs, as u32 words (already laid out as the kernel reads them).
    pub(super) async fn create(
        gpu: &Gpu,
        tensor: &GpuTensor,
        key: KernelKey,
        plan: &Plan,
        input: &[u32],
    ) -> Result<Prepared> {
        let pipeline = gpu.pipeline(key).await?;
        let quantize_pipeline = match plan.quantize {
            Some(_) => Some(gpu.activation_pipeline(kernels::ActivationOp::QuantizeQ8_1).await?),
            None => None,
        };
        let grid = gpu.grid_buffer(key.format).await?;
        let label = format!("{} {:?}", key.label(), tensor.desc().shape);
        let device = gpu.device();
        let (outputs, passes, quantize) = gpu
            .scoped(&format!("allocating and binding {label}"), || {
                let outputs: Vec<(wgpu::Buffer, u64)> = plan
                    .outputs
                    .iter()
                    .map(|&words| {
                        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some("ninfer-wgpu output"),
                            size: (words * 4).max(4),
                            usage: wgpu::BufferUsages::STORAGE
                                | wgpu::BufferUsages::COPY_SRC
                                | wgpu::BufferUsages::COPY_DST,
                            mapped_at_creation: false,
                        });
                        (buffer, words)
                    })
                    .collect();
                // Binding 6 of a pass whose plane 0 is not read as vec4 (Params::vec0 = 0): the
                // shader's array still needs one whole element bound.
                let no_vec4 = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("ninfer-wgpu unused vec4 view"),
                    size: 16,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                });
                let contents: &[u32] = if input.is_empty() { &[0; 4] } else { input };
                let f32_input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("ninfer-wgpu op input"),
                    contents: bytemuck::cast_slice(contents),
                    usage: wgpu::BufferUsages::STORAGE,
                });
                // A8: the quantize pass writes the q8_1 words the kernel then reads as its input.
                let (input, quantize) = match (&plan.quantize, quantize_pipeline) {
                    (Some(q), Some(qp)) => {
                        let q8 = device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some("ninfer-wgpu q8_1 activation"),
                            size: (plan.x_words * 4).max(4),
                            usage: wgpu::BufferUsages::STORAGE,
                            mapped_at_creation: false,
                        });
                        let uniform = params_buffer(device, &q.params, "ninfer-wgpu quantize params");
                        // The planes are unused by this kernel; the layout still wants buffers.
                        let unused = f32_input.as_entire_binding();
                        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("quantize_q8_1"),
                            layout: &gpu.layout,
                            entries: &[
                                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 1, resource: unused.clone() },
                                wgpu::BindGroupEntry { binding: 2, resource: unused.clone() },
                                wgpu::BindGroupEntry { binding: 3, resource: unused },
                                wgpu::BindGroupEntry { binding: 4, resource: f32_input.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 5, resource: q8.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 6, resource: no_vec4.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 7, resource: gpu.spare_status.as_entire_binding() },
                            ],
                        });
                        (q8, Some((qp, bind_group, q.groups)))
                    }
                    _ => (f32_input, None),
                };
                let passes: Vec<_> = plan
                    .passes
                    .iter()
                    .map(|pass| {
                        let uniform = params_buffer(device, &pass.params, "ninfer-wgpu params");
                        let plane = |i: usize| match (pass.planes[i], &grid) {
                            (PlaneBinding::Grid, Some(grid)) => grid.as_entire_binding(),
                            // A grid plane without a grid cannot be planned (`gguf_grid` decides
                            // both); bind the payload so a bug shows as wrong words, not a panic.
                            (PlaneBinding::Grid, None) => tensor.buffer(0).as_entire_binding(),
                            (PlaneBinding::Payload { segment, window }, _) => range(tensor.buffer(segment), window),
                        };
                        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some(&label),
                            layout: &gpu.layout,
                            entries: &[
                                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 1, resource: plane(0) },
                                wgpu::BindGroupEntry { binding: 2, resource: plane(1) },
                                wgpu::BindGroupEntry { binding: 3, resource: plane(2) },
                                wgpu::BindGroupEntry { binding: 4, resource: input.as_entire_binding() },
                                wgpu::BindGroupEntry {
                                    binding: 5,
                                    resource: range(&outputs[pass.out.0].0, pass.out.1),
                                },
                                wgpu::BindGroupEntry {
                                    binding: 6,
                                    resource: match pass.params.vec0 {
                                        0 => no_vec4.as_entire_binding(),
                                        _ => plane(0),
                                    },
                                },
                                wgpu::BindGroupEntry { binding: 7, resource: gpu.spare_status.as_entire_binding() },
                            ],
                        });
                        (bind_group, pass.groups)
                    })
                    .collect();
                (outputs, passes, quantize)
            })
            .await?;
        Ok(Prepared { quantize, pipeline, passes, outputs, out_words: plan.out_words, label })
    }

    /// Number of passes the op was split into (1 unless windows were needed).
    pub fn passes(&self) -> usize {
        self.passes.len()
    }

    /// Output words (dequant: N·K, matmul: J·N, gather: R·K).
    pub fn out_words(&self) -> u64 {
        self.out_words
    }

    /// Records the dispatches.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(&self.label), timestamp_writes: None });
        if let Some((pipeline, bind_group, [gx, gy])) = &self.quantize {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[0]);
            pass.dispatch_workgroups(*gx, *gy, 1);
        }
        pass.set_pipeline(&self.pipeline);
        for (bind_group, [gx, gy]) in &self.passes {
            pass.set_bind_group(0, bind_group, &[0]);
            pass.dispatch_workgroups(*gx, *gy, 1);
        }
    }

    /// Submits one run (what a benchmark times, followed by a wait).
    pub fn submit(&self, gpu: &Gpu) -> Result<()> {
        gpu.check_alive()?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.encode(&mut encoder);
        gpu.queue().submit([encoder.finish()]);
        Ok(())
    }

    /// Poisons the output, runs, and reads every output word back.
    pub async fn run_and_read(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        out.try_reserve_exact(self.out_words as usize)
            .map_err(|_| Error::Unsupported(format!("{} output words do not fit in host memory", self.out_words)))?;
        self.run_into(gpu, &mut |words| {
            out.extend_from_slice(words);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Poisons the output, runs, and hands every output word to `sink` in output order, at
    /// most [`READ_CHUNK`] bytes at a time.
    pub async fn run_into(&self, gpu: &Gpu, sink: &mut dyn FnMut(&[u32]) -> Result<()>) -> Result<()> {
        for (buffer, words) in &self.outputs {
            // Poison in bounded pieces too: a multi-GiB output needs no host copy of its size.
            let piece = vec![POISON; (READ_CHUNK / 4).min(*words) as usize];
            let mut at = 0u64;
            while at < *words {
                let n = (words - at).min(piece.len() as u64);
                gpu.scoped_now("poisoning an output", || {
                    gpu.queue().write_buffer(buffer, at * 4, bytemuck::cast_slice(&piece[..n as usize]))
                })?;
                at += n;
                if at < *words {
                    // Hand the staged piece to the device before staging the next.
                    gpu.queue().submit([]);
                    gpu.drive()?;
                }
            }
        }
        gpu.scoped(&self.label, || self.submit(gpu)).await??;
        for (buffer, words) in &self.outputs {
            let mut at = 0u64;
            while at < words * 4 {
                let n = (words * 4 - at).min(READ_CHUNK);
                let bytes = gpu.read_back(buffer, at, n).await?;
                sink(&bytemuck::pod_collect_to_vec::<u8, u32>(&bytes))?;
                at += n;
            }
        }
        Ok(())
    }
}

/// Runs the platform probes (see `shaders/ops/probe.wgsl`).
pub(super) async fn run_probes(gpu: &Gpu) -> Result<Probes> {
    let mut probes = Probes::default();
    // 2^-100 * 2^-30 = 2^-130, the binary32 subnormal 0x0008_0000; the product lands in word 1.
    let [a, b, _] = platform::SUBNORMAL_PROBE;
    let io = probe(gpu, kernels::PROBE.to_string(), "subnormal", &[a, 0, b]).await?;
    match platform::flushes_subnormals(io[1]) {
        Ok(flushes) => probes.flushes_subnormal_results = Some(flushes),
        Err(broken) => probes.broken.push(broken),
    }
    if gpu.platform().has_subgroups {
        let source = kernels::for_device(kernels::subgroup_probe_source(), true);
        let io = probe(gpu, source, "subgroup_layout", &[0; 256]).await?;
        probes.subgroups_contiguous = Some(io.iter().all(|&v| v == 1));
    }
    Ok(probes)
}

async fn probe(gpu: &Gpu, source: String, entry: &str, input: &[u32]) -> Result<Vec<u32>> {
    let device = gpu.device();
    let (pipeline, buffer) = gpu
        .scoped(&format!("probe {entry}"), || {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(entry),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            });
            let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(entry),
                contents: bytemuck::cast_slice(input),
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            });
            (pipeline, buffer)
        })
        .await?;
    gpu.scoped(&format!("probe {entry}"), || {
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(entry),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() }],
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        gpu.queue().submit([encoder.finish()]);
    })
    .await?;
    let bytes = gpu.read_back(&buffer, 0, input.len() as u64 * 4).await?;
    if bytes.len() != input.len() * 4 {
        return Err(Error::Gpu(format!("probe {entry}: read back {} bytes", bytes.len())));
    }
    Ok(bytemuck::pod_collect_to_vec::<u8, u32>(&bytes))
}
