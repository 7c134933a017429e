//! A device an engine owns, lost: with the engine's device-lost callback marking the library's
//! flag (`Gpu::lost_flag`), every public call after the loss is an error that says the device
//! was lost, on every adapter: no panic in wgpu's uncaptured-error handler, no `Ok` on a dead
//! device.

use super::shared::engine_device;
use super::{ci, selectors};
use ninfer_wgpu::gpu::{DeviceSlice, Gpu, GpuOptions, Profile, SharedDevice, Variant};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{self, random_words, Rng, Words};
use ninfer_wgpu::{EncodedTensor, Format, Result};

#[track_caller]
fn says_lost<T>(what: &str, result: Result<T>) {
    match result {
        Ok(_) => panic!("{what}: Ok on a lost device"),
        Err(e) => assert!(e.to_string().contains("device was lost"), "{what}: {e}"),
    }
}

#[test]
fn every_call_on_a_lost_engine_device_is_an_error_that_says_so() {
    let selectors = selectors();
    assert!(!selectors.is_empty() || !ci(), "CI=true but no GPU adapter was found");
    let seed = testgen::test_seed("lost engine device").expect("seed");
    for selector in selectors {
        let Some((instance, adapter, device, queue)) = engine_device(&selector) else {
            assert!(!ci(), "CI=true but adapter `{selector}` gave no device");
            continue;
        };
        let shared = SharedDevice { instance: &instance, adapter: &adapter, device: device.clone(), queue };
        let gpu = block_on(Gpu::from_device(shared, &GpuOptions::default())).unwrap();
        let flag = gpu.lost_flag();
        device.set_device_lost_callback(move |_, _| flag.mark());

        // Everything a step uses, made while the device lives.
        let mut rng = Rng::new(seed);
        let (format, shape) = (Format::GgufQ4_0, [8, 64]);
        let logical = random_words(format, &shape, 1, &mut rng, Words::Finite).unwrap();
        let tensor = EncodedTensor::encode(&logical, format.layout()).unwrap();
        let valid = tensor.validate().unwrap();
        let w = block_on(gpu.upload(&valid)).unwrap();
        let x = block_on(gpu.create_buffer(64, "x")).unwrap();
        let y = block_on(gpu.create_buffer(8, "y")).unwrap();
        let ids = block_on(gpu.create_buffer_with(&[0u32, 3], "ids")).unwrap();
        let rows = block_on(gpu.create_buffer(2 * 64, "rows")).unwrap();
        let (xs, ys) = (DeviceSlice::<f32>::new(&x, 0, 64), DeviceSlice::<f32>::new(&y, 0, 8));
        let product = block_on(gpu.bind_matmul(&w, Profile::A32, xs, ys, 1)).unwrap();
        let gather =
            block_on(gpu.bind_gather(&w, DeviceSlice::new(&ids, 0, 2), DeviceSlice::new(&rows, 0, 64), 2)).unwrap();
        let staging = device.create_buffer(&ninfer_wgpu::wgpu::BufferDescriptor {
            label: Some("the engine's read-back"),
            size: 32,
            usage: ninfer_wgpu::wgpu::BufferUsages::MAP_READ | ninfer_wgpu::wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });

        device.destroy();
        // Uploads first: before anything polls, the loss is not yet known to anyone.
        says_lost("upload", block_on(gpu.upload(&valid)));
        says_lost("create_buffer", block_on(gpu.create_buffer(8, "after")));
        says_lost("create_buffer_with", block_on(gpu.create_buffer_with(&[1.0f32; 8], "after")));
        says_lost("write", gpu.write(&x, 0, &[1.0f32; 64]));
        says_lost("bind_matmul", block_on(gpu.bind_matmul(&w, Profile::A32, xs, ys, 1)));
        says_lost(
            "bind_gather",
            block_on(gpu.bind_gather(&w, DeviceSlice::new(&ids, 0, 2), DeviceSlice::new(&rows, 0, 64), 2)),
        );
        says_lost("bind_dequant", block_on(gpu.bind_dequant(&w, DeviceSlice::new(&rows, 0, 64))));
        let mut encoder = device.create_command_encoder(&Default::default());
        says_lost("record", product.encode(&mut encoder, 1));
        says_lost("submit", block_on(gpu.submit(encoder)));
        says_lost("read", block_on(gpu.read(ys, 1)));
        says_lost("read_back", block_on(gpu.read_back(&y, 0, 32)));
        says_lost("read_mapped", block_on(gpu.read_mapped(&staging, 32)));
        says_lost("read_status", block_on(gather.read_status(&gpu)));
        says_lost("clear_status", gather.clear_status(&gpu));
        says_lost("dequant", block_on(gpu.dequant(&w)));
        says_lost("matmul", block_on(gpu.matmul(&w, &[0.5; 64], 1)));
        says_lost("product", block_on(gpu.product(&w, &[0.5; 64], 1, Profile::A32.op(), Variant::Workgroup)));
        says_lost("gather", block_on(gpu.gather(&w, &[1])));
        says_lost("wait", gpu.wait());
        eprintln!("{selector}: every call after the loss said so");
    }
}
