//! Generating text after a prompt, the same loop for the CLI (CPU or GPU) and the browser: the
//! prompt as the model sees it, the stop tokens, sampling, streaming the text as whole UTF-8
//! characters, and the timings a user compares stacks by.

use super::sample::{Sampler, Sampling};
use super::tokenizer::{StreamDecoder, Tokenizer};
use super::Keep;
use crate::error::{Error, Result};
use serde::Serialize;

/// Something that runs tokens from its current position and returns the logits of the last.
pub trait Forward {
    /// Positions a run may take in all.
    fn context(&self) -> usize;
    /// Runs `tokens` after those already seen; the last one's logits. (No `Send` bound: the
    /// browser's futures are not.)
    fn run(&mut self, tokens: &[u32]) -> impl std::future::Future<Output = Result<Vec<f32>>>;
}

impl Forward for super::GpuForward<'_> {
    fn context(&self) -> usize {
        super::GpuForward::context(self)
    }

    async fn run(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        self.forward(tokens, Keep::Last).await
    }
}

/// What is asked for.
#[derive(Debug, Clone)]
pub struct Request {
    pub prompt: String,
    /// The most tokens generated (fewer when the context fills or a stop token comes).
    pub tokens: usize,
    pub sampling: Sampling,
    /// Wrap the prompt in gemma's chat turn markers.
    pub chat: bool,
}

/// What a run produced, with its timings (seconds, from the caller's clock).
#[derive(Debug, Clone, Serialize)]
pub struct Generated {
    pub tokens: Vec<u32>,
    pub text: String,
    pub prompt_tokens: usize,
    pub prompt_s: f64,
    pub generation_s: f64,
    pub prompt_tokens_per_s: f64,
    /// Forward steps a second after the prompt: the first token comes from the prompt's
    /// logits, so n tokens took n - 1 steps (0 for fewer than 2 tokens), as llama.cpp's
    /// `llama-bench` counts one step a token.
    pub generation_tokens_per_s: f64,
    /// Generation stopped because the context was full.
    pub context_full: bool,
    /// The sampling seed (absent when greedy), so a run can be repeated.
    pub seed: Option<u64>,
}

/// What a run reports as it goes.
pub enum Event<'a> {
    /// Before the prompt runs: its tokens, and how many may follow (fewer than asked where the
    /// context fills first).
    Prompt { tokens: usize, budget: usize },
    /// A generated token: its id, the text it completes (possibly empty: part of a character),
    /// and how many tokens and seconds generation has taken so far.
    Token { id: u32, text: &'a str, count: usize, seconds: f64 },
}

/// The prompt's token ids: the chat template when asked (its turn markers parsed as tokens).
pub fn prompt_ids(tokenizer: &Tokenizer, prompt: &str, chat: bool) -> Result<Vec<u32>> {
    match chat {
        true => tokenizer.encode(&format!("<start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n"), true),
        false => tokenizer.encode(prompt, false),
    }
}

/// Generates after `request.prompt`, calling `on_event` before the prompt runs and for every
/// token as it comes (its error stops the run); the text's last bytes, held back while they
/// could still be part of a character, are only in the result. `now` is the caller's clock in
/// seconds (the browser has no `Instant`). Generation ends at the end of the text or of the
/// model's turn, at `request.tokens`, or where the context is full (then `context_full`), never
/// with an error for that.
pub async fn generate(
    forward: &mut impl Forward,
    tokenizer: &Tokenizer,
    request: &Request,
    now: &dyn Fn() -> f64,
    on_event: &mut dyn FnMut(Event) -> Result<()>,
) -> Result<Generated> {
    let ids = prompt_ids(tokenizer, &request.prompt, request.chat)?;
    if ids.is_empty() {
        return Err(Error::Model("the prompt encodes to no tokens (this vocabulary adds no BOS)".into()));
    }
    let stops: Vec<u32> = tokenizer.eos.into_iter().chain(tokenizer.token("<end_of_turn>")).collect();
    // The last token is picked, never run: n tokens need n - 1 positions after the prompt.
    let room = (forward.context() + 1).saturating_sub(ids.len());
    let budget = request.tokens.min(room);
    on_event(Event::Prompt { tokens: ids.len(), budget })?;
    let mut sampler = Sampler::new(request.sampling);
    let started = now();
    let mut logits = forward.run(&ids).await?;
    let prompt_s = now() - started;
    let mut stream = StreamDecoder::default();
    let (mut tokens, mut text) = (Vec::new(), String::new());
    let started = now();
    while tokens.len() < budget {
        let next = sampler.pick(&logits);
        if stops.contains(&next) {
            break;
        }
        tokens.push(next);
        let piece = stream.push(tokenizer, next)?;
        on_event(Event::Token { id: next, text: &piece, count: tokens.len(), seconds: now() - started })?;
        text.push_str(&piece);
        if tokens.len() == budget {
            break;
        }
        logits = forward.run(&[next]).await?;
    }
    text.push_str(&stream.finish());
    let generation_s = now() - started;
    Ok(Generated {
        prompt_tokens: ids.len(),
        prompt_tokens_per_s: ids.len() as f64 / prompt_s.max(1e-9),
        generation_tokens_per_s: tokens.len().saturating_sub(1) as f64 / generation_s.max(1e-9),
        context_full: budget < request.tokens && tokens.len() == budget,
        seed: match request.sampling {
            Sampling::Random { seed, .. } => Some(seed),
            Sampling::Greedy => None,
        },
        tokens,
        text,
        prompt_s,
        generation_s,
    })
}
