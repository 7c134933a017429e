//! A model file's configuration and tokenizer on arbitrary bytes: the GGUF opened, the gemma3
//! configuration read and its weights checked finite, the vocabulary read, then, where both read, text from the input's tail
//! encoded (plain and with special tokens parsed) and decoded back, a token at a time too. Any
//! panic, hang or blow-up is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::{Gemma3Config, StreamDecoder, Tokenizer};

fuzz_target!(|data: &[u8]| {
    // The last 64 bytes double as the text, so a mutation reaches the encoder without
    // breaking the file's structure.
    let text = String::from_utf8_lossy(&data[data.len().saturating_sub(64)..]).into_owned();
    let Ok(file) = GgufFile::from_bytes(data.to_vec()) else { return };
    if let Ok(config) = Gemma3Config::from_gguf(&file) {
        let _ = ninfer_wgpu::llm::weights::check_model(&file, &config);
    }
    let Ok(tokenizer) = Tokenizer::from_gguf(&file) else { return };
    for special in [false, true] {
        let Ok(ids) = tokenizer.encode(&text, special) else { continue };
        assert!(ids.iter().all(|&id| (id as usize) < tokenizer.vocab_size()), "an id past the vocabulary");
        let _ = tokenizer.decode(&ids);
        let mut stream = StreamDecoder::default();
        for &id in &ids {
            let _ = stream.push(&tokenizer, id);
        }
        let _ = stream.finish();
    }
});
