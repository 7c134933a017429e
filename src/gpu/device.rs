//! Opening a device: the adapters this machine offers, choosing one, requesting its device with
//! the adapter's own limits (lowered on request), or taking an engine's device as it is; then the
//! host's setup and the platform probes.

use super::plan::Arrangement;
use super::platform::Platform;
use super::{dispatch, kernels, Gpu};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

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
    /// How uploads arrange a payload's rows (row tiles or as stored); `None`: the adapter's own
    /// choice, row tiles where the one-column product of the profile an upload is for takes
    /// whole rows per invocation (`capability::arrangement`). Tests and benchmarks set it to
    /// compare the two.
    pub arrangement: Option<Arrangement>,
    /// Whether A32's tiled products (the subgroup variant) take eight rows an invocation;
    /// `None`: the adapter's choice, eight on a native CPU driver (`capability::tiled_columns`).
    /// Tests and benchmarks set it to run both shapes on one adapter.
    pub tall_tiles: Option<bool>,
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

/// Storage buffers one kernel binds: three payload planes, the op's input, the output, plane 0
/// again as vec4<u32>, and gather's status words.
const STORAGE_BINDINGS: u32 = 7;

/// An engine's own device and queue, with the adapter and instance they came from (the
/// platform facts: the adapter's identity, the instance's WGSL language features).
pub struct SharedDevice<'a> {
    pub instance: &'a wgpu::Instance,
    pub adapter: &'a wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
}

/// The limits a caller may lower: binding size, buffer size, workgroups per dimension.
struct Caps {
    binding: u64,
    buffer: u64,
    workgroups: u32,
}

impl Caps {
    /// These limits lowered as `options` asks; a cap above the device's own is refused, since
    /// the device would not honour it. A binding never exceeds its buffer.
    fn lowered(&self, options: &GpuOptions, summary: &str) -> Result<Caps> {
        let above =
            |what: &str, cap: u64, own: u64| Error::Unsupported(format!("{what} {cap} is above {summary}'s own {own}"));
        let mut out = Caps { binding: self.binding, buffer: self.buffer, workgroups: self.workgroups };
        if let Some(cap) = options.max_binding {
            if cap > self.binding {
                return Err(above("max_binding", cap, self.binding));
            }
            out.binding = cap.max(4);
        }
        if let Some(cap) = options.max_buffer_size {
            if cap > self.buffer {
                return Err(above("max_buffer_size", cap, self.buffer));
            }
            out.buffer = cap.max(4);
            out.binding = out.binding.min(out.buffer);
        }
        if let Some(cap) = options.max_workgroups_per_dimension {
            out.workgroups = out.workgroups.min(cap.max(1));
        }
        Ok(out)
    }
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
        let from_env = std::env::var(super::ADAPTER_ENV).ok().filter(|s| !s.is_empty());
        #[cfg(target_arch = "wasm32")]
        let from_env = None;
        let selector = options.adapter.clone().or(from_env);
        let list = adapters().await;
        if list.is_empty() {
            #[cfg(not(target_arch = "wasm32"))]
            let hint = "install a Vulkan or GL driver; on a CPU-only machine Mesa's lavapipe or llvmpipe";
            #[cfg(target_arch = "wasm32")]
            let hint =
                "this browser offers no WebGPU adapter here: it lacks WebGPU, has it turned off, or blocks this GPU";
            return Err(Error::Gpu(format!("no GPU adapter found ({hint})")));
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
        let own = Caps {
            binding: limits.max_storage_buffer_binding_size,
            buffer: limits.max_buffer_size,
            workgroups: limits.max_compute_workgroups_per_dimension,
        };
        let caps = own.lowered(options, &entry.platform.summary())?;
        limits.max_storage_buffer_binding_size = caps.binding;
        limits.max_buffer_size = caps.buffer;
        limits.max_compute_workgroups_per_dimension = caps.workgroups;
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
        // The planner keeps to the caps even where the device got more: WebGPU raises a required
        // limit below its default to the default, so a browser's device never reports the cap.
        platform.limits.max_storage_buffer_binding_size =
            platform.limits.max_storage_buffer_binding_size.min(caps.binding);
        platform.limits.max_buffer_size = platform.limits.max_buffer_size.min(caps.buffer);
        platform.limits.max_compute_workgroups_per_dimension =
            platform.limits.max_compute_workgroups_per_dimension.min(caps.workgroups);
        platform.features = entry.platform.features.clone();
        // WGSL language features belong to the instance, found at enumeration.
        platform.has_packed_dot = entry.platform.has_packed_dot;
        Gpu::on(device, queue, platform, lost, options).await
    }

    /// Runs on a device an engine opened (the one it renders or computes with) instead of
    /// opening one: the platform facts are the device's own features and limits, probed as
    /// [`Gpu::open`] probes them; `options` may lower the limits the planner uses (refused above
    /// the device's) and set `max_memory`, and its adapter selector is ignored. The engine keeps
    /// its device-lost callback (wgpu holds one per device, and the library installs none on a
    /// device it did not create): the engine marks [`Gpu::lost_flag`] from it, and every call
    /// after a loss is then an error that says so (docs/engine.md#a-lost-device).
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
        let own = Caps {
            binding: own.max_storage_buffer_binding_size,
            buffer: own.max_buffer_size,
            workgroups: own.max_compute_workgroups_per_dimension,
        };
        let caps = own.lowered(options, &summary)?;
        let mut limits = platform.limits.clone();
        limits.max_storage_buffer_binding_size = caps.binding;
        limits.max_buffer_size = caps.buffer;
        limits.max_compute_workgroups_per_dimension = caps.workgroups;
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
        let spare_buffer = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let (spare, spare_status) = (spare_buffer("ninfer-wgpu spare"), spare_buffer("ninfer-wgpu spare status"));
        let mut gpu = Gpu {
            spare,
            spare_status,
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
            arrangement: options.arrangement,
            tall_tiles: options.tall_tiles,
        };
        gpu.platform.probes = dispatch::run_probes(&gpu).await?;
        Ok(gpu)
    }
}
