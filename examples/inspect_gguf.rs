//! Lists a GGUF file's tensors: name, format, shape, bytes, and whether the registry knows them.
//! Run: cargo run --example inspect_gguf -- MODEL.gguf

use ninfer_wgpu::gguf::reader::{GgufFile, TensorKind};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: inspect_gguf FILE.gguf");
        std::process::exit(2);
    };
    let file = match GgufFile::open(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "{path}: GGUF v{}, {} metadata keys, {} tensors, alignment {}",
        file.version,
        file.metadata.len(),
        file.tensors.len(),
        file.alignment
    );
    println!("{:<40} {:<22} {:<18} {:>12}  registry", "tensor", "format", "shape [N, K]", "bytes");
    for t in &file.tensors {
        let bytes = t.bytes.map(|b| b.to_string()).unwrap_or_else(|| "?".into());
        match &t.kind {
            TensorKind::Registered { format, .. } => {
                let shape = t.shape();
                println!("{:<40} {:<22} {:<18} {:>12}  registered", t.name, format.name(), format!("{shape:?}"), bytes)
            }
            TensorKind::NotRegistered { type_name } => println!(
                "{:<40} {:<22} {:<18} {:>12}  format not registered (ggml type {})",
                t.name,
                type_name,
                format!("{:?}", t.dims),
                bytes,
                t.ggml_type
            ),
        }
    }
}
