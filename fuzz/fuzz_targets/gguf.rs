//! The GGUF reader on arbitrary bytes: open, then every registered tensor validated and
//! decoded by the oracle; and the streamed load's header parser on a prefix the first byte
//! picks, and on the whole input, where it must agree with the file's parse. Any panic, hang or
//! blow-up is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::gguf::reader::{GgufFile, GgufHeader, TensorKind};

fuzz_target!(|data: &[u8]| {
    let cut = data.first().map_or(0, |&b| data.len() * b as usize / 255);
    let _ = GgufHeader::parse_prefix(&data[..cut]);
    let header = GgufHeader::parse_prefix(data);
    let Ok(file) = GgufFile::from_bytes(data.to_vec()) else { return };
    match header {
        Ok(Some(h)) => assert!(h.tensors == file.tensors && h.data_offset == file.data_offset, "the headers differ"),
        _ => panic!("the file parses but its header does not"),
    }
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
