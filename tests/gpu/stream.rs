//! A model streamed (`StreamLoad`: the browser's load, bytes pushed as a fetch brings them)
//! computes bit for bit what the same file memory-mapped does, whatever the chunks: each tiny
//! model of every architecture pushed in chunks of 1 to 300 bytes, so chunk edges fall inside
//! the header, inside rows and between tensors (tests/gpu/split.rs streams payloads into several
//! buffers and into row tiles). A stream that ends early, at any
//! byte, is refused naming where; a header past the limit is refused before the rest comes; a
//! non-finite weight is refused with the mapped load's own message.

use super::{open, selectors};
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{Gpu, GpuOptions};
use ninfer_wgpu::llm::ingest::MAX_STREAMED_HEADER;
use ninfer_wgpu::llm::{Architecture, ForwardOptions, GpuForward, Keep, LoadStep, ModelConfig, StreamLoad, Tokenizer};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{test_seed, Rng};
use ninfer_wgpu::Result;

fn seed_bytes(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/fuzz/seeds/model/{name}.gguf", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// `bytes` pushed in chunks of 1 to `max` bytes, then the load finished; the steps it reported.
fn streamed<'g>(
    gpu: &'g Gpu,
    bytes: &[u8],
    options: &ForwardOptions,
    rng: &mut Rng,
    max: u64,
) -> (Result<(GpuForward<'g>, Tokenizer)>, Vec<LoadStep>) {
    let mut steps = Vec::new();
    let mut load = StreamLoad::new(gpu, *options);
    let mut at = 0;
    while at < bytes.len() {
        let n = (1 + rng.below(max) as usize).min(bytes.len() - at);
        if let Err(e) = block_on(load.push(&bytes[at..at + n], &mut |s| steps.push(s))) {
            return (Err(e), steps);
        }
        at += n;
    }
    (block_on(load.finish(&mut |s| steps.push(s))), steps)
}

/// The logits of a short text, every position, from a forward loaded either way.
fn logits(forward: &mut GpuForward<'_>, tokenizer: &Tokenizer) -> Vec<f32> {
    let ids = tokenizer.encode("hello the world, a hello é 東京 the end", false).unwrap();
    block_on(forward.forward(&ids, Keep::All)).unwrap()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_streamed_model_computes_what_the_mapped_file_does_whatever_the_chunks() {
    let seed = test_seed("streamed model").unwrap();
    let mut rng = Rng::new(seed);
    let mut names: Vec<String> = Architecture::ALL.iter().map(|a| format!("tiny-{}", a.name())).collect();
    names.push("tiny-gemma3-gqa".into());
    // Every model on the first adapter; one on each other (uploads differ by arrangement only).
    for (i, selector) in selectors().into_iter().enumerate() {
        {
            let Some(gpu) = open(&selector, GpuOptions::default()) else { continue };
            let options = ForwardOptions { batch: 3, ..Default::default() };
            for name in names.iter().take(if i == 0 { names.len() } else { 1 }) {
                let bytes = seed_bytes(name);
                let file = GgufFile::from_bytes(bytes.clone()).unwrap();
                let config = ModelConfig::from_gguf(&file).unwrap();
                let tokenizer = Tokenizer::from_gguf(&file).unwrap();
                let mut mapped = block_on(GpuForward::load(&gpu, &file, &config, &options)).unwrap();
                let expected = logits(&mut mapped, &tokenizer);
                assert!(expected.iter().all(|x| x.is_finite()), "{name}");
                let (loaded, steps) = streamed(&gpu, &bytes, &options, &mut rng, 300);
                let (mut forward, tokenizer) = loaded.unwrap_or_else(|e| panic!("{selector}, {name}: {e}"));
                let got = logits(&mut forward, &tokenizer);
                assert!(
                    bits(&got) == bits(&expected),
                    "{selector}, {name}: streamed logits differ from the mapped file's (seed {seed})"
                );
                let of = config.tensors().len();
                assert!(steps.contains(&LoadStep::Validated { done: of, of }), "{name}: {steps:?}");
                let uploads = config.blocks + 2;
                assert_eq!(steps.last(), Some(&LoadStep::Uploaded { done: uploads, of: uploads }), "{name}");
            }
        }
    }
}

#[test]
fn a_stream_that_ends_early_is_refused_at_any_byte() {
    let seed = test_seed("truncated stream").unwrap();
    let mut rng = Rng::new(seed);
    let Some(gpu) = selectors().first().and_then(|s| open(s, GpuOptions::default())) else { return };
    let bytes = seed_bytes("tiny-llama");
    let file = GgufFile::from_bytes(bytes.clone()).unwrap();
    let data = file.data_offset as usize;
    let mut cuts = vec![0, 3, 24, data - 1, data, data + 1, bytes.len() - 1];
    cuts.extend((0..12).map(|_| rng.below(bytes.len() as u64) as usize));
    let options = ForwardOptions::default();
    for cut in cuts {
        let (loaded, _) = streamed(&gpu, &bytes[..cut], &options, &mut rng, 4096);
        let e = loaded.err().unwrap_or_else(|| panic!("{cut} of {} bytes loaded (seed {seed})", bytes.len()));
        let e = e.to_string();
        let named = match cut < data {
            true => e.contains("truncated"),
            false => e.contains("truncated") && e.contains("tensor `"),
        };
        assert!(named, "cut at {cut} (data at {data}): {e}");
    }
}

/// A header announcing a 200 MiB metadata string: refused once the bytes held pass the limit,
/// not after the 200 MiB came.
#[test]
fn a_streamed_header_past_the_limit_is_refused_before_the_rest_comes() {
    let Some(gpu) = selectors().first().and_then(|s| open(s, GpuOptions::default())) else { return };
    let mut header = b"GGUF".to_vec();
    header.extend(3u32.to_le_bytes());
    header.extend(0u64.to_le_bytes()); // tensors
    header.extend(1u64.to_le_bytes()); // one key
    header.extend(1u64.to_le_bytes());
    header.push(b'x');
    header.extend(8u32.to_le_bytes()); // a string
    header.extend((200u64 << 20).to_le_bytes());
    let mut load = StreamLoad::new(&gpu, ForwardOptions::default());
    block_on(load.push(&header, &mut |_| ())).unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let mut pushed = header.len();
    let e = loop {
        match block_on(load.push(&chunk, &mut |_| ())) {
            Ok(()) => pushed += chunk.len(),
            Err(e) => break e.to_string(),
        }
        assert!(pushed <= MAX_STREAMED_HEADER + (2 << 20), "{pushed} bytes held");
    };
    assert!(e.contains("header") && e.contains(&MAX_STREAMED_HEADER.to_string()), "{e}");
}

/// The hostile seeds (a NaN norm gain, an infinite token table weight) refused as the mapped
/// load refuses them, word for word.
#[test]
fn a_streamed_non_finite_weight_is_refused_as_the_mapped_load_refuses_it() {
    let seed = test_seed("hostile stream").unwrap();
    let mut rng = Rng::new(seed);
    let Some(gpu) = selectors().first().and_then(|s| open(s, GpuOptions::default())) else { return };
    for name in ["hostile-nan-norm", "hostile-inf-embd"] {
        let bytes = seed_bytes(name);
        let file = GgufFile::from_bytes(bytes.clone()).unwrap();
        let config = ModelConfig::from_gguf(&file).unwrap();
        let options = ForwardOptions::default();
        let mapped = block_on(GpuForward::load(&gpu, &file, &config, &options)).err().unwrap().to_string();
        assert!(mapped.contains("must be finite"), "{name}: {mapped}");
        let (loaded, _) = streamed(&gpu, &bytes, &options, &mut rng, 300);
        assert_eq!(loaded.err().map(|e| e.to_string()), Some(mapped), "{name} (seed {seed})");
    }
}
