//! The model commands: `tokenize` (the forward pass's commands come with it; issue 36).

use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::Tokenizer;
use ninfer_wgpu::Error;
use std::path::Path;

/// The longest text file `tokenize` reads: 256 MiB.
const MAX_TEXT: u64 = 256 << 20;

/// Encodes a UTF-8 text file with the model's own vocabulary: little-endian i32 ids to `output`,
/// or the ids as decimal numbers on one line of standard output.
pub fn tokenize(model: &Path, text_file: &Path, special: bool, output: Option<&Path>) -> Result<bool, Error> {
    let file = GgufFile::open(model)?;
    let tokenizer = Tokenizer::from_gguf(&file)?;
    let bytes = ninfer_wgpu::files::read_at_most(text_file, MAX_TEXT, "text file")?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::Io(format!(
            "{}: not UTF-8 text (byte {} starts an invalid sequence)",
            text_file.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    let ids = tokenizer.encode(&text, special)?;
    match output {
        Some(path) => {
            let words: Vec<u8> = ids.iter().flat_map(|&id| (id as i32).to_le_bytes()).collect();
            std::fs::write(path, words).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
            eprintln!("{} tokens written to {}", ids.len(), path.display());
        }
        None => println!("{}", ids.iter().map(|id| id.to_string()).collect::<Vec<_>>().join(" ")),
    }
    Ok(true)
}
