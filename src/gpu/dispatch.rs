//! Planning and running a kernel over an uploaded payload: plane windows, parameter blocks, bind
//! groups and dispatch sizes.
//!
//! A payload larger than one storage binding still runs: the rows are split into passes, and
//! each pass binds a window of the unchanged buffer per plane (windows start on the adapter's
//! storage offset alignment; the in-window offset travels in the parameters).

use super::kernels::{self, KernelKey, Op, Variant, CHUNK, DEQUANT_WG, MATVEC_ROWS};
use super::platform::Probes;
use super::{Gpu, GpuTensor, POISON};
use crate::error::{Error, Result};
use crate::layout::PayloadGeometry;
use bytemuck::{Pod, Zeroable};
use std::num::NonZeroU64;
use wgpu::util::DeviceExt;

/// Mirrors `struct Params` in `common.wgsl`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, Pod, Zeroable)]
struct Params {
    rows: u32,
    k: u32,
    chunks: u32,
    row0: u32,
    off0: u32,
    stride0: u32,
    off1: u32,
    stride1: u32,
    off2: u32,
    stride2: u32,
    aux0: u32,
    aux1: u32,
    out_off: u32,
    groups_x: u32,
    pad0: u32,
    pad1: u32,
}

/// Where a codec's plane lives in the payload.
#[derive(Debug, Clone, Copy)]
enum PlaneRef {
    /// Row `r` starts at `offset + r * stride`; windowed per pass.
    Rows { offset: u64, stride: u64 },
    /// The same binding as plane `index`, `extra` bytes further (fp8 interleaved multipliers),
    /// or an unused plane.
    Same { index: usize, extra: u64 },
    /// A small table every pass binds whole (nvfp4 divisors).
    Fixed { offset: u64 },
    /// The format's lookup grid (i-quants), a device buffer of its own bound whole.
    Grid,
}

/// The kernel's view of a tensor: rows of K values, its planes and codec parameters.
struct View {
    rows: u64,
    k: u64,
    planes: [PlaneRef; 3],
    aux: [u32; 2],
    /// Passes start on multiples of this many rows (nvfp4's 128-row scale tiles).
    row_quantum: u64,
}

fn view(geometry: &PayloadGeometry) -> View {
    use PlaneRef::*;
    let unused = Same { index: 0, extra: 0 };
    match geometry {
        PayloadGeometry::Contiguous(g) => {
            let k = g.shape.last().copied().unwrap_or(1) as u64;
            View { rows: g.elements as u64 / k, k, planes: [Rows { offset: 0, stride: k * g.word_bytes as u64 }, unused, unused], aux: [0, 0], row_quantum: 1 }
        }
        PayloadGeometry::RowSplit(g) => {
            let s = g.spec;
            let high = if s.high_bytes > 0 { Rows { offset: g.high_offset as u64, stride: (g.gpr * s.high_bytes) as u64 } } else { unused };
            View {
                rows: g.n as u64,
                k: g.k as u64,
                planes: [Rows { offset: 0, stride: (g.gpr * s.base_bytes) as u64 }, high, Rows { offset: g.scale_offset as u64, stride: (g.gpr * 2) as u64 }],
                aux: [0, 0],
                row_quantum: 1,
            }
        }
        PayloadGeometry::BlockScale(g) => View {
            rows: g.n as u64,
            k: g.k as u64,
            planes: [Rows { offset: 0, stride: g.k as u64 / 2 }, Rows { offset: g.scale_offset as u64, stride: g.k as u64 / 16 }, Fixed { offset: g.divisor_offset as u64 }],
            aux: [(g.k / 64) as u32, (g.n / g.divisors) as u32],
            row_quantum: crate::layout::block_scale::TILE_ROWS as u64,
        },
        PayloadGeometry::RowScale(g) => View {
            rows: g.n as u64,
            k: g.k as u64,
            planes: [Rows { offset: 0, stride: g.k as u64 }, Rows { offset: g.scale_offset as u64, stride: 2 }, unused],
            aux: [0, 0],
            row_quantum: 1,
        },
        PayloadGeometry::RowInterleaved(g) => View {
            rows: g.n as u64,
            k: g.k as u64,
            planes: [Rows { offset: 0, stride: g.row_bytes as u64 }, Same { index: 0, extra: g.k as u64 }, unused],
            aux: [0, 0],
            row_quantum: 1,
        },
        PayloadGeometry::Gguf(g) => {
            let grid = if kernels::gguf_grid(g.format).is_some() { Grid } else { unused };
            View { rows: g.n as u64, k: g.k as u64, planes: [Rows { offset: 0, stride: g.row_bytes as u64 }, grid, unused], aux: [0, 0], row_quantum: 1 }
        }
    }
}

pub(super) fn bind_group_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Storage { read_only }, has_dynamic_offset: false, min_binding_size: None },
        count: None,
    };
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("ninfer-wgpu kernel bindings"),
        entries: &[
            // 0: Params (uniform), one per pass.
            wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer { ty: wgpu::BufferBindingType::Uniform, has_dynamic_offset: false, min_binding_size: None },
                count: None,
            },
            // 1..3: windows of the payload buffer, one per plane.
            storage(1, true),
            storage(2, true),
            storage(3, true),
            // 4: the activation x, zero-padded to whole chunks (a small dummy for dequant).
            storage(4, true),
            // 5: the output words.
            storage(5, false),
        ],
    })
}

fn align_down(x: u64, a: u64) -> u64 {
    x / a * a
}

fn to_u32(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::Unsupported(format!("{what} ({v}) exceeds the 32-bit range of the kernel parameters")))
}

/// A kernel planned over one tensor, ready to run many times.
pub struct Prepared {
    pipeline: wgpu::ComputePipeline,
    passes: Vec<(wgpu::BindGroup, u32, u32)>,
    out: wgpu::Buffer,
    out_words: u64,
    label: String,
}

impl Prepared {
    pub(super) fn new(gpu: &Gpu, tensor: &GpuTensor, op: Op, variant: Variant, x: Option<&[f32]>) -> Result<Prepared> {
        let desc = tensor.desc();
        let v = view(tensor.geometry());
        if op == Op::Dequant && x.is_some() {
            return Err(Error::Unsupported("dequant takes no activation vector".into()));
        }
        if op == Op::Matvec {
            if desc.shape.len() != 2 {
                return Err(Error::Unsupported(format!("matvec needs a rank-2 [N, K] tensor, got shape {:?}", desc.shape)));
            }
            let len = x.map(|x| x.len()).unwrap_or(0) as u64;
            if len != v.k {
                return Err(Error::Shape { layout: desc.layout.name(), rule: "x has K elements", detail: format!("K = {}, x has {len}", v.k) });
            }
        }
        let key = KernelKey { format: desc.format, op, variant };
        let pipeline = gpu.pipeline(key)?;
        let limits = &gpu.platform().limits;
        let align = limits.min_storage_buffer_offset_alignment as u64;
        // Kernels address bytes inside a binding with u32 arithmetic, so no window may reach
        // 4 GiB even where an adapter (Metal) allows larger bindings.
        let limit = gpu.max_binding().min(u32::MAX as u64 & !3);
        let buffer_len = tensor.buffer().size();
        let chunks = v.k.div_ceil(CHUNK as u64);
        let out_per_row = match op {
            Op::Dequant => v.k * 4,
            Op::Matvec => 4,
        };

        // Rows per pass: every window (alignment slack + rows + end rounding) fits one binding.
        let room = limit.saturating_sub(align + 3);
        let mut per_pass = v.rows;
        let mut widest = out_per_row;
        for p in v.planes {
            if let PlaneRef::Rows { stride, .. } = p {
                widest = widest.max(stride);
            }
        }
        per_pass = per_pass.min(room / widest.max(1));
        let max_dim = limits.max_compute_workgroups_per_dimension as u64;
        let max_groups = max_dim * max_dim;
        per_pass = match op {
            Op::Dequant => per_pass.min(max_groups * DEQUANT_WG as u64 / chunks.max(1)),
            Op::Matvec => per_pass.min(max_groups * MATVEC_ROWS as u64),
        };
        per_pass = per_pass / v.row_quantum * v.row_quantum;
        if per_pass == 0 {
            return Err(Error::Unsupported(format!(
                "{}: one pass of {} row(s) needs a {}-byte window, but this adapter binds at most {limit} bytes per storage binding",
                desc.format, v.row_quantum, widest * v.row_quantum + align + 3
            )));
        }
        for p in v.planes {
            if let PlaneRef::Fixed { offset } = p {
                if buffer_len - align_down(offset, align) > limit {
                    return Err(Error::Unsupported(format!("{}: the divisor table does not fit one binding of {limit} bytes", desc.format)));
                }
            }
        }

        let device = gpu.device();
        let out_words = v.rows * out_per_row / 4;
        let out_bytes = (out_words * 4).max(4);
        let x_words = (chunks * CHUNK as u64).max(4);
        if x_words * 4 > limit {
            return Err(Error::Unsupported(format!("x needs {} bytes, over the {limit}-byte binding limit", x_words * 4)));
        }
        let (out, x_buffer) = gpu.scoped("allocating kernel buffers", || {
            let out = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("ninfer-wgpu output"),
                size: out_bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut xs = vec![0f32; x_words as usize];
            if let Some(x) = x {
                xs[..x.len()].copy_from_slice(x);
            }
            let x_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("ninfer-wgpu x"), contents: bytemuck::cast_slice(&xs), usage: wgpu::BufferUsages::STORAGE });
            (out, x_buffer)
        })?;

        let label = format!("{} {:?}", KernelKey { format: desc.format, op, variant }.label(), desc.shape);
        let grid = gpu.grid_buffer(desc.format)?;
        let mut passes = Vec::new();
        let mut r0 = 0u64;
        while r0 < v.rows {
            let r1 = (r0 + per_pass).min(v.rows);
            let rows = r1 - r0;
            // (window start, window size, in-window offset, stride) per plane.
            let mut windows = [(0u64, 0u64, 0u64, 0u64); 3];
            for (i, p) in v.planes.iter().enumerate() {
                windows[i] = match *p {
                    PlaneRef::Rows { offset, stride } => {
                        let start = offset + r0 * stride;
                        let ws = align_down(start, align);
                        let we = (offset + r1 * stride).div_ceil(4).saturating_mul(4).min(buffer_len).max(ws + 4);
                        (ws, we - ws, start - ws, stride)
                    }
                    PlaneRef::Same { index, extra } => {
                        let (ws, size, off, stride) = windows[index];
                        (ws, size, off + extra, stride)
                    }
                    PlaneRef::Fixed { offset } => {
                        let ws = align_down(offset, align);
                        (ws, buffer_len - ws, offset - ws, 0)
                    }
                    // Bound from the grid buffer below; nothing of the payload.
                    PlaneRef::Grid => (0, 0, 0, 0),
                };
            }
            let out_start = r0 * out_per_row;
            let out_ws = align_down(out_start, align);
            let out_we = (r1 * out_per_row).div_ceil(4) * 4;
            let groups = match op {
                Op::Dequant => (rows * chunks).div_ceil(DEQUANT_WG as u64),
                Op::Matvec => rows.div_ceil(MATVEC_ROWS as u64),
            };
            let gx = groups.clamp(1, max_dim);
            let gy = groups.div_ceil(gx).max(1);
            let params = Params {
                rows: to_u32(rows, "rows per pass")?,
                k: to_u32(v.k, "K")?,
                chunks: to_u32(chunks, "chunks per row")?,
                row0: to_u32(r0, "row index")?,
                off0: to_u32(windows[0].2, "plane offset")?,
                stride0: to_u32(windows[0].3, "row stride")?,
                off1: to_u32(windows[1].2, "plane offset")?,
                stride1: to_u32(windows[1].3, "row stride")?,
                off2: to_u32(windows[2].2, "plane offset")?,
                stride2: to_u32(windows[2].3, "row stride")?,
                aux0: v.aux[0],
                aux1: v.aux[1],
                out_off: to_u32((out_start - out_ws) / 4, "output offset")?,
                groups_x: gx as u32,
                pad0: 0,
                pad1: 0,
            };
            let bind_group = gpu.scoped("binding kernel windows", || {
                let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("ninfer-wgpu params"), contents: bytemuck::bytes_of(&params), usage: wgpu::BufferUsages::UNIFORM });
                let window = |i: usize| match (v.planes[i], &grid) {
                    (PlaneRef::Grid, Some(grid)) => grid.as_entire_binding(),
                    _ => {
                        let (ws, size, _, _) = windows[i];
                        wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: tensor.buffer(), offset: ws, size: NonZeroU64::new(size) })
                    }
                };
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(&label),
                    layout: &gpu.layout,
                    entries: &[
                        wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                        wgpu::BindGroupEntry { binding: 1, resource: window(0) },
                        wgpu::BindGroupEntry { binding: 2, resource: window(1) },
                        wgpu::BindGroupEntry { binding: 3, resource: window(2) },
                        wgpu::BindGroupEntry { binding: 4, resource: x_buffer.as_entire_binding() },
                        wgpu::BindGroupEntry {
                            binding: 5,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &out, offset: out_ws, size: NonZeroU64::new((out_we - out_ws).max(4)) }),
                        },
                    ],
                })
            })?;
            passes.push((bind_group, gx as u32, gy as u32));
            r0 = r1;
        }
        Ok(Prepared { pipeline, passes, out, out_words, label })
    }

    /// Number of passes the rows were split into (1 unless windows were needed).
    pub fn passes(&self) -> usize {
        self.passes.len()
    }

    /// Records the dispatches.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(&self.label), timestamp_writes: None });
        pass.set_pipeline(&self.pipeline);
        for (bind_group, gx, gy) in &self.passes {
            pass.set_bind_group(0, bind_group, &[]);
            pass.dispatch_workgroups(*gx, *gy, 1);
        }
    }

    /// Runs once and waits (what a benchmark times).
    pub fn run(&self, gpu: &Gpu) -> Result<()> {
        gpu.scoped(&self.label, || {
            let mut encoder = gpu.device().create_command_encoder(&Default::default());
            self.encode(&mut encoder);
            gpu.queue().submit([encoder.finish()]);
        })?;
        gpu.wait()
    }

    /// Poisons the output, runs, and reads every output word back.
    pub fn run_and_read(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        if self.out_words > 0 {
            let poison = vec![POISON; self.out_words as usize];
            gpu.queue().write_buffer(&self.out, 0, bytemuck::cast_slice(&poison));
        }
        self.run(gpu)?;
        let bytes = gpu.read_back(&self.out, 0, self.out_words * 4)?;
        Ok(bytemuck::pod_collect_to_vec::<u8, u32>(&bytes))
    }
}

/// Runs the platform probes (see `shaders/ops/probe.wgsl`).
pub(super) fn run_probes(gpu: &Gpu) -> Result<Probes> {
    let mut probes = Probes::default();
    // 2^-100 * 2^-30 = 2^-130, the binary32 subnormal 0x0008_0000.
    let io = probe(gpu, kernels::PROBE.to_string(), "subnormal", &[0x0D80_0000, 0, 0x3080_0000], 1)?;
    probes.flushes_subnormal_results = Some(io[1] != 0x0008_0000);
    if gpu.platform().has_subgroups {
        let source = format!("{}\n{}", kernels::PROBE, kernels::PROBE_SUBGROUP);
        let io = probe(gpu, source, "subgroup_layout", &[0; 256], 1)?;
        probes.subgroups_contiguous = Some(io.iter().all(|&v| v == 1));
    }
    Ok(probes)
}

fn probe(gpu: &Gpu, source: String, entry: &str, input: &[u32], groups: u32) -> Result<Vec<u32>> {
    let device = gpu.device();
    let (pipeline, buffer) = gpu.scoped(&format!("probe {entry}"), || {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(entry), source: wgpu::ShaderSource::Wgsl(source.into()) });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module: &module, entry_point: Some(entry), compilation_options: Default::default(), cache: None });
        let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(entry), contents: bytemuck::cast_slice(input), usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC });
        (pipeline, buffer)
    })?;
    gpu.scoped(&format!("probe {entry}"), || {
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(entry), layout: &pipeline.get_bind_group_layout(0), entries: &[wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() }] });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(groups, 1, 1);
        }
        gpu.queue().submit([encoder.finish()]);
    })?;
    let bytes = gpu.read_back(&buffer, 0, input.len() as u64 * 4)?;
    Ok(bytemuck::pod_collect_to_vec::<u8, u32>(&bytes))
}
