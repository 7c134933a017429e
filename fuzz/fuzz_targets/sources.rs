//! The float-tensor readers `quantize` uses (.npy and safetensors) on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::container::sources::{parse_npy, parse_safetensors, FloatTensor};

/// A tensor that parsed holds exactly its shape's element count, as floats or as integers
/// (never both, and an integer tensor refuses the float view rather than returning nothing).
fn check(t: &FloatTensor) {
    let count = t.shape.iter().product::<usize>();
    match (t.to_f32(), t.is_float()) {
        (Ok(v), true) => assert_eq!(v.len(), count),
        (Err(_), false) => {
            // int64 values outside int32 are an error; otherwise every element converts.
            if let Ok(v) = t.to_i32() {
                assert_eq!(v.len(), count);
            }
        }
        (Ok(_), false) | (Err(_), true) => panic!("{}: to_f32 and is_float disagree", t.name),
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = parse_npy(data, "fuzz") {
        check(&t);
    }
    if let Ok(ts) = parse_safetensors(data) {
        ts.iter().for_each(check);
    }
});
