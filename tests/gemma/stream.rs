//! The real models streamed (`StreamLoad`, as the browser loads them: a q8_0 token table made
//! q8_g32_fp16 a piece of rows at a time, quantized products stacked from parts held until
//! complete) compute bit for bit what the memory-mapped file does, on the first adapter, in
//! chunks of up to 64 KiB (a fetch's) and in one push. And a table block q8_g32_fp16 cannot hold: the mapped
//! load keeps the table as stored, the streamed one refuses it, saying why.

use super::forward::{open, selectors};
use super::model;
use super::smollm::smollm2;
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::Gpu;
use ninfer_wgpu::llm::{ForwardOptions, GpuForward, Keep, ModelConfig, StreamLoad, Tokenizer};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::{test_seed, Rng};
use ninfer_wgpu::Result;

/// `bytes` pushed in chunks of up to `max` bytes (0: all in one push).
fn streamed<'g>(gpu: &'g Gpu, bytes: &[u8], rng: &mut Rng, max: u64) -> Result<(GpuForward<'g>, Tokenizer)> {
    let mut load = StreamLoad::new(gpu, ForwardOptions::default());
    let mut at = 0;
    while at < bytes.len() {
        let n = match max {
            0 => bytes.len(),
            max => 1 + rng.below(max) as usize,
        }
        .min(bytes.len() - at);
        block_on(load.push(&bytes[at..at + n], &mut |_| ()))?;
        at += n;
    }
    block_on(load.finish(&mut |_| ()))
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_real_models_streamed_compute_what_their_mapped_files_do() {
    let seed = test_seed("streamed real models").unwrap();
    let mut rng = Rng::new(seed);
    let Some(gpu) = selectors().first().and_then(|s| open(s)) else { return };
    for path in [smollm2(), model()].into_iter().flatten() {
        let bytes = std::fs::read(&path).unwrap();
        let file = GgufFile::from_bytes(bytes.clone()).unwrap();
        let config = ModelConfig::from_gguf(&file).unwrap();
        let tokenizer = Tokenizer::from_gguf(&file).unwrap();
        let ids = tokenizer.encode("The capital of France is Paris, and", false).unwrap();
        let mut mapped = block_on(GpuForward::load(&gpu, &file, &config, &ForwardOptions::default())).unwrap();
        let expected = block_on(mapped.forward(&ids, Keep::All)).unwrap();
        drop(mapped);
        assert!(expected.iter().all(|x| x.is_finite()), "{}", path.display());
        // A fetch's chunks, and the whole file in one push (read where it lies).
        for max in [64 << 10, 0] {
            let (mut forward, _) = streamed(&gpu, &bytes, &mut rng, max).unwrap();
            let got = block_on(forward.forward(&ids, Keep::All)).unwrap();
            assert!(bits(&got) == bits(&expected), "{}, chunks of {max}: logits differ (seed {seed})", path.display());
        }
        eprintln!("{}: streamed = mapped over {} positions", path.display(), ids.len());
    }
}

#[test]
fn a_table_block_q8_g32_cannot_hold_is_kept_as_stored_mapped_and_refused_streamed() {
    let seed = test_seed("q8 table stream").unwrap();
    let mut rng = Rng::new(seed);
    let Some(path) = smollm2() else { return };
    let Some(gpu) = selectors().first().and_then(|s| open(s)) else { return };
    let mut bytes = std::fs::read(&path).unwrap();
    let file = GgufFile::from_bytes(bytes.clone()).unwrap();
    let table = file.info("token_embd.weight").unwrap();
    assert_eq!(table.ggml_type, 8, "SmolLM2's table is q8_0");
    // Block 1000's first code byte: -128 (ggml allows it; q8_g32_fp16 does not).
    let at = (file.data_offset + table.offset) as usize + 1000 * 34 + 2;
    bytes[at] = 0x80;
    let file = GgufFile::from_bytes(bytes.clone()).unwrap();
    let config = ModelConfig::from_gguf(&file).unwrap();
    let mapped = block_on(GpuForward::load(&gpu, &file, &config, &ForwardOptions::default()));
    assert!(mapped.is_ok(), "mapped: {:?}", mapped.err());
    drop(mapped);
    let e = streamed(&gpu, &bytes, &mut rng, 64 << 10).err().expect("the streamed load refuses").to_string();
    assert!(e.contains("token_embd.weight") && e.contains("-128") && e.contains("whole file"), "{e}");
}
