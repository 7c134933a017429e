//! The model commands: `tokenize`, `logits`, `perplexity`, `generate` and `verify --forward`
//! (docs/cli.md#models).

use crate::files::Device;
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{Gpu, GpuOptions, Profile};
use ninfer_wgpu::llm::judge::{self, Agreement};
use ninfer_wgpu::llm::{
    ForwardOptions, Gemma3Config, GpuForward, Keep, Reference, Sampler, Sampling, Session, StreamDecoder, Tokenizer,
};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::Error;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// The longest text file the model commands read: 256 MiB.
const MAX_TEXT: u64 = 256 << 20;

fn read_text(path: &Path) -> Result<String, Error> {
    let bytes = ninfer_wgpu::files::read_at_most(path, MAX_TEXT, "text file")?;
    String::from_utf8(bytes).map_err(|e| {
        Error::Io(format!(
            "{}: not UTF-8 text (byte {} starts an invalid sequence)",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Little-endian i32 token ids (what `tokenize -o` writes).
fn read_ids(path: &Path) -> Result<Vec<u32>, Error> {
    let bytes = ninfer_wgpu::files::read_at_most(path, MAX_TEXT, "token file")?;
    if bytes.len() % 4 != 0 {
        return Err(Error::Io(format!("{}: {} bytes is not a whole number of i32 ids", path.display(), bytes.len())));
    }
    if bytes.is_empty() {
        return Err(Error::Model(format!("{}: no token ids", path.display())));
    }
    bytes
        .chunks_exact(4)
        .enumerate()
        .map(|(i, w)| {
            let id = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            u32::try_from(id).map_err(|_| Error::Model(format!("{}: token {i} is negative ({id})", path.display())))
        })
        .collect()
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Encodes a UTF-8 text file with the model's own vocabulary: little-endian i32 ids to `output`,
/// or the ids as decimal numbers on one line of standard output.
pub fn tokenize(model: &Path, text_file: &Path, special: bool, output: Option<&Path>) -> Result<bool, Error> {
    let file = GgufFile::open(model)?;
    let tokenizer = Tokenizer::from_gguf(&file)?;
    let ids = tokenizer.encode(&read_text(text_file)?, special)?;
    match output {
        Some(path) => {
            let words: Vec<u8> = ids.iter().flat_map(|&id| (id as i32).to_le_bytes()).collect();
            write_file(path, &words)?;
            eprintln!("{} tokens written to {}", ids.len(), path.display());
        }
        None => println!("{}", ids.iter().map(|id| id.to_string()).collect::<Vec<_>>().join(" ")),
    }
    Ok(true)
}

/// Where a model runs: the CPU reference forward, or the GPU forward.
pub struct On {
    pub device: Device,
    pub profile: Profile,
    pub options: GpuOptions,
    /// Positions the GPU's KV cache holds (0: the default).
    pub context: usize,
}

/// A loaded model on the CPU or a GPU, run a chunk of tokens at a time.
enum Engine<'a> {
    Cpu(Session<'a>),
    Gpu(Box<GpuForward<'a>>),
}

impl Engine<'_> {
    /// Positions a run may take: the GPU's KV cache, or the model's context on the CPU.
    fn context(&self, config: &Gemma3Config) -> usize {
        match self {
            Engine::Gpu(g) => g.context(),
            Engine::Cpu(_) => config.context_length,
        }
    }

    fn run(&mut self, tokens: &[u32], keep: Keep) -> Result<Vec<f32>, Error> {
        match self {
            Engine::Gpu(g) => block_on(g.forward(tokens, keep)),
            Engine::Cpu(s) => {
                let mut out = Vec::new();
                for (i, &t) in tokens.iter().enumerate() {
                    let logits = s.step(t)?;
                    if keep == Keep::All || i + 1 == tokens.len() {
                        out.extend(logits);
                    }
                }
                Ok(out)
            }
        }
    }
}

/// What an engine is made from; it borrows from here.
struct Loaded {
    file: GgufFile,
    config: Gemma3Config,
    reference: Option<Reference>,
    gpu: Option<Gpu>,
}

impl Loaded {
    fn open(model: &Path, on: &On) -> Result<Loaded, Error> {
        let file = GgufFile::open(model)?;
        let config = Gemma3Config::from_gguf(&file)?;
        let (reference, gpu) = match on.device {
            Device::Cpu => (Some(Reference::load(&file, &config)?), None),
            Device::Gpu => (None, Some(block_on(Gpu::open(&on.options))?)),
        };
        Ok(Loaded { file, config, reference, gpu })
    }

    fn engine(&self, on: &On) -> Result<Engine<'_>, Error> {
        match (&self.reference, &self.gpu) {
            (Some(r), _) => Ok(Engine::Cpu(r.session())),
            (None, Some(gpu)) => {
                let options = ForwardOptions { profile: on.profile, context: on.context, ..Default::default() };
                Ok(Engine::Gpu(Box::new(block_on(GpuForward::load(gpu, &self.file, &self.config, &options))?)))
            }
            (None, None) => Err(Error::Model("no device to run the model on".into())),
        }
    }

    fn adapter(&self) -> String {
        self.gpu.as_ref().map_or("cpu (reference forward)".into(), |g| g.platform().summary())
    }
}

/// Teacher-forced logits of every position of `tokens`, [token][vocab] f32 little-endian.
pub fn logits(model: &Path, tokens: &Path, on: &On, output: Option<&Path>) -> Result<bool, Error> {
    let ids = read_ids(tokens)?;
    let loaded = Loaded::open(model, on)?;
    let logits = loaded.engine(on)?.run(&ids, Keep::All)?;
    match output {
        Some(path) => {
            write_file(path, bytemuck::cast_slice(&logits))?;
            eprintln!("{} positions × {} logits written to {}", ids.len(), loaded.config.vocab, path.display());
        }
        None => {
            for (pos, l) in logits.chunks_exact(loaded.config.vocab).enumerate() {
                let top = judge::argmax(l);
                println!("{pos}\t{}\ttop {top}\t{:.4}", ids[pos], l[top]);
            }
        }
    }
    Ok(true)
}

/// The perplexity of a text under the model (teacher-forced, every position but the first).
pub fn perplexity(model: &Path, text_file: &Path, on: &On, as_json: bool) -> Result<bool, Error> {
    let loaded = Loaded::open(model, on)?;
    let tokenizer = Tokenizer::from_gguf(&loaded.file)?;
    let ids = tokenizer.encode(&read_text(text_file)?, false)?;
    if ids.len() < 2 {
        return Err(Error::Model(format!("{} token(s): perplexity needs at least 2", ids.len())));
    }
    let logits = loaded.engine(on)?.run(&ids, Keep::All)?;
    let ppl = judge::perplexity(&logits, &ids, loaded.config.vocab);
    match as_json {
        true => {
            crate::json(&serde_json::json!({ "perplexity": ppl, "tokens": ids.len(), "adapter": loaded.adapter() }))?
        }
        false => println!("perplexity {ppl:.4} over {} tokens ({})", ids.len(), loaded.adapter()),
    }
    Ok(true)
}

/// What `generate` is asked for.
pub struct Generation<'a> {
    pub prompt: &'a str,
    pub tokens: usize,
    pub sampling: Sampling,
    pub chat: bool,
    pub json: bool,
}

/// The prompt: given on the command line or read from a file.
pub fn prompt_text(prompt: Option<String>, file: Option<&Path>) -> Result<String, Error> {
    match (prompt, file) {
        (Some(p), _) => Ok(p),
        (None, Some(f)) => read_text(f),
        (None, None) => Err(Error::Model("no prompt: give --prompt or --prompt-file".into())),
    }
}

/// Greedy without a temperature; sampled with one (the seed from the clock unless given, and
/// printed so a run can be repeated).
pub fn sampling(temperature: Option<f32>, top_k: usize, top_p: f32, seed: Option<u64>) -> Result<Sampling, Error> {
    let Some(temperature) = temperature else { return Ok(Sampling::Greedy) };
    if !(temperature.is_finite() && temperature >= 0.0 && top_p > 0.0 && top_p <= 1.0) || top_k == 0 {
        return Err(Error::Model(format!(
            "sampling needs a temperature ≥ 0, top-k ≥ 1 and 0 < top-p ≤ 1 (got {temperature}, {top_k}, {top_p})"
        )));
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    });
    eprintln!("sampling seed {seed}");
    Ok(Sampling::Random { temperature, top_k, top_p, seed })
}

/// Generates text after a prompt, streaming it to standard output (or, with --json, one
/// object at the end).
pub fn generate(model: &Path, on: &On, g: &Generation) -> Result<bool, Error> {
    let loaded = Loaded::open(model, on)?;
    let tokenizer = Tokenizer::from_gguf(&loaded.file)?;
    let prompt = match g.chat {
        true => format!("<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n", g.prompt),
        false => g.prompt.to_string(),
    };
    let ids = tokenizer.encode(&prompt, g.chat)?;
    // Generation ends at the end of the text or, in a chat, at the end of the model's turn.
    let stops: Vec<u32> = tokenizer.eos.into_iter().chain(tokenizer.token("<end_of_turn>")).collect();
    let mut engine = loaded.engine(on)?;
    // Generation stops where the context is full (said on stderr), not with an error.
    let room = engine.context(&loaded.config).saturating_sub(ids.len());
    let budget = g.tokens.min(room);
    if budget < g.tokens {
        eprintln!("the context holds {room} more tokens after the prompt: generating at most {budget}");
    }
    let mut sampler = Sampler::new(g.sampling);
    let started = Instant::now();
    let mut logits = engine.run(&ids, Keep::Last)?;
    let prompt_s = started.elapsed().as_secs_f64();
    let mut stream = StreamDecoder::default();
    let (mut generated, mut text) = (Vec::new(), String::new());
    let started = Instant::now();
    let mut out = std::io::stdout();
    while generated.len() < budget {
        let next = sampler.pick(&logits);
        if stops.contains(&next) {
            break;
        }
        generated.push(next);
        let piece = stream.push(&tokenizer, next)?;
        if !g.json {
            print!("{piece}");
            let _ = out.flush();
        }
        text.push_str(&piece);
        if generated.len() == budget {
            break;
        }
        logits = engine.run(&[next], Keep::Last)?;
    }
    let rest = stream.finish();
    text.push_str(&rest);
    let gen_s = started.elapsed().as_secs_f64();
    let prompt_rate = ids.len() as f64 / prompt_s;
    let gen_rate = generated.len() as f64 / gen_s.max(1e-9);
    if g.json {
        crate::json(&serde_json::json!({
            "tokens": generated,
            "text": text,
            "prompt_tokens": ids.len(),
            "prompt_tokens_per_s": prompt_rate,
            "generation_tokens_per_s": gen_rate,
            "adapter": loaded.adapter(),
        }))?;
    } else {
        println!("{rest}");
        eprintln!(
            "{} prompt tokens at {prompt_rate:.1} tokens/s, {} generated at {gen_rate:.1} tokens/s ({})",
            ids.len(),
            generated.len(),
            loaded.adapter()
        );
    }
    Ok(true)
}

/// The default text `verify --forward` judges: 60-odd tokens of plain English.
const VERIFY_TEXT: &str = "The river wound through the valley, past orchards and stone farmhouses, \
until it reached the old mill. Every spring the water rose high enough to turn the wheel again, \
and the children of the village gathered on the bridge to watch it.";

/// The model's logits on this adapter against the CPU reference forward (docs/judging.md).
pub fn verify_forward(model: &Path, tokens: Option<&Path>, on: &On, as_json: bool) -> Result<bool, Error> {
    let file = GgufFile::open(model)?;
    let config = Gemma3Config::from_gguf(&file)?;
    let ids = match tokens {
        Some(p) => read_ids(p)?,
        None => Tokenizer::from_gguf(&file)?.encode(VERIFY_TEXT, false)?,
    };
    let gpu = block_on(Gpu::open(&on.options))?;
    let options = ForwardOptions { profile: on.profile, context: on.context, ..Default::default() };
    let ours = block_on(block_on(GpuForward::load(&gpu, &file, &config, &options))?.forward(&ids, Keep::All))?;
    let reference: Vec<f32> = Reference::load(&file, &config)?.logits(&ids)?.concat();
    let a = judge::agreement(&reference, &ours, config.vocab);
    let limit = judge::forward_limit(on.profile);
    let pass = a.mean_kld <= limit;
    let summary = gpu.platform().summary();
    if as_json {
        crate::json(&serde_json::json!({
            "adapter": summary,
            "profile": on.profile.name(),
            "tokens": ids.len(),
            "agreement": a,
            "mean_kld_limit": limit,
            "pass": pass,
        }))?;
    } else {
        report(&summary, on.profile, &a, limit, pass);
    }
    Ok(pass)
}

fn report(adapter: &str, profile: Profile, a: &Agreement, limit: f64, pass: bool) {
    println!("{adapter}, profile {}: {} positions against the CPU reference forward", profile.name(), a.positions);
    println!(
        "mean KLD {:.3e} (limit {limit:.1e}), max {:.3e}, top-1 agreement {:.1} %",
        a.mean_kld,
        a.max_kld,
        a.top1 * 100.0
    );
    println!("{}", if pass { "PASS" } else { "FAIL" });
}
