//! The GPU host: open an adapter with its real limits, upload payloads unchanged, run kernels.
//!
//! Device setup (`Gpu::open`) is separate from the work (`Gpu::dequant`, `Gpu::matvec`,
//! `Gpu::prepare`), so tests and the CLI share one device and its pipeline cache.

pub mod capability;
mod dispatch;
pub mod kernels;
pub mod platform;
mod tensor;

pub use dispatch::Prepared;
pub use kernels::{Op, Variant};
pub use platform::Platform;
pub use tensor::GpuTensor;

use crate::error::{Error, Result};
use kernels::KernelKey;
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
    /// Lowers `max_storage_buffer_binding_size` (tests use it to force windowed bindings).
    pub max_binding: Option<u64>,
    /// Lowers `max_compute_workgroups_per_dimension` (tests use it to force 2-D dispatches).
    pub max_workgroups_per_dimension: Option<u32>,
    /// Lowers `max_buffer_size` (tests use it to reach the refusal of oversized payloads).
    pub max_buffer_size: Option<u64>,
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
pub fn adapters() -> Vec<AdapterEntry> {
    let mut list: Vec<AdapterEntry> = pollster::block_on(instance().enumerate_adapters(wgpu::Backends::all()))
        .into_iter()
        .filter(|a| a.get_info().backend != wgpu::Backend::Noop)
        .map(|adapter| AdapterEntry { platform: Platform::from_adapter(&adapter.get_info(), adapter.features(), &adapter.limits()), adapter })
        .collect();
    list.sort_by_key(|a| preference(&a.adapter.get_info()));
    list
}

/// Whether `selector` names this adapter: its backend, or a substring of its name or driver.
pub fn selector_matches(selector: &str, platform: &Platform) -> bool {
    let s = selector.to_lowercase();
    platform.backend.to_lowercase() == s || platform.name.to_lowercase().contains(&s) || platform.driver.to_lowercase().contains(&s) || platform.driver_info.to_lowercase().contains(&s)
}

/// An open device with its platform facts and pipeline cache.
pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    platform: Platform,
    layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
    pipelines: Mutex<HashMap<KernelKey, wgpu::ComputePipeline>>,
    grids: Mutex<HashMap<crate::Format, wgpu::Buffer>>,
    lost: Arc<AtomicBool>,
}

/// Storage buffers one kernel binds: three payload planes, x and the output.
const STORAGE_BINDINGS: u32 = 5;

impl Gpu {
    /// Opens the adapter chosen by `options.adapter`, else by `NINFER_WGPU_ADAPTER`, else the
    /// most preferred one, with the adapter's own limits and the optional features we use.
    pub fn open(options: &GpuOptions) -> Result<Gpu> {
        let selector = options.adapter.clone().or_else(|| std::env::var(ADAPTER_ENV).ok().filter(|s| !s.is_empty()));
        let list = adapters();
        if list.is_empty() {
            return Err(Error::Gpu("no GPU adapter found (install a Vulkan or GL driver; on a CPU-only machine Mesa's lavapipe or llvmpipe)".into()));
        }
        let entry = match &selector {
            Some(s) => list.iter().find(|a| selector_matches(s, &a.platform)).ok_or_else(|| {
                Error::Gpu(format!("no adapter matches `{s}`; available: {}", list.iter().map(|a| a.platform.summary()).collect::<Vec<_>>().join("; ")))
            })?,
            None => &list[0],
        };
        Gpu::from_adapter(entry, options)
    }

    fn from_adapter(entry: &AdapterEntry, options: &GpuOptions) -> Result<Gpu> {
        let adapter = &entry.adapter;
        let mut limits = adapter.limits();
        if limits.max_storage_buffers_per_shader_stage < STORAGE_BINDINGS {
            return Err(Error::Unsupported(format!(
                "{} offers {} storage buffers per shader stage; the kernels bind {STORAGE_BINDINGS}",
                entry.platform.summary(),
                limits.max_storage_buffers_per_shader_stage
            )));
        }
        if limits.max_compute_invocations_per_workgroup < kernels::MATVEC_WG {
            return Err(Error::Unsupported(format!("{} allows {} invocations per workgroup; matvec uses {}", entry.platform.summary(), limits.max_compute_invocations_per_workgroup, kernels::MATVEC_WG)));
        }
        if let Some(cap) = options.max_binding {
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(cap);
        }
        if let Some(cap) = options.max_buffer_size {
            limits.max_buffer_size = limits.max_buffer_size.min(cap);
        }
        if let Some(cap) = options.max_workgroups_per_dimension {
            limits.max_compute_workgroups_per_dimension = limits.max_compute_workgroups_per_dimension.min(cap.max(1));
        }
        let features = adapter.features() & (wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16);
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("ninfer-wgpu"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| Error::Gpu(format!("requesting a device from {}: {e}", entry.platform.summary())))?;
        let lost = Arc::new(AtomicBool::new(false));
        let flag = lost.clone();
        device.set_device_lost_callback(move |_, _| flag.store(true, Ordering::SeqCst));
        let mut platform = Platform::from_adapter(&adapter.get_info(), device.features(), &device.limits());
        platform.features = entry.platform.features.clone();
        let layout = dispatch::bind_group_layout(&device);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("ninfer-wgpu kernels"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        let mut gpu = Gpu { device, queue, platform, layout, pipeline_layout, pipelines: Mutex::new(HashMap::new()), grids: Mutex::new(HashMap::new()), lost };
        gpu.platform.probes = dispatch::run_probes(&gpu)?;
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

    /// The binding size the planner windows against (the device's, or the forced lower one).
    pub fn max_binding(&self) -> u64 {
        self.platform.limits.max_storage_buffer_binding_size
    }

    fn check_alive(&self) -> Result<()> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(Error::Gpu("the device was lost; open it again".into()));
        }
        Ok(())
    }

    /// Runs `f` inside validation and out-of-memory error scopes and returns its first error.
    fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check_alive()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        if let Some(e) = v.or(o) {
            return Err(Error::Gpu(format!("{what}: {e}")));
        }
        self.check_alive()?;
        Ok(value)
    }

    /// The compiled pipeline of a kernel, built once per device.
    fn pipeline(&self, key: KernelKey) -> Result<wgpu::ComputePipeline> {
        let mut cache = self.pipelines.lock().map_err(|_| Error::Gpu("pipeline cache poisoned by an earlier panic".into()))?;
        if let Some(p) = cache.get(&key) {
            return Ok(p.clone());
        }
        let source = kernels::assemble(key)?;
        let label = key.label();
        let pipeline = self.scoped(&format!("compiling {label}"), || {
            let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(&label), source: wgpu::ShaderSource::Wgsl(source.into()) });
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&label),
                layout: Some(&self.pipeline_layout),
                module: &module,
                entry_point: Some(key.entry_point()),
                compilation_options: Default::default(),
                cache: None,
            })
        })?;
        cache.insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// The i-quant grid of `format` on this device (uploaded once), or `None` for formats
    /// without one.
    fn grid_buffer(&self, format: crate::Format) -> Result<Option<wgpu::Buffer>> {
        let Some(words) = kernels::gguf_grid(format) else { return Ok(None) };
        let mut grids = self.grids.lock().map_err(|_| Error::Gpu("grid cache poisoned by an earlier panic".into()))?;
        if let Some(b) = grids.get(&format) {
            return Ok(Some(b.clone()));
        }
        let buffer = self.scoped("uploading an i-quant grid", || {
            wgpu::util::DeviceExt::create_buffer_init(&self.device, &wgpu::util::BufferInitDescriptor { label: Some("i-quant grid"), contents: bytemuck::cast_slice(&words), usage: wgpu::BufferUsages::STORAGE })
        })?;
        grids.insert(format, buffer.clone());
        Ok(Some(buffer))
    }

    /// Waits for all submitted work.
    pub fn wait(&self) -> Result<()> {
        self.device.poll(wgpu::PollType::Wait { submission_index: None, timeout: None }).map_err(|e| Error::Gpu(format!("waiting for the device: {e}")))?;
        self.check_alive()
    }

    /// Copies `bytes` bytes of `buffer` from `offset` back to the host.
    pub fn read_back(&self, buffer: &wgpu::Buffer, offset: u64, bytes: u64) -> Result<Vec<u8>> {
        let staging = self.scoped("allocating a read-back buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor { label: Some("read back"), size: bytes.max(4), usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false })
        })?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, bytes);
        self.queue.submit([encoder.finish()]);
        let (tx, rx) = futures::channel::oneshot::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        pollster::block_on(rx).map_err(|_| Error::Gpu("read-back mapping was cancelled".into()))?.map_err(|e| Error::Gpu(format!("mapping the read-back buffer: {e}")))?;
        let view = staging.slice(..bytes).get_mapped_range().map_err(|e| Error::Gpu(format!("reading the mapped buffer: {e}")))?;
        let out = view.to_vec();
        drop(view);
        staging.unmap();
        Ok(out)
    }

    /// Uploads a payload unchanged (see [`GpuTensor`]).
    pub fn upload(&self, tensor: &crate::EncodedTensor) -> Result<GpuTensor> {
        GpuTensor::upload(self, tensor)
    }

    /// Dequantizes on the GPU: the exact binary32 words (int32: the integer words), C order.
    pub fn dequant(&self, tensor: &GpuTensor) -> Result<Vec<u32>> {
        let variant = Variant::Workgroup;
        let prepared = self.prepare(tensor, Op::Dequant, variant, None)?;
        prepared.run_and_read(self)
    }

    /// `y = W x` on the GPU with the fastest supported variant.
    pub fn matvec(&self, tensor: &GpuTensor, x: &[f32]) -> Result<Vec<f32>> {
        let variant = capability::best_variant(tensor.desc().format, Op::Matvec, &self.platform);
        self.matvec_with(tensor, x, variant)
    }

    /// `y = W x` with a chosen variant (tests run every supported one).
    pub fn matvec_with(&self, tensor: &GpuTensor, x: &[f32], variant: Variant) -> Result<Vec<f32>> {
        let prepared = self.prepare(tensor, Op::Matvec, variant, Some(x))?;
        Ok(prepared.run_and_read(self)?.into_iter().map(f32::from_bits).collect())
    }

    /// Plans an op once (capability check, windows, bind groups) for repeated runs.
    pub fn prepare(&self, tensor: &GpuTensor, op: Op, variant: Variant, x: Option<&[f32]>) -> Result<Prepared> {
        let desc = tensor.desc();
        capability::check(desc.format, desc.layout, op, variant, Some(&self.platform))?;
        Prepared::new(self, tensor, op, variant, x)
    }
}
