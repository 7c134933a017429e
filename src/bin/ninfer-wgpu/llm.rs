//! The model commands: `tokenize`, `logits`, `perplexity`, `generate` and `verify --forward`
//! (docs/cli.md#models).

use crate::files::Device;
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{Gpu, GpuOptions, Profile};
use ninfer_wgpu::llm::forward::check_run;
use ninfer_wgpu::llm::judge::{self, Agreement};
use ninfer_wgpu::llm::{
    Event, Flow, Forward, ForwardOptions, GpuForward, Keep, ModelConfig, Reference, Request, Sampling, Session,
    Tokenizer,
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
    /// Positions a run may take (`--context`, else the default): the GPU's KV cache, or the
    /// CPU session's.
    fn context(&self) -> usize {
        match self {
            Engine::Gpu(g) => g.context(),
            Engine::Cpu(s) => s.context(),
        }
    }

    /// Tokens run so far.
    fn position(&self) -> usize {
        match self {
            Engine::Gpu(g) => g.position(),
            Engine::Cpu(s) => s.position(),
        }
    }

    fn run(&mut self, tokens: &[u32], keep: Keep) -> Result<Vec<f32>, Error> {
        match self {
            Engine::Gpu(g) => block_on(g.forward(tokens, keep)),
            Engine::Cpu(s) => s.run(tokens, keep),
        }
    }

    /// Teacher-forced logits of every position of `tokens`, handed to `each` a run of
    /// [`LOGITS_RUN`] positions at a time (the first position's index, then the run's logits),
    /// so memory does not grow with the tokens. The whole run is checked against the context
    /// first, so nothing runs where it could not finish.
    fn logits_by_runs(
        &mut self,
        tokens: &[u32],
        mut each: impl FnMut(usize, &[f32]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        check_run(self.config(), tokens, self.position(), self.context())?;
        for (i, run) in tokens.chunks(LOGITS_RUN).enumerate() {
            each(i * LOGITS_RUN, &self.run(run, Keep::All)?)?;
        }
        Ok(())
    }

    fn config(&self) -> &ModelConfig {
        match self {
            Engine::Gpu(g) => g.config(),
            Engine::Cpu(s) => s.config(),
        }
    }
}

/// Positions whose logits `logits`, `perplexity` and `verify --forward` hold at once (gemma3's
/// 262144-token vocabulary: 64 MiB).
const LOGITS_RUN: usize = 64;

/// What an engine is made from; it borrows from here.
struct Loaded {
    file: GgufFile,
    config: ModelConfig,
    reference: Option<Reference>,
    gpu: Option<Gpu>,
}

impl Loaded {
    fn open(model: &Path, on: &On) -> Result<Loaded, Error> {
        let file = GgufFile::open(model)?;
        let config = ModelConfig::from_gguf(&file)?;
        let (reference, gpu) = match on.device {
            Device::Cpu => (Some(Reference::load(&file, &config)?), None),
            Device::Gpu => (None, Some(block_on(Gpu::open(&on.options))?)),
        };
        Ok(Loaded { file, config, reference, gpu })
    }

    fn engine(&self, on: &On) -> Result<Engine<'_>, Error> {
        match (&self.reference, &self.gpu) {
            (Some(r), _) => Ok(Engine::Cpu(r.session_of(on.context)?)),
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

/// Teacher-forced logits of every position of `tokens`, [token][vocab] f32 little-endian,
/// written a run of positions at a time.
pub fn logits(model: &Path, tokens: &Path, on: &On, output: Option<&Path>) -> Result<bool, Error> {
    let ids = read_ids(tokens)?;
    let loaded = Loaded::open(model, on)?;
    let vocab = loaded.config.vocab;
    let mut engine = loaded.engine(on)?;
    match output {
        Some(path) => {
            let io = |e: std::io::Error| Error::Io(format!("{}: {e}", path.display()));
            let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
            engine.logits_by_runs(&ids, |_, l| file.write_all(bytemuck::cast_slice(l)).map_err(io))?;
            file.flush().map_err(io)?;
            eprintln!("{} positions × {vocab} logits written to {}", ids.len(), path.display());
        }
        None => engine.logits_by_runs(&ids, |first, run| {
            for (i, l) in run.chunks_exact(vocab).enumerate() {
                let top = judge::argmax(l);
                println!("{}\t{}\ttop {top}\t{:.4}", first + i, ids[first + i], l[top]);
            }
            Ok(())
        })?,
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
    let vocab = loaded.config.vocab;
    // The logits of each position but the last score the next token; the last runs for nothing.
    let scored = &ids[..ids.len() - 1];
    let mut total = 0.0;
    loaded.engine(on)?.logits_by_runs(scored, |first, run| {
        for (i, l) in run.chunks_exact(vocab).enumerate() {
            total += judge::nll(l, ids[first + i + 1]);
        }
        Ok(())
    })?;
    let ppl = (total / scored.len() as f64).exp();
    if !ppl.is_finite() {
        return Err(Error::Model(format!("the perplexity is {ppl}: a next token has probability 0 under the model")));
    }
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
    if temperature.is_none() {
        return Ok(Sampling::Greedy);
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    });
    let rule = Sampling::checked(temperature, top_k, top_p, seed)?;
    eprintln!("sampling seed {seed}");
    Ok(rule)
}

/// The engine as generation sees it: the GPU's KV cache, or the model's context on the CPU.
struct Generating<'e, 'a> {
    engine: &'e mut Engine<'a>,
    context: usize,
}

impl Forward for Generating<'_, '_> {
    fn context(&self) -> usize {
        self.context
    }

    async fn run(&mut self, tokens: &[u32]) -> Result<Vec<f32>, Error> {
        self.engine.run(tokens, Keep::Last)
    }
}

/// The throughput line on a terminal. Where the text streams to the same terminal the line
/// trails the text, rewritten in place after each token; where the text goes elsewhere it is a
/// line of its own. Off a terminal nothing is drawn.
struct Status {
    /// Standard error is a terminal.
    shown: bool,
    /// And standard output too: the status trails the text.
    inline: bool,
}

impl Status {
    fn new() -> Status {
        use std::io::IsTerminal;
        let shown = std::io::stderr().is_terminal();
        Status { shown, inline: shown && std::io::stdout().is_terminal() }
    }

    /// Before `text` is printed: erase the status after the cursor.
    fn clear(&self) {
        if self.inline {
            eprint!("\x1b[J");
        }
    }

    fn show(&self, line: &str) {
        match (self.shown, self.inline) {
            (false, _) => {}
            // Erase the last status; make sure a line below exists (index down, back up:
            // the screen scrolls now, not while the status wraps), save the cursor, draw
            // dimmed, restore: the next piece overwrites from there.
            (true, true) => eprint!("\x1b[J\x1bD\x1bM\x1b7 \x1b[2m[{line}]\x1b[0m\x1b8"),
            (true, false) => eprint!("\r\x1b[K{line}"),
        }
    }

    fn done(&self) {
        match (self.shown, self.inline) {
            (false, _) => {}
            (true, true) => eprint!("\x1b[J"),
            (true, false) => eprint!("\r\x1b[K"),
        }
    }
}

/// The live line: the first token comes from the prompt's logits, so the rate is over the
/// steps after it.
fn throughput(count: usize, seconds: f64) -> String {
    match count {
        1 => "1 token".into(),
        n => format!("{n} tokens, {:.1} tokens/s", (n - 1) as f64 / seconds.max(1e-9)),
    }
}

/// The process's peak resident memory in bytes (Linux's VmHWM), where the system reports it.
fn peak_host_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Generates text after a prompt, streaming it to standard output (or, with --json, one
/// object at the end), with a throughput line on a terminal.
pub fn generate(model: &Path, on: &On, g: &Generation) -> Result<bool, Error> {
    let clock = Instant::now();
    let now = || clock.elapsed().as_secs_f64();
    let loaded = Loaded::open(model, on)?;
    let tokenizer = Tokenizer::from_gguf(&loaded.file)?;
    let mut engine = loaded.engine(on)?;
    let load_s = now();
    let device_bytes = match &engine {
        Engine::Gpu(f) => Some(f.device_bytes()),
        Engine::Cpu(_) => None,
    };
    let context = engine.context();
    let request = Request { prompt: g.prompt.to_string(), tokens: g.tokens, sampling: g.sampling, chat: g.chat };
    let status = Status::new();
    let mut out = std::io::stdout();
    // Bytes of the text printed as it came; the rest (held back at the end) follows it.
    let mut streamed = 0usize;
    let mut on_event = |event: Event| {
        match event {
            Event::Prompt { tokens, budget } => {
                if budget < g.tokens {
                    eprintln!("the context holds {budget} more tokens after the prompt: generating at most that many");
                }
                status.show(&format!("prompt: {tokens} tokens"));
            }
            Event::Token { text, count, seconds, .. } if !g.json => {
                status.clear();
                print!("{text}");
                streamed += text.len();
                let _ = out.flush();
                status.show(&throughput(count, seconds));
            }
            Event::Token { count, seconds, .. } => status.show(&throughput(count, seconds)),
        }
        Ok(Flow::Go)
    };
    let mut forward = Generating { engine: &mut engine, context };
    let result = block_on(ninfer_wgpu::llm::generate(&mut forward, &tokenizer, &request, &now, &mut on_event));
    status.done();
    let done = result?;
    if g.json {
        crate::json(&serde_json::json!({
            "tokens": done.tokens,
            "text": done.text,
            "prompt_tokens": done.prompt_tokens,
            "prompt_tokens_per_s": done.prompt_tokens_per_s,
            "generation_tokens_per_s": done.generation_tokens_per_s,
            "load_s": load_s,
            "prompt_s": done.prompt_s,
            "generation_s": done.generation_s,
            "context_full": done.context_full,
            "seed": done.seed,
            "peak_host_bytes": peak_host_bytes(),
            "device_bytes": device_bytes,
            "adapter": loaded.adapter(),
        }))?;
    } else {
        println!("{}", &done.text[streamed..]);
        eprintln!(
            "{} prompt tokens at {:.1} tokens/s, {} generated at {:.1} tokens/s, loaded in {load_s:.1} s ({})",
            done.prompt_tokens,
            done.prompt_tokens_per_s,
            done.tokens.len(),
            done.generation_tokens_per_s,
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
    let config = ModelConfig::from_gguf(&file)?;
    let ids = match tokens {
        Some(p) => read_ids(p)?,
        None => Tokenizer::from_gguf(&file)?.encode(VERIFY_TEXT, false)?,
    };
    let gpu = block_on(Gpu::open(&on.options))?;
    let options = ForwardOptions { profile: on.profile, context: on.context, ..Default::default() };
    let mut ours = block_on(GpuForward::load(&gpu, &file, &config, &options))?;
    check_run(&config, &ids, 0, ours.context())?;
    let reference = Reference::load(&file, &config)?;
    let mut session = reference.session_of(ours.context())?;
    // A run of positions at a time: memory does not grow with the tokens.
    let mut tally = judge::Tally::default();
    for run in ids.chunks(LOGITS_RUN) {
        tally.add(&session.run(run, Keep::All)?, &block_on(ours.forward(run, Keep::All))?, config.vocab);
    }
    let a = tally.agreement();
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
