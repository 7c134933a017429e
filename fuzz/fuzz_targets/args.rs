//! The command line's value grammars (src/args.rs) on arbitrary text: an answer or an error,
//! and an accepted shape or row list means what it says.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::args::{parse_formats, parse_ops, parse_row_list, parse_shape};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok((n, k)) = parse_shape(text) {
        assert!(n > 0 && k > 0);
        let _ = ninfer_wgpu::bench::check_shape(n, k);
    }
    if let Ok(rows) = parse_row_list(text) {
        assert_eq!(rows.len(), text.split(',').count());
    }
    let list: Vec<String> = text.split(',').map(str::to_string).collect();
    if let Ok(f) = parse_formats(&list) {
        assert_eq!(f.len(), list.len());
    }
    let _ = parse_ops(&list);
    let e = parse_shape(text).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.len() < 1000, "a short error");
});
