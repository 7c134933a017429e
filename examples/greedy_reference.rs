//! Greedy continuation of a prompt by the CPU reference forward (the model-level oracle):
//! `cargo run --release --example greedy_reference -- MODEL.gguf "PROMPT" [N]`. Slow by design:
//! every token costs every weight once, in f64.
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::llm::{ModelConfig, Reference, StreamDecoder, Tokenizer};

fn main() -> Result<(), ninfer_wgpu::Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, prompt, rest @ ..] = args.as_slice() else {
        return Err(ninfer_wgpu::Error::Unsupported("usage: greedy_reference MODEL.gguf PROMPT [N]".into()));
    };
    let n: usize = rest.first().and_then(|s| s.parse().ok()).unwrap_or(8);
    let file = GgufFile::open(model)?;
    let config = ModelConfig::from_gguf(&file)?;
    let tokenizer = Tokenizer::from_gguf(&file)?;
    let reference = Reference::load(&file, &config)?;
    let mut tokens = tokenizer.encode(prompt, false)?;
    let mut stream = StreamDecoder::default();
    print!("{prompt}");
    for _ in 0..n {
        let logits = reference.logits(&tokens)?;
        let last = logits.last().map_or(&[][..], |v| v.as_slice());
        let next = (0..last.len()).max_by(|&a, &b| last[a].total_cmp(&last[b])).unwrap_or(0) as u32;
        tokens.push(next);
        print!("{}", stream.push(&tokenizer, next)?);
        use std::io::Write;
        std::io::stdout().flush().ok();
    }
    println!("{}", stream.finish());
    Ok(())
}
