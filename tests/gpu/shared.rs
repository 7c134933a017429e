//! A device an engine opened: `Gpu::from_device` runs the suite on it with the same facts as
//! `Gpu::open`, and leaves the engine's device-lost callback in place.

use super::{ci, selectors};
use ninfer_wgpu::conformance::{self, Tier};
use ninfer_wgpu::gpu::{self, Gpu, GpuOptions, Platform, SharedDevice};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::{testgen, Format};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The engine's side: its own instance, adapter and device, requested as an engine would (the
/// adapter's limits, subgroups and f16 where offered, as `Gpu::open` asks), with its own
/// device-lost callback.
pub(super) fn engine_device(selector: &str) -> Option<(wgpu::Instance, wgpu::Adapter, wgpu::Device, wgpu::Queue)> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::all();
    let instance = wgpu::Instance::new(desc);
    let language = instance.wgsl_language_features();
    let adapter = block_on(instance.enumerate_adapters(wgpu::Backends::all())).into_iter().find(|a| {
        let p = Platform::from_adapter(&a.get_info(), a.features(), &a.limits(), language.clone());
        gpu::selector_matches(selector, &p)
    })?;
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("an engine's device"),
        required_features: adapter.features() & (wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16),
        required_limits: adapter.limits(),
        experimental_features: wgpu::ExperimentalFeatures::disabled(),
        memory_hints: wgpu::MemoryHints::Performance,
        trace: wgpu::Trace::Off,
    }))
    .ok()?;
    Some((instance, adapter, device, queue))
}

#[test]
fn a_shared_device_runs_the_suite_and_keeps_the_engines_lost_callback() {
    let Some(selector) = selectors().into_iter().next() else {
        assert!(!ci(), "CI=true but no GPU adapter was found");
        return;
    };
    let Some((instance, adapter, device, queue)) = engine_device(&selector) else {
        assert!(!ci(), "CI=true but adapter `{selector}` gave no device");
        return;
    };
    let engine_saw_loss = Arc::new(AtomicBool::new(false));
    let flag = engine_saw_loss.clone();
    device.set_device_lost_callback(move |_, _| flag.store(true, Ordering::SeqCst));

    let shared = SharedDevice { instance: &instance, adapter: &adapter, device: device.clone(), queue };
    let gpu = block_on(Gpu::from_device(shared, &GpuOptions::default())).unwrap();
    // The same facts as the device the library opens itself: identity, features, limits, probes.
    let own = block_on(Gpu::open(&GpuOptions { adapter: Some(selector.clone()), ..Default::default() })).unwrap();
    assert_eq!(gpu.platform(), own.platform(), "from_device's facts differ from open's");
    drop(own);

    let formats = [Format::Bf16, Format::Q4G64Fp16, Format::GgufQ4K];
    let seed = testgen::test_seed("shared device").expect("seed");
    let planned = conformance::plan(&formats, gpu.platform(), Tier::Fast);
    let results = block_on(conformance::run(&gpu, &planned, seed, |_| {}));
    let report = conformance::Report::new(gpu.platform(), seed, &formats, &planned, results.clone());
    assert!(report.planned > 0 && report.shortfall().is_empty(), "{}", report.shortfall().join("; "));
    let failed: Vec<_> = results.iter().filter(|r| r.verdict == conformance::Verdict::Fail).collect();
    assert!(failed.is_empty(), "seed {seed}: {} failed on the shared device: {:?}", failed.len(), failed[0]);

    // The engine's callback is still the one wgpu calls.
    device.destroy();
    let _ = device.poll(wgpu::PollType::wait_indefinitely());
    assert!(engine_saw_loss.load(Ordering::SeqCst), "the engine's device-lost callback was replaced");
}

#[test]
fn a_shared_device_refuses_limits_above_its_own() {
    let Some(selector) = selectors().into_iter().next() else { return };
    let Some((instance, adapter, device, queue)) = engine_device(&selector) else { return };
    let own = device.limits().max_storage_buffer_binding_size;
    let shared = SharedDevice { instance: &instance, adapter: &adapter, device, queue };
    let options = GpuOptions { max_binding: Some(own + 4), ..Default::default() };
    let err =
        block_on(Gpu::from_device(shared, &options)).err().expect("a binding limit above the device's is refused");
    assert!(err.to_string().contains(&(own + 4).to_string()) && err.to_string().contains(&own.to_string()), "{err}");
}
