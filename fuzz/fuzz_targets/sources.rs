//! The float-tensor readers `quantize` uses (.npy and safetensors) on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::container::sources::{parse_npy, parse_safetensors};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = parse_npy(data, "fuzz") {
        assert_eq!(t.to_f32().len(), t.shape.iter().product::<usize>());
    }
    if let Ok(ts) = parse_safetensors(data) {
        for t in ts {
            assert_eq!(t.to_f32().len(), t.shape.iter().product::<usize>());
        }
    }
});
