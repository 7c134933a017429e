//! The GGUF reader on arbitrary bytes: open, then every registered tensor validated and
//! decoded by the oracle. Any panic, hang or blow-up is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::gguf::reader::{GgufFile, TensorKind};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = GgufFile::from_bytes(data.to_vec()) else { return };
    for info in &file.tensors {
        if let TensorKind::Registered { .. } = info.kind {
            // Opening checked every registered tensor's bytes lie inside the file.
            let t = file.tensor(&info.name).expect("a registered tensor of an open file resolves");
            if t.validate().is_ok() {
                let _ = ninfer_wgpu::oracle::dequant(&t);
            }
        }
    }
});
