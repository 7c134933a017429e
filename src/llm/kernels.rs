//! The model's own kernels (`shaders/llm/`): norms of the residual stream, the heads' biases,
//! norm and RoPE, attention over the KV cache, the gated activation and the final soft-cap. They are not the library's ops:
//! the GPU forward builds them on the public device, beside the bound products it records, as
//! any engine would build its kernels (docs/llm.md).

use super::uniforms::Uniform;
use crate::error::Result;
use crate::gpu::Gpu;
use wgpu::util::DeviceExt;

const COMMON: &str = include_str!("../../shaders/llm/common.wgsl");

/// One of the model's kernels; `ALL` drives the portability test and the pipeline cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelKernel {
    /// Embedding scale, or residual add of a normed output; then the next norm.
    Norm,
    /// Heads' biases, query and key heads' RMS norm and RoPE; keys and values into the cache.
    QkRope,
    /// Causal grouped-query attention, sliding-window on local blocks: one token column a
    /// workgroup.
    Attention,
    /// The attention of a prompt step on CPU drivers: [`ATTENTION_COLUMNS`] token columns a
    /// workgroup (the same kernel; one column on GPUs).
    AttentionColumns,
    /// The attention's position shares joined into its output (CPU drivers' decode steps).
    AttentionCombine,
    /// act(gate) · up: GELU or SiLU.
    Gated,
    /// The final logit soft-cap.
    Softcap,
}

/// Every model kernel's workgroup size on GPUs (`LLM_WG` in the WGSL, written from here); on
/// CPU drivers the kernels whose invocations synchronise take [`CPU_WG`].
pub const LLM_WG: u32 = 128;
/// The workgroup on CPU drivers of the model kernels whose invocations meet at barriers (the
/// attention, the norms, q/k norm and RoPE): one SIMD program of lavapipe's. A CPU driver runs
/// a workgroup's programs one after another and switches between them at every barrier (a
/// chunk of the attention has 19, a norm 9 or 18); with 128 invocations, 16 programs, those
/// switches were most of these kernels' time (measured: docs/llm.md#model-kernels-on-cpu-drivers).
/// The elementwise kernels (gated, soft-cap) have no barrier and keep 128.
pub const CPU_WG: u32 = 8;
/// The longest key or value head the attention kernel holds (`HEAD_MAX` in the WGSL, written
/// from here): its workgroup keeps a query of this many vec4s (four heads), and each invocation
/// at most `HEAD_MAX / (4 · LLM_WG)` vec4s of values, rounded up.
pub const HEAD_MAX: usize = 256;
/// The shares of the value dimensions (GPUs) or of the positions (CPU drivers,
/// [`position_shares`]) the attention kernel splits a head group's work into, one workgroup
/// each, where a step has few workgroups otherwise ([`attention_shares`]): with one KV head, as
/// gemma-3-270m has, one share would leave a decode step's attention on one core of a CPU
/// driver. A prompt's step, whose columns give workgroups enough, runs one
/// (docs/llm.md#attention).
pub const ATTENTION_SPLITS: u32 = 2;
/// The workgroups (KV heads × quads of their query heads × runs of columns) under which a step's
/// attention is split into [`ATTENTION_SPLITS`] shares.
pub const ATTENTION_SPLIT_BELOW: u32 = 8;

/// The token columns one workgroup of a prompt step's attention serves on CPU drivers
/// ([`ModelKernel::AttentionColumns`], `COLUMNS` in the WGSL), where each key and value is a
/// per-lane load: the workgroup loads each once for its columns, where one workgroup a column
/// loaded them again for each; a prompt step's attention at depth was most of its time. Two, not
/// four: four hold twice the scores and sums a lane and were slower (docs/llm.md#attention). GPUs serve one column a workgroup ([`attention_columns`]).
pub const ATTENTION_COLUMNS: u32 = 2;

/// The token columns one attention workgroup serves: [`ATTENTION_COLUMNS`] where its shares are
/// runs of positions (CPU drivers, [`position_shares`]), one on GPUs.
pub fn attention_columns(position_shares: bool) -> u32 {
    match position_shares {
        true => ATTENTION_COLUMNS,
        false => 1,
    }
}

/// Whether the attention's shares are runs of positions (joined after by `attention_combine`)
/// rather than parts of the value dimensions: in the CPU drivers' shape (`small` below
/// [`LLM_WG`]), where each key and value costs a per-lane load, so a key scored by both value
/// shares cost twice (docs/llm.md#attention). GPUs keep the value shares.
pub fn position_shares(small: u32) -> bool {
    small < LLM_WG
}

/// Where position shares split a step whose workgroups are more than one: from this many
/// positions on, the keys and values each share leaves to the other outweigh the dispatch that
/// joins them: measured on SmolLM2-135M's three KV heads, the two even at 512
/// (docs/llm.md#attention).
pub const POSITION_SPLIT_FROM: u32 = 512;

/// The shares a step's attention runs in, with `groups` workgroups a run of columns, `runs`
/// runs (the step's columns, or on CPU drivers' prompt steps its columns in runs of
/// [`ATTENTION_COLUMNS`]), and the last column attending to `positions` positions. Value shares (GPUs):
/// [`ATTENTION_SPLITS`] where the workgroups would be fewer than [`ATTENTION_SPLIT_BELOW`].
/// Position shares (CPU drivers, `position_shares`), which cost a dispatch to join: where a
/// single workgroup would leave a core idle, or where the workgroups are few and the positions
/// many ([`POSITION_SPLIT_FROM`]).
pub fn attention_shares(groups: u32, runs: u32, positions: u32, position_shares: bool) -> u32 {
    let few = groups * runs < ATTENTION_SPLIT_BELOW;
    let split = match position_shares {
        true => groups * runs == 1 || (few && positions >= POSITION_SPLIT_FROM),
        false => few,
    };
    match split {
        true => ATTENTION_SPLITS,
        false => 1,
    }
}

impl ModelKernel {
    pub const ALL: [ModelKernel; 7] = [
        ModelKernel::Norm,
        ModelKernel::QkRope,
        ModelKernel::Attention,
        ModelKernel::AttentionColumns,
        ModelKernel::AttentionCombine,
        ModelKernel::Gated,
        ModelKernel::Softcap,
    ];

    pub fn entry_point(self) -> &'static str {
        match self {
            ModelKernel::Norm => "norm_columns",
            ModelKernel::QkRope => "qk_rope",
            ModelKernel::Attention | ModelKernel::AttentionColumns => "attention",
            ModelKernel::AttentionCombine => "attention_combine",
            ModelKernel::Gated => "gated",
            ModelKernel::Softcap => "softcap",
        }
    }

    /// The kernel's name in labels and errors: its entry point, but for the attention's
    /// variant for several columns.
    pub fn name(self) -> &'static str {
        match self {
            ModelKernel::AttentionColumns => "attention_columns",
            ModelKernel::Norm
            | ModelKernel::QkRope
            | ModelKernel::Attention
            | ModelKernel::AttentionCombine
            | ModelKernel::Gated
            | ModelKernel::Softcap => self.entry_point(),
        }
    }

    /// The kernel's workgroup size where the synchronising kernels take `small` invocations:
    /// theirs is `small`, the elementwise kernels' [`LLM_WG`] (the host sizes their grids by it).
    pub fn workgroup_size(self, small: u32) -> u32 {
        match self {
            ModelKernel::Attention | ModelKernel::AttentionColumns | ModelKernel::Norm | ModelKernel::QkRope => small,
            ModelKernel::AttentionCombine | ModelKernel::Gated | ModelKernel::Softcap => LLM_WG,
        }
    }

    /// The complete WGSL module as a GPU runs it ([`LLM_WG`] invocations a workgroup).
    pub fn source(self) -> String {
        self.source_for(LLM_WG)
    }

    /// The complete WGSL module where the synchronising kernels take `small` invocations
    /// ([`workgroup_size`](Self::workgroup_size)): the constants the host also uses, the shared
    /// part, then the kernel's file.
    pub fn source_for(self, small: u32) -> String {
        let own = match self {
            ModelKernel::Norm => include_str!("../../shaders/llm/norm.wgsl"),
            ModelKernel::QkRope => include_str!("../../shaders/llm/qk_rope.wgsl"),
            ModelKernel::Attention | ModelKernel::AttentionColumns => include_str!("../../shaders/llm/attention.wgsl"),
            ModelKernel::AttentionCombine => include_str!("../../shaders/llm/attention_combine.wgsl"),
            ModelKernel::Gated => include_str!("../../shaders/llm/gated.wgsl"),
            ModelKernel::Softcap => include_str!("../../shaders/llm/softcap.wgsl"),
        };
        // The attention's token columns a workgroup (`COLUMNS`): its one source serves both.
        let columns = match self {
            ModelKernel::Attention => Some(1),
            ModelKernel::AttentionColumns => Some(attention_columns(position_shares(small))),
            ModelKernel::Norm
            | ModelKernel::QkRope
            | ModelKernel::AttentionCombine
            | ModelKernel::Gated
            | ModelKernel::Softcap => None,
        };
        let columns = columns.map(|n| format!("const COLUMNS: u32 = {n}u;\n")).unwrap_or_default();
        format!(
            "// llm/{}\nconst LLM_WG: u32 = {}u;\nconst HEAD_MAX: u32 = {HEAD_MAX}u;\n\
             const ATTENTION_SPLITS: u32 = {ATTENTION_SPLITS}u;\nconst POSITION_SHARES: bool = {};\n{columns}{}{COMMON}\n{own}",
            self.name(),
            self.workgroup_size(small),
            position_shares(small),
            super::uniforms::wgsl()
        )
    }
}

/// The compiled pipelines, one per kernel.
pub(super) struct Pipelines {
    pipelines: Vec<(ModelKernel, wgpu::ComputePipeline)>,
}

impl Pipelines {
    /// Every kernel compiled for `gpu`, the synchronising ones with `small` invocations.
    pub(super) async fn new(gpu: &Gpu, small: u32) -> Result<Pipelines> {
        let mut pipelines = Vec::new();
        for kernel in ModelKernel::ALL {
            let device = gpu.device();
            let pipeline = gpu
                .scoped(&format!("compiling the model kernel {}", kernel.name()), || {
                    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(kernel.name()),
                        source: wgpu::ShaderSource::Wgsl(kernel.source_for(small).into()),
                    });
                    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(kernel.name()),
                        layout: None,
                        module: &module,
                        entry_point: Some(kernel.entry_point()),
                        compilation_options: Default::default(),
                        cache: None,
                    })
                })
                .await?;
            pipelines.push((kernel, pipeline));
        }
        Ok(Pipelines { pipelines })
    }

    fn get(&self, kernel: ModelKernel) -> &wgpu::ComputePipeline {
        // `new` compiled every kernel of ModelKernel::ALL, in order.
        &self.pipelines[ModelKernel::ALL.iter().position(|&k| k == kernel).unwrap_or(0)].1
    }

    /// A kernel bound to its buffers: `uniform` (the kernel's own block) at binding 1, after the
    /// step's uniform at 0, then `buffers` from binding 2 on.
    pub(super) async fn bind(
        &self,
        gpu: &Gpu,
        kernel: ModelKernel,
        step: &wgpu::Buffer,
        uniform: &impl Uniform,
        buffers: &[&wgpu::Buffer],
    ) -> Result<Dispatch> {
        let device = gpu.device();
        let pipeline = self.get(kernel).clone();
        let bind_group = gpu
            .scoped(&format!("binding the model kernel {}", kernel.name()), || {
                let constants = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(kernel.name()),
                    contents: &uniform.padded_bytes(),
                    usage: wgpu::BufferUsages::UNIFORM,
                });
                let mut entries = vec![
                    wgpu::BindGroupEntry { binding: 0, resource: step.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: constants.as_entire_binding() },
                ];
                for (i, b) in buffers.iter().enumerate() {
                    entries.push(wgpu::BindGroupEntry { binding: 2 + i as u32, resource: b.as_entire_binding() });
                }
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(kernel.name()),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &entries,
                })
            })
            .await?;
        Ok(Dispatch { pipeline, bind_group })
    }
}

/// A model kernel bound to one block's buffers.
pub(super) struct Dispatch {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
}

impl Dispatch {
    pub(super) fn record(&self, pass: &mut wgpu::ComputePass<'_>, x: u32, y: u32) {
        self.record_3d(pass, x, y, 1);
    }

    pub(super) fn record_3d(&self, pass: &mut wgpu::ComputePass<'_>, x: u32, y: u32, z: u32) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GPUs split the values of a step with few workgroups at any depth; CPU drivers split the
    /// positions of a lone workgroup at any depth, and of a few only from POSITION_SPLIT_FROM on.
    #[test]
    fn attention_shares_follow_the_split_rules() {
        let split = ATTENTION_SPLITS;
        for positions in [1, 128, POSITION_SPLIT_FROM, 4096] {
            assert_eq!(attention_shares(1, 1, positions, false), split);
            assert_eq!(attention_shares(3, 2, positions, false), split);
            assert_eq!(attention_shares(8, 1, positions, false), 1);
            assert_eq!(attention_shares(1, 1, positions, true), split);
            assert_eq!(attention_shares(4, 16, positions, true), 1);
            let many = positions >= POSITION_SPLIT_FROM;
            assert_eq!(attention_shares(3, 1, positions, true), if many { split } else { 1 }, "{positions}");
        }
        assert!(position_shares(CPU_WG) && !position_shares(LLM_WG));
    }

    /// Only the CPU drivers' attention for prompt steps serves several columns a workgroup;
    /// the decode steps' attention, and every attention on GPUs, one.
    #[test]
    fn only_the_cpu_drivers_prompt_attention_serves_several_columns() {
        let columns = |kernel: ModelKernel, small| {
            let source = kernel.source_for(small);
            let line = source.lines().find(|l| l.starts_with("const COLUMNS: u32 = "));
            line.map(|l| l.trim_start_matches("const COLUMNS: u32 = ").trim_end_matches("u;").parse::<u32>().unwrap())
        };
        const { assert!(ATTENTION_COLUMNS > 1) };
        assert_eq!(attention_columns(position_shares(CPU_WG)), ATTENTION_COLUMNS);
        assert_eq!(attention_columns(position_shares(LLM_WG)), 1);
        for small in [CPU_WG, LLM_WG] {
            assert_eq!(columns(ModelKernel::Attention, small), Some(1));
            let runs = if small == CPU_WG { ATTENTION_COLUMNS } else { 1 };
            assert_eq!(columns(ModelKernel::AttentionColumns, small), Some(runs));
            for kernel in [ModelKernel::Norm, ModelKernel::QkRope, ModelKernel::AttentionCombine, ModelKernel::Gated] {
                assert_eq!(columns(kernel, small), None, "{kernel:?}");
            }
        }
    }

    /// The synchronising kernels' source is written for the workgroup asked for; the
    /// elementwise kernels', whose grids the host sizes by LLM_WG, always for LLM_WG.
    #[test]
    fn only_the_synchronising_kernels_take_the_small_workgroup() {
        for kernel in ModelKernel::ALL {
            let expected = match kernel {
                ModelKernel::Attention | ModelKernel::AttentionColumns | ModelKernel::Norm | ModelKernel::QkRope => {
                    CPU_WG
                }
                ModelKernel::AttentionCombine | ModelKernel::Gated | ModelKernel::Softcap => LLM_WG,
            };
            let source = kernel.source_for(CPU_WG);
            assert!(source.contains(&format!("const LLM_WG: u32 = {expected}u;")), "{kernel:?}");
            assert!(kernel.source().contains(&format!("const LLM_WG: u32 = {LLM_WG}u;")), "{kernel:?}");
        }
    }
}
