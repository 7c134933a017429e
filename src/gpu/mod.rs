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

pub mod capability;
mod dispatch;
pub mod kernels;
pub mod params;
pub mod plan;
pub mod platform;
mod tensor;

pub use dispatch::{Prepared, READ_CHUNK};
pub use kernels::{Op, Profile, Variant, MAX_COLUMNS};
pub use platform::Platform;
pub use tensor::{GpuTensor, UPLOAD_CHUNK};

use crate::error::{Error, Result};
use kernels::KernelKey;
use plan::{PlanLimits, Request};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The environment variable that selects an adapter when `--adapter` is not given.
pub const ADAPTER_ENV: &str = "NINFER_WGPU_ADAPTER";

/// Word written to every output before a kernel runs: a NaN that no kernel produces, so an
/// element the kernel never wrote cannot pass as a value.
pub const POISON: u32 = 0x7FC0_DEAD;

/// How to open a device.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Backend name (`vulkan`, `gl`, `metal`, `dx12`) or a case-insensitive substring of the
    /// adapter's name or driver (`llvmpipe`, `swiftshader`). `None`: hardware first.
    pub adapter: Option<String>,
    /// Lowers `max_storage_buffer_binding_size` (windowed passes); above the adapter's own it
    /// is refused.
    pub max_binding: Option<u64>,
    /// Lowers `max_compute_workgroups_per_dimension` (tests use it to force 2-D dispatches).
    pub max_workgroups_per_dimension: Option<u32>,
    /// Lowers `max_buffer_size` (tensors and outputs split over buffers, as a browser's
    /// 256 MiB would); above the adapter's own it is refused.
    pub max_buffer_size: Option<u64>,
    /// The most device memory one tensor's buffers may take (wgpu reports no budget, so a
    /// caller that knows it — a page, a test — says it); larger tensors are refused before
    /// anything is allocated.
    pub max_memory: Option<u64>,
    /// Kernels read plane 0 as u32 words only, never through its vec4 view (binding 6): the
    /// path a window that does not start and end on a vec4 takes, here everywhere (tests
    /// compare the two).
    pub word_loads_only: bool,
}

/// One adapter as found by enumeration, before a device is opened.
#[derive(Debug, Clone)]
pub struct AdapterEntry {
    pub platform: Platform,
    adapter: wgpu::Adapter,
}

fn instance() -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::all();
    wgpu::Instance::new(desc)
}

/// Hardware before software: discrete, integrated, virtual, other, then CPU adapters.
fn preference(info: &wgpu::AdapterInfo) -> (u8, u8) {
    let kind = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    };
    let backend = match info.backend {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::BrowserWebGpu => 1,
        wgpu::Backend::Gl => 2,
        wgpu::Backend::Noop => 3,
    };
    (kind, backend)
}

/// Every adapter the machine offers, in preference order.
pub async fn adapters() -> Vec<AdapterEntry> {
    let instance = instance();
    let language = instance.wgsl_language_features();
    let mut list: Vec<AdapterEntry> = instance
        .enumerate_adapters(wgpu::Backends::all())
        .await
        .into_iter()
        .filter(|a| a.get_info().backend != wgpu::Backend::Noop)
        .map(|adapter| AdapterEntry {
            platform: Platform::from_adapter(
                &adapter.get_info(),
                adapter.features(),
                &adapter.limits(),
                language.clone(),
            ),
            adapter,
        })
        .collect();
    list.sort_by_key(|a| preference(&a.adapter.get_info()));
    list
}

/// Whether `selector` names this adapter: its backend, a substring of its name or driver, or
/// `backend/substring` for both (`vulkan/llvmpipe` is lavapipe, not GL's llvmpipe).
pub fn selector_matches(selector: &str, platform: &Platform) -> bool {
    let s = selector.to_lowercase();
    if let Some((backend, name)) = s.split_once('/') {
        return platform.backend.to_lowercase() == backend && selector_matches(name, platform);
    }
    platform.backend.to_lowercase() == s
        || platform.name.to_lowercase().contains(&s)
        || platform.driver.to_lowercase().contains(&s)
        || platform.driver_info.to_lowercase().contains(&s)
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
    max_memory: Option<u64>,
    word_loads_only: bool,
}

/// Storage buffers one kernel binds: three payload planes, the op's input, the output and plane 0
/// again as vec4<u32>.
const STORAGE_BINDINGS: u32 = 6;

/// An engine's own device and queue, with the adapter and instance they came from (the
/// platform facts: the adapter's identity, the instance's WGSL language features).
pub struct SharedDevice<'a> {
    pub instance: &'a wgpu::Instance,
    pub adapter: &'a wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
}

/// What every kernel needs of a device's limits, refused naming the device otherwise.
fn check_device_limits(limits: &wgpu::Limits, summary: &str) -> Result<()> {
    if limits.max_storage_buffers_per_shader_stage < STORAGE_BINDINGS {
        return Err(Error::Unsupported(format!(
            "{summary} offers {} storage buffers per shader stage; the kernels bind {STORAGE_BINDINGS}",
            limits.max_storage_buffers_per_shader_stage
        )));
    }
    if limits.max_compute_invocations_per_workgroup < kernels::MATMUL_WG {
        return Err(Error::Unsupported(format!(
            "{summary} allows {} invocations per workgroup; matmul uses {}",
            limits.max_compute_invocations_per_workgroup,
            kernels::MATMUL_WG
        )));
    }
    Ok(())
}

impl Gpu {
    /// Opens the adapter chosen by `options.adapter`, else by `NINFER_WGPU_ADAPTER`, else the
    /// most preferred one, with the adapter's own limits and the optional features we use.
    /// (The environment is read on native targets only; a browser has none.)
    pub async fn open(options: &GpuOptions) -> Result<Gpu> {
        #[cfg(not(target_arch = "wasm32"))]
        let from_env = std::env::var(ADAPTER_ENV).ok().filter(|s| !s.is_empty());
        #[cfg(target_arch = "wasm32")]
        let from_env = None;
        let selector = options.adapter.clone().or(from_env);
        let list = adapters().await;
        if list.is_empty() {
            return Err(Error::Gpu("no GPU adapter found (install a Vulkan or GL driver; on a CPU-only machine Mesa's lavapipe or llvmpipe)".into()));
        }
        let entry = match &selector {
            Some(s) => list.iter().find(|a| selector_matches(s, &a.platform)).ok_or_else(|| {
                Error::Gpu(format!(
                    "no adapter matches `{s}`; available: {}",
                    list.iter().map(|a| a.platform.summary()).collect::<Vec<_>>().join("; ")
                ))
            })?,
            None => &list[0],
        };
        Gpu::from_adapter(entry, options).await
    }

    async fn from_adapter(entry: &AdapterEntry, options: &GpuOptions) -> Result<Gpu> {
        let adapter = &entry.adapter;
        let mut limits = adapter.limits();
        check_device_limits(&limits, &entry.platform.summary())?;
        // Caps lower a limit (to test a browser's limits natively); raising one is refused, as
        // the device would not honour it.
        let above = |what: &str, cap: u64, own: u64| {
            Error::Unsupported(format!("{what} {cap} is above {}'s own {own}", entry.platform.summary()))
        };
        if let Some(cap) = options.max_binding {
            if cap > limits.max_storage_buffer_binding_size {
                return Err(above("max_binding", cap, limits.max_storage_buffer_binding_size));
            }
            limits.max_storage_buffer_binding_size = cap.max(4);
        }
        if let Some(cap) = options.max_buffer_size {
            if cap > limits.max_buffer_size {
                return Err(above("max_buffer_size", cap, limits.max_buffer_size));
            }
            limits.max_buffer_size = cap.max(4);
            // A binding never exceeds its buffer.
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        }
        if let Some(cap) = options.max_workgroups_per_dimension {
            limits.max_compute_workgroups_per_dimension = limits.max_compute_workgroups_per_dimension.min(cap.max(1));
        }
        let features = adapter.features() & (wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16);
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("ninfer-wgpu"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: wgpu::ExperimentalFeatures::disabled(),
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| Error::Gpu(format!("requesting a device from {}: {e}", entry.platform.summary())))?;
        // Our own device: its loss is ours to notice.
        let lost = Arc::new(AtomicBool::new(false));
        let flag = lost.clone();
        device.set_device_lost_callback(move |_, _| flag.store(true, Ordering::SeqCst));
        let none = wgpu::WgslLanguageFeatures::empty();
        let mut platform = Platform::from_adapter(&adapter.get_info(), device.features(), &device.limits(), none);
        platform.features = entry.platform.features.clone();
        // WGSL language features belong to the instance, found at enumeration.
        platform.has_packed_dot = entry.platform.has_packed_dot;
        Gpu::on(device, queue, platform, lost, options).await
    }

    /// Runs on a device an engine opened (the one it renders or computes with) instead of
    /// opening one: the platform facts are the device's own features and limits, probed as
    /// [`Gpu::open`] probes them; `options` may lower the limits the planner uses (refused above
    /// the device's) and set `max_memory`, and its adapter selector is ignored. The engine keeps
    /// its device-lost callback: wgpu holds one per device, and the library installs none on a
    /// device it did not create, so a lost device shows as the errors of the calls that touch it.
    pub async fn from_device(shared: SharedDevice<'_>, options: &GpuOptions) -> Result<Gpu> {
        let SharedDevice { instance, adapter, device, queue } = shared;
        let language = instance.wgsl_language_features();
        let mut platform =
            Platform::from_adapter(&adapter.get_info(), device.features(), &device.limits(), language.clone());
        // As `open` reports it: the features the adapter offers, by name.
        platform.features =
            Platform::from_adapter(&adapter.get_info(), adapter.features(), &adapter.limits(), language).features;
        let summary = platform.summary();
        check_device_limits(&device.limits(), &summary)?;
        // The planner's limits: the device's, lowered where the caller asks.
        let own = device.limits();
        let above = |what: &str, cap: u64, own: u64| {
            Error::Unsupported(format!("{what} {cap} is above the shared device's own {own} ({summary})"))
        };
        let mut limits = platform.limits.clone();
        if let Some(cap) = options.max_binding {
            if cap > own.max_storage_buffer_binding_size {
                return Err(above("max_binding", cap, own.max_storage_buffer_binding_size));
            }
            limits.max_storage_buffer_binding_size = cap.max(4);
        }
        if let Some(cap) = options.max_buffer_size {
            if cap > own.max_buffer_size {
                return Err(above("max_buffer_size", cap, own.max_buffer_size));
            }
            limits.max_buffer_size = cap.max(4);
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        }
        if let Some(cap) = options.max_workgroups_per_dimension {
            limits.max_compute_workgroups_per_dimension = limits.max_compute_workgroups_per_dimension.min(cap.max(1));
        }
        platform.limits = limits;
        Gpu::on(device, queue, platform, Arc::new(AtomicBool::new(false)), options).await
    }

    /// The host over an open device: bind group layout, caches, then the probes.
    async fn on(
        device: wgpu::Device,
        queue: wgpu::Queue,
        platform: Platform,
        lost: Arc<AtomicBool>,
        options: &GpuOptions,
    ) -> Result<Gpu> {
        let layout = dispatch::bind_group_layout(&device);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("ninfer-wgpu kernels"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let mut gpu = Gpu {
            device,
            queue,
            platform,
            layout,
            pipeline_layout,
            pipelines: Mutex::new(HashMap::new()),
            activation: Mutex::new(HashMap::new()),
            grids: Mutex::new(HashMap::new()),
            lost,
            max_memory: options.max_memory,
            word_loads_only: options.word_loads_only,
        };
        gpu.platform.probes = dispatch::run_probes(&gpu).await?;
        Ok(gpu)
    }

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

    pub(crate) fn check_alive(&self) -> Result<()> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(Error::Gpu("the device was lost; open it again".into()));
        }
        Ok(())
    }

    /// Runs `f` inside validation and out-of-memory error scopes and returns its first error.
    /// Used where wgpu reports a failure only through a scope: compiling, allocating, binding,
    /// submitting.
    async fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check_alive()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        // Both scopes are popped before either is awaited: a pop takes effect at once, and an
        // await between them would let another task (a browser page running two calls) push
        // its own scopes on this device's one stack, popping them out of order.
        let (v, o) = (validation.pop(), oom.pop());
        let (v, o) = (v.await, o.await);
        if let Some(e) = v.or(o) {
            return Err(Error::Gpu(format!("{what}: {}", crate::error::clip(&e.to_string()))));
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
        let (tx, rx) = futures::channel::oneshot::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
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

    /// Uploads a validated payload unchanged (see [`GpuTensor`]).
    pub async fn upload(&self, tensor: &crate::Validated<'_, '_>) -> Result<GpuTensor> {
        GpuTensor::upload(self, tensor, &mut |_, _| {}).await
    }

    /// [`Gpu::upload`] in chunks of [`UPLOAD_CHUNK`] bytes, calling `progress(done,
    /// total)` after each (the CLI draws a progress bar from it).
    pub async fn upload_with_progress(
        &self,
        tensor: &crate::Validated<'_, '_>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        GpuTensor::upload(self, tensor, progress).await
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

    /// A product op (`Matmul` or `MatmulA8`) with a chosen variant.
    pub async fn product(
        &self,
        tensor: &GpuTensor,
        xs: &[f32],
        columns: usize,
        op: Op,
        variant: Variant,
    ) -> Result<Vec<f32>> {
        let request = match op {
            Op::MatmulA8 => Request::MatmulA8 { columns },
            Op::Matmul => Request::Matmul { columns },
            Op::Dequant | Op::Gather => {
                return Err(Error::Unsupported(format!("{} is not a product", op.name())));
            }
        };
        let prepared = self.prepare(tensor, request, variant, xs).await?;
        Ok(prepared.run_and_read(self).await?.into_iter().map(f32::from_bits).collect())
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
