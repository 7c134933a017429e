//! The GPU host: open an adapter with its real limits, upload payloads unchanged, run kernels.
//!
//! The API is async first: every call that waits on the device (`Gpu::open`, `upload`,
//! `dequant`, `matmul`, `gather`, read-back) is an `async fn`, so a browser can await it on its
//! event loop. Nothing on these paths blocks or reads a clock: on native targets the only wait is
//! the device poll that drives a buffer mapping (the browser drives it itself), and blocking
//! wrappers live in [`crate::native`], which only the CLI, tests and benches use.
//!
//! Device setup (`Gpu::open`) is separate from the work, so tests and the CLI share one device
//! and its pipeline cache; planning (`plan`) is pure and separate from creating objects
//! (`dispatch`).

mod bound;
pub mod capability;
mod device;
mod dispatch;
pub mod kernels;
mod operand;
pub mod params;
pub mod plan;
pub mod platform;
mod tensor;
mod writer;

pub use bound::{BindOptions, BoundOp, GatherStatus};
pub use device::{adapters, selector_matches, AdapterEntry, GpuOptions, SharedDevice};
pub use dispatch::{Prepared, READ_CHUNK};
pub use kernels::{Op, Profile, Variant, MAX_COLUMNS};
pub use operand::{DeviceSlice, Word, OPERAND_USAGE};
pub use platform::Platform;
pub use tensor::{GpuTensor, UPLOAD_CHUNK};
pub use writer::PayloadWriter;

use crate::error::{Error, Result};
use kernels::KernelKey;
use plan::{Arrangement, PlanLimits, Request};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The environment variable that selects an adapter when `--adapter` is not given.
pub const ADAPTER_ENV: &str = "NINFER_WGPU_ADAPTER";

/// The most activation columns one host-slice product takes (4096 is a long prompt's worth; the
/// limit keeps a mistyped count from allocating without bound).
pub const MAX_HOST_COLUMNS: usize = 1 << 16;

/// Word written to every output before a kernel runs: a NaN that no kernel produces, so an
/// element the kernel never wrote cannot pass as a value.
pub const POISON: u32 = 0x7FC0_DEAD;

/// A device's lost flag, shared by a [`Gpu`] and its bound ops: what an engine's device-lost
/// callback marks ([`Gpu::lost_flag`]). `Send + Sync + 'static`, as wgpu's callback must be.
#[derive(Debug, Clone)]
pub struct LostFlag(Arc<AtomicBool>);

impl LostFlag {
    pub fn mark(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_marked(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

fn lost_error() -> Error {
    Error::Gpu("the device was lost; open it again".into())
}

/// Polls `device` without blocking (so a pending device-lost callback runs) and refuses a lost
/// one.
fn check_device(device: &wgpu::Device, lost: &AtomicBool) -> Result<()> {
    #[cfg(not(target_arch = "wasm32"))]
    let _ = device.poll(wgpu::PollType::Poll);
    #[cfg(target_arch = "wasm32")]
    let _ = device;
    match lost.load(Ordering::SeqCst) {
        true => Err(lost_error()),
        false => Ok(()),
    }
}

/// [`Gpu::scoped_now`] on a bare device (a bound op's).
fn in_scope_now<T>(device: &wgpu::Device, lost: &AtomicBool, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    use futures::FutureExt;
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let value = f();
    if let Some(Some(e)) = validation.pop().now_or_never() {
        check_device(device, lost)?;
        return Err(Error::Gpu(format!("{what}: {}", crate::error::clip(&e.to_string()))));
    }
    Ok(value)
}

/// An open device with its platform facts and pipeline cache.
pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    platform: Platform,
    layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
    pipelines: Mutex<HashMap<KernelKey, wgpu::ComputePipeline>>,
    /// The activation kernels (the A8 quantize pass), each built on first use.
    activation: Mutex<HashMap<kernels::ActivationOp, wgpu::ComputePipeline>>,
    grids: Mutex<HashMap<crate::Format, wgpu::Buffer>>,
    lost: Arc<AtomicBool>,
    /// Bound where a kernel's layout wants a buffer the op does not read (16 bytes).
    spare: wgpu::Buffer,
    /// Bound at binding 7 (gather's status words) by the ops that write no status.
    spare_status: wgpu::Buffer,
    max_memory: Option<u64>,
    word_loads_only: bool,
    arrangement: Option<Arrangement>,
    tall_tiles: Option<bool>,
}

impl Gpu {
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The device memory one tensor may take, where the caller set it.
    pub fn max_memory(&self) -> Option<u64> {
        self.max_memory
    }

    /// The binding size the planner windows against (the device's, or the forced lower one).
    pub fn max_binding(&self) -> u64 {
        self.platform.limits.max_storage_buffer_binding_size
    }

    /// A handle on this device's lost flag, for an engine's own device-lost callback on a device
    /// handed over with [`Gpu::from_device`] (wgpu holds one callback per device, and the engine
    /// keeps its own): once it is marked, every call of this `Gpu` and of its bound ops returns
    /// an error saying the device was lost (docs/engine.md#a-lost-device).
    pub fn lost_flag(&self) -> LostFlag {
        LostFlag(self.lost.clone())
    }

    /// Marks the device lost (what [`LostFlag::mark`] does).
    pub fn mark_lost(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }

    /// Refuses every call once the device is lost. wgpu tells of a loss only through the
    /// device-lost callback, which it calls from a poll, and after a loss most calls do nothing
    /// and say nothing: so a call polls first (never blocking), letting the callback run.
    pub(crate) fn check_alive(&self) -> Result<()> {
        check_device(&self.device, &self.lost)
    }

    /// Runs `f` (a write) inside a validation scope and returns its error, for the calls that do
    /// not wait: natively a popped scope is ready at once; in a browser the scope resolves later
    /// and its error, if any, is dropped (the next submit or read reports the loss).
    pub(crate) fn scoped_now<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check_alive()?;
        in_scope_now(&self.device, &self.lost, what, f)
    }

    /// Runs `f` inside validation and out-of-memory error scopes and returns its first error.
    /// Used where wgpu reports a failure only through a scope: compiling, allocating, binding,
    /// submitting.
    pub(crate) async fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check_alive()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        // Both scopes are popped before either is awaited: a pop takes effect at once, and an
        // await between them would let another task (a browser page running two calls) push
        // its own scopes on this device's one stack, popping them out of order.
        let (v, o) = (validation.pop(), oom.pop());
        let (v, o) = (v.await, o.await);
        // A lost device explains an error better than the error does.
        if let Some(e) = v {
            self.check_alive()?;
            return Err(Error::Gpu(format!("{what}: {}", crate::error::clip(&e.to_string()))));
        }
        if let Some(e) = o {
            self.check_alive()?;
            return Err(Error::Gpu(format!(
                "{what}: the device is out of memory ({})",
                crate::error::clip(&e.to_string())
            )));
        }
        self.check_alive()?;
        Ok(value)
    }

    /// The compiled pipeline of a kernel, built once per device.
    async fn pipeline(&self, key: KernelKey) -> Result<wgpu::ComputePipeline> {
        if let Some(p) = self
            .pipelines
            .lock()
            .map_err(|_| Error::Gpu("pipeline cache poisoned by an earlier panic".into()))?
            .get(&key)
        {
            return Ok(p.clone());
        }
        let source = kernels::for_device(kernels::assemble(key)?, key.variant == Variant::Subgroup);
        let pipeline = self.compile(&key.label(), source, key.entry_point()).await?;
        self.pipelines
            .lock()
            .map_err(|_| Error::Gpu("pipeline cache poisoned by an earlier panic".into()))?
            .insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// An activation kernel, built once per device.
    async fn activation_pipeline(&self, op: kernels::ActivationOp) -> Result<wgpu::ComputePipeline> {
        let poisoned = || Error::Gpu("pipeline cache poisoned by an earlier panic".into());
        if let Some(p) = self.activation.lock().map_err(|_| poisoned())?.get(&op) {
            return Ok(p.clone());
        }
        let pipeline = self.compile(op.name(), kernels::assemble_activation(op), op.entry_point()).await?;
        self.activation.lock().map_err(|_| poisoned())?.insert(op, pipeline.clone());
        Ok(pipeline)
    }

    async fn compile(&self, label: &str, source: String, entry: &str) -> Result<wgpu::ComputePipeline> {
        self.scoped(&format!("compiling {label}"), || {
            let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: Some(&self.pipeline_layout),
                module: &module,
                entry_point: Some(entry),
                // Every kernel writes its workgroup slots before reading them, so wgpu's
                // zero-fill is only cost: on GL it becomes an array constructor of one value per
                // slot, and Mesa then takes a minute to compile the 8 KiB matmul array (4 s
                // without it). Browsers zero-fill regardless.
                compilation_options: wgpu::PipelineCompilationOptions {
                    zero_initialize_workgroup_memory: false,
                    ..Default::default()
                },
                cache: None,
            })
        })
        .await
    }

    /// The i-quant grid of `format` on this device (uploaded once), or `None` for formats
    /// without one.
    async fn grid_buffer(&self, format: crate::Format) -> Result<Option<wgpu::Buffer>> {
        let Some(words) = kernels::gguf_grid(format) else { return Ok(None) };
        if let Some(b) =
            self.grids.lock().map_err(|_| Error::Gpu("grid cache poisoned by an earlier panic".into()))?.get(&format)
        {
            return Ok(Some(b.clone()));
        }
        let buffer = self
            .scoped("uploading an i-quant grid", || {
                wgpu::util::DeviceExt::create_buffer_init(
                    &self.device,
                    &wgpu::util::BufferInitDescriptor {
                        label: Some("i-quant grid"),
                        contents: bytemuck::cast_slice(&words),
                        usage: wgpu::BufferUsages::STORAGE,
                    },
                )
            })
            .await?;
        self.grids
            .lock()
            .map_err(|_| Error::Gpu("grid cache poisoned by an earlier panic".into()))?
            .insert(format, buffer.clone());
        Ok(Some(buffer))
    }

    /// Drives the device until submitted work and pending mappings complete. Native only:
    /// there a mapping resolves when the device is polled; a browser resolves it on its own.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::Wait { submission_index: None, timeout: None })
            .map_err(|e| Error::Gpu(format!("waiting for the device: {e}")))?;
        self.check_alive()
    }

    fn drive(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        self.wait()?;
        Ok(())
    }

    /// Finishes and submits an engine's recorded step, inside error scopes: a validation error
    /// in anything recorded (a caller's kernel included) is an error here, not a panic.
    pub async fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.scoped("submitting a recorded step", || self.queue.submit([encoder.finish()])).await?;
        Ok(())
    }

    /// Copies `bytes` bytes of `buffer` from `offset` back to the host (`map_async`, awaited).
    pub async fn read_back(&self, buffer: &wgpu::Buffer, offset: u64, bytes: u64) -> Result<Vec<u8>> {
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let staging = self
            .scoped("allocating a read-back buffer", || {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("read back"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .await?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, bytes);
        self.queue.submit([encoder.finish()]);
        self.read_mapped(&staging, bytes).await
    }

    /// The first `bytes` bytes of a MAP_READ buffer that submitted work has copied into (an
    /// engine's own read-back buffer, reused step after step): mapped, awaited, unmapped.
    pub async fn read_mapped(&self, staging: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        let (tx, rx) = futures::channel::oneshot::channel();
        staging.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.drive()?;
        rx.await
            .map_err(|_| Error::Gpu("read-back mapping was cancelled".into()))?
            .map_err(|e| Error::Gpu(format!("mapping the read-back buffer: {e}")))?;
        self.check_alive()?;
        let view = staging
            .slice(..bytes)
            .get_mapped_range()
            .map_err(|e| Error::Gpu(format!("reading the mapped buffer: {e}")))?;
        let out = view.to_vec();
        drop(view);
        staging.unmap();
        Ok(out)
    }

    /// Uploads a validated payload with its stored bytes (see [`GpuTensor`]), arranged for A32
    /// products ([`Gpu::arrangement`]); [`Gpu::upload_for`] for another profile's.
    pub async fn upload(&self, tensor: &crate::Validated<'_, '_>) -> Result<GpuTensor> {
        GpuTensor::upload(self, tensor, Profile::A32, &mut |_, _| {}).await
    }

    /// [`Gpu::upload`], arranged for the products of `profile`.
    pub async fn upload_for(&self, tensor: &crate::Validated<'_, '_>, profile: Profile) -> Result<GpuTensor> {
        GpuTensor::upload(self, tensor, profile, &mut |_, _| {}).await
    }

    /// Uploads matrices of one format, layout and K as one tensor of their rows in order, so
    /// one product computes them all (q, k and v into one buffer, say), arranged for the
    /// products of `profile`. GGUF blocks and contiguous matrices stack; other layouts, mixed
    /// formats or K are refused.
    pub async fn upload_stacked(&self, parts: &[&crate::Validated<'_, '_>], profile: Profile) -> Result<GpuTensor> {
        GpuTensor::upload_stacked(self, parts, profile, &mut |_, _| {}).await
    }

    /// Uploads GGUF q8_0 blocks as q8_g32_fp16 ([`crate::encode::import::Q8FromQ8_0`], which
    /// checked them against its rules): the same codes and scales, so the same weights bit for
    /// bit, in the layout whose codes are aligned words — fewer loads a weight in the products
    /// (docs/llm.md#the-output-head). Made and written a chunk at a time: the blocks are never
    /// copied whole. Arranged for the products of `profile`.
    pub async fn upload_q8_from_q8_0(
        &self,
        view: &crate::encode::import::Q8FromQ8_0<'_>,
        profile: Profile,
    ) -> Result<GpuTensor> {
        GpuTensor::upload_q8_from_q8_0(self, view, profile, &mut |_, _| {}).await
    }

    /// [`Gpu::upload_for`] in chunks of [`UPLOAD_CHUNK`] bytes, calling `progress(done,
    /// total)` after each (the CLI draws a progress bar from it).
    pub async fn upload_with_progress(
        &self,
        tensor: &crate::Validated<'_, '_>,
        profile: Profile,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        GpuTensor::upload(self, tensor, profile, progress).await
    }

    /// How an upload of `format` for `profile`'s products arranges its rows here: as the
    /// options ask, else the adapter's choice ([`capability::arrangement`]).
    pub fn arrangement(&self, format: crate::Format, profile: Profile) -> Arrangement {
        self.arrangement.unwrap_or_else(|| capability::arrangement(format, profile, &self.platform))
    }

    /// The limits pass planning respects on this device.
    pub fn plan_limits(&self) -> PlanLimits {
        let l = &self.platform.limits;
        PlanLimits {
            max_binding: l.max_storage_buffer_binding_size,
            max_buffer: l.max_buffer_size,
            align: l.min_storage_buffer_offset_alignment as u64,
            max_workgroups_per_dimension: l.max_compute_workgroups_per_dimension,
            vec4_loads: !self.word_loads_only,
        }
    }

    /// Dequantizes on the GPU: the exact binary32 words (int32: the integer words), C order.
    pub async fn dequant(&self, tensor: &GpuTensor) -> Result<Vec<u32>> {
        self.prepare(tensor, Request::Dequant, Variant::Workgroup, &[]).await?.run_and_read(self).await
    }

    /// Dequantizes on the GPU and hands the words to `sink` in C order, a bounded piece at a
    /// time (at most [`READ_CHUNK`] bytes), so an output larger than host memory can
    /// stream to a file.
    pub async fn dequant_to(&self, tensor: &GpuTensor, sink: &mut dyn FnMut(&[u32]) -> Result<()>) -> Result<()> {
        self.prepare(tensor, Request::Dequant, Variant::Workgroup, &[]).await?.run_into(self, sink).await
    }

    /// `Y = W X` (A32) with the fastest supported variant: `xs` holds `columns` activation
    /// vectors of K values back to back; the result holds `columns` vectors of N outputs back to
    /// back.
    pub async fn matmul(&self, tensor: &GpuTensor, xs: &[f32], columns: usize) -> Result<Vec<f32>> {
        self.matmul_in(tensor, xs, columns, Profile::A32).await
    }

    /// `Y = W X` in a chosen profile, with its fastest supported variant.
    pub async fn matmul_in(
        &self,
        tensor: &GpuTensor,
        xs: &[f32],
        columns: usize,
        profile: Profile,
    ) -> Result<Vec<f32>> {
        let variant = capability::best_variant(tensor.desc().format, profile.op(), &self.platform);
        self.product(tensor, xs, columns, profile.op(), variant).await
    }

    /// `Y = W X` (A32) with a chosen variant (tests run every supported one).
    pub async fn matmul_with(
        &self,
        tensor: &GpuTensor,
        xs: &[f32],
        columns: usize,
        variant: Variant,
    ) -> Result<Vec<f32>> {
        self.product(tensor, xs, columns, Op::Matmul, variant).await
    }

    /// A product op (`Matmul` or `MatmulA8`) with a chosen variant: a thin wrapper over a bound
    /// op ([`Gpu::bind_matmul_with`]) on buffers of its own, in batches of columns that fit one
    /// binding.
    pub async fn product(
        &self,
        tensor: &GpuTensor,
        xs: &[f32],
        columns: usize,
        op: Op,
        variant: Variant,
    ) -> Result<Vec<f32>> {
        let profile = match op {
            Op::MatmulA8 => Profile::A8,
            Op::Matmul => Profile::A32,
            Op::Dequant | Op::Gather => return Err(Error::Unsupported(format!("{} is not a product", op.name()))),
        };
        let desc = tensor.desc();
        capability::check(desc.format, desc.layout, op, variant, Some(&self.platform))?;
        let (n, k) = match desc.shape[..] {
            [n, k] => (n as u64, k as u64),
            ref s => return Err(Error::Unsupported(format!("matmul needs a rank-2 [N, K] tensor, got shape {s:?}"))),
        };
        if columns == 0 {
            return Err(Error::Unsupported("matmul takes at least one activation column, got 0".into()));
        }
        if columns > MAX_HOST_COLUMNS {
            return Err(Error::Unsupported(format!(
                "matmul takes at most {MAX_HOST_COLUMNS} activation columns per call, got {columns}"
            )));
        }
        if (k as usize).checked_mul(columns) != Some(xs.len()) {
            return Err(Error::Shape {
                layout: desc.layout.name(),
                rule: "x holds J columns of K values",
                detail: format!("J = {columns}, K = {k}: expected {} values, got {}", k as usize * columns, xs.len()),
            });
        }
        let mut y = Vec::new();
        y.try_reserve_exact((n as usize).saturating_mul(columns)).map_err(|_| {
            Error::Unsupported(format!("{columns} columns of {n} outputs are more than this machine can allocate"))
        })?;
        if n == 0 || k == 0 {
            y.resize(n as usize * columns, 0.0);
            return Ok(y);
        }
        // Columns padded to whole vec4s (the kernel reads x as vec4), as many a batch as one
        // binding of x and of y holds.
        let stride = k.div_ceil(4) * 4;
        let room = self.max_binding().min(self.platform.limits.max_buffer_size);
        let batch = (room / (4 * stride)).min(room / (4 * n)).clamp(1, columns as u64);
        let mut padded = vec![0f32; (batch * stride) as usize];
        let xb = self.create_buffer(batch * stride, "ninfer-wgpu host x").await?;
        let yb = self.create_buffer(batch * n, "ninfer-wgpu host y").await?;
        let x = DeviceSlice::new(&xb, 0, k).with_stride(stride);
        let options = BindOptions { variant: Some(variant), tiled_from: None };
        let bound =
            self.bind_matmul_with(tensor, profile, options, x, DeviceSlice::new(&yb, 0, n), batch as u32).await?;
        let poison = vec![POISON; (batch * n) as usize];
        for group in xs.chunks((k * batch) as usize) {
            let j = group.len() as u64 / k;
            for (c, column) in group.chunks_exact(k as usize).enumerate() {
                padded[c * stride as usize..][..k as usize].copy_from_slice(column);
            }
            self.write(&xb, 0, &padded[..(j * stride) as usize])?;
            self.write(&yb, 0, &poison[..(j * n) as usize])?;
            let mut encoder = self.device.create_command_encoder(&Default::default());
            bound.encode(&mut encoder, j as u32)?;
            self.scoped(&format!("running {} columns of {:?}", j, desc.shape), || {
                self.queue.submit([encoder.finish()])
            })
            .await?;
            y.extend(self.read(DeviceSlice::<f32>::new(&yb, 0, j * n), 1).await?);
        }
        Ok(y)
    }

    /// The exact words of `rows` (request order, repeats allowed): what dequant gives for them.
    pub async fn gather(&self, tensor: &GpuTensor, rows: &[u32]) -> Result<Vec<u32>> {
        self.prepare(tensor, Request::Gather { rows }, Variant::Workgroup, &[]).await?.run_and_read(self).await
    }

    /// Plans an op once (capability check, argument checks, windows, bind groups) for repeated
    /// runs. `xs` is matmul's activation columns (empty for the other ops). Every refusal comes
    /// before anything is allocated or dispatched.
    pub async fn prepare(
        &self,
        tensor: &GpuTensor,
        request: Request<'_>,
        variant: Variant,
        xs: &[f32],
    ) -> Result<Prepared> {
        let desc = tensor.desc();
        let op = request.op();
        capability::check(desc.format, desc.layout, op, variant, Some(&self.platform))?;
        let columns = match request {
            Request::Matmul { columns } | Request::MatmulA8 { columns } => columns,
            Request::Dequant | Request::Gather { .. } => 1,
        };
        let k = match (op, desc.shape.as_slice()) {
            (Op::Dequant, _) => 0,
            (Op::Matmul | Op::MatmulA8 | Op::Gather, [_, k]) => *k,
            (Op::Matmul | Op::MatmulA8 | Op::Gather, s) => {
                return Err(Error::Unsupported(format!("{} needs a rank-2 [N, K] tensor, got shape {s:?}", op.name())))
            }
        };
        match op {
            Op::Matmul | Op::MatmulA8 => {
                if columns == 0 || columns > MAX_COLUMNS {
                    return Err(Error::Unsupported(format!(
                        "matmul takes 1..={MAX_COLUMNS} activation columns, got {columns}"
                    )));
                }
                if xs.len() != k * columns {
                    return Err(Error::Shape {
                        layout: desc.layout.name(),
                        rule: "x holds J columns of K values",
                        detail: format!("J = {columns}, K = {k}: expected {} values, got {}", k * columns, xs.len()),
                    });
                }
            }
            Op::Dequant | Op::Gather => {
                if !xs.is_empty() {
                    return Err(Error::Unsupported(format!("{} takes no activation", op.name())));
                }
            }
        }
        let plan = plan::plan(desc.format, tensor.geometry(), request, &self.plan_limits(), tensor.placement())?;
        // The kernel (A8: the quantize pass) reads each column zero-padded to whole chunks;
        // gather reads its pairs.
        let input: Vec<u32> = match op {
            Op::Matmul | Op::MatmulA8 => {
                let f32_words = plan.quantize.as_ref().map_or(plan.x_words, |q| q.f32_words) as usize;
                let padded = f32_words / columns;
                let mut words = vec![0u32; f32_words];
                for (j, column) in xs.chunks_exact(k.max(1)).enumerate().take(columns) {
                    for (w, x) in words[j * padded..].iter_mut().zip(column) {
                        *w = x.to_bits();
                    }
                }
                words
            }
            Op::Gather => plan.index.clone(),
            Op::Dequant => Vec::new(),
        };
        let default_variant = variant == capability::best_variant(desc.format, op, &self.platform);
        let key = KernelKey::new(desc.format, op, variant, kernels::Columns::for_request(columns, default_variant));
        Prepared::create(self, tensor, key, &plan, &input).await
    }
}
