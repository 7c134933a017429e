//! The .ninfer reader on arbitrary bytes: the first 4 bytes (LE) split the input into the
//! entry and one continuation part, served for whatever name the entry lists. Every object,
//! binding and use the artifact holds is then resolved and validated.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::container::{Artifact, ObjectKind};

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<4>() else { return };
    let split = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (entry, part) = rest.split_at(split);
    let Ok(a) = Artifact::from_bytes("fuzz.ninfer", entry.to_vec(), |_| Ok(part.to_vec())) else { return };
    for o in a.objects() {
        match o.kind {
            ObjectKind::Tensor { .. } => {
                if let Ok(t) = a.tensor(&o.id) {
                    let _ = t.validate();
                }
            }
            ObjectKind::Resource { .. } => {
                let _ = a.resource(&o.id);
            }
        }
    }
    for name in a.root().bindings.keys() {
        if let Ok(pieces) = a.binding(name) {
            for t in &pieces {
                let _ = t.validate();
            }
        }
    }
    let _ = a.root().metadata.as_ref().map(|m| m.member("name"));
});
