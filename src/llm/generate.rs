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
    /// The caller's handler answered [`Flow::Stop`] (the browser's `abort()`): `tokens` are
    /// those that came before it.
    pub stopped: bool,
}

/// What the caller's handler answers to each event: go on, or stop after this event (before
/// the next forward step), keeping what came so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Go,
    Stop,
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

/// The prompt's token ids: with `chat`, the file's chat template around it ([`super::chat::ChatTemplate`],
/// its turn markers parsed as tokens). A vocabulary without the template's markers as tokens of
/// their own is refused for chat: they would be encoded as plain text, a prompt the model was
/// never trained on.
pub fn prompt_ids(tokenizer: &Tokenizer, prompt: &str, chat: bool) -> Result<Vec<u32>> {
    match chat {
        true => {
            let template = tokenizer.chat_template()?;
            if let Some(missing) = template.markers().iter().find(|m| tokenizer.token(m).is_none()) {
                return Err(Error::Model(format!(
                    "chat: this vocabulary has no `{missing}` token, which its chat template ({template:?}) needs"
                )));
            }
            tokenizer.encode(&template.apply(None, prompt), true)
        }
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
    on_event: &mut dyn FnMut(Event) -> Result<Flow>,
) -> Result<Generated> {
    let ids = prompt_ids(tokenizer, &request.prompt, request.chat)?;
    if ids.is_empty() {
        return Err(Error::Model("the prompt encodes to no tokens (this vocabulary adds no BOS)".into()));
    }
    // The end of text, and the end of the model's turn where the file's template has one.
    let turn_end = tokenizer.chat_template().ok().and_then(|t| t.end_of_turn()).and_then(|m| tokenizer.token(m));
    let stops: Vec<u32> = tokenizer.eos.into_iter().chain(turn_end).collect();
    // The last token is picked, never run: n tokens need n - 1 positions after the prompt.
    let room = (forward.context() + 1).saturating_sub(ids.len());
    let budget = request.tokens.min(room);
    let mut stopped = on_event(Event::Prompt { tokens: ids.len(), budget })? == Flow::Stop;
    let mut sampler = Sampler::new(request.sampling);
    let started = now();
    // Stopped before the prompt ran: nothing runs.
    let prompt_ran = !stopped;
    let mut logits = match stopped {
        true => Vec::new(),
        false => forward.run(&ids).await?,
    };
    let prompt_s = now() - started;
    let mut stream = StreamDecoder::default();
    let (mut tokens, mut text) = (Vec::new(), String::new());
    let started = now();
    while !stopped && tokens.len() < budget {
        let next = sampler.pick(&logits);
        if stops.contains(&next) {
            break;
        }
        tokens.push(next);
        let piece = stream.push(tokenizer, next)?;
        stopped = on_event(Event::Token { id: next, text: &piece, count: tokens.len(), seconds: now() - started })?
            == Flow::Stop;
        text.push_str(&piece);
        if stopped || tokens.len() == budget {
            break;
        }
        logits = forward.run(&[next]).await?;
    }
    text.push_str(&stream.finish());
    let generation_s = now() - started;
    // A stop on the budget's last token cut nothing short.
    let stopped = stopped && tokens.len() < budget;
    Ok(Generated {
        prompt_tokens: ids.len(),
        prompt_tokens_per_s: match prompt_ran {
            true => ids.len() as f64 / prompt_s.max(1e-9),
            false => 0.0,
        },
        generation_tokens_per_s: tokens.len().saturating_sub(1) as f64 / generation_s.max(1e-9),
        // Full even where a stop came on the last token that fit: nothing was cut short.
        context_full: budget < request.tokens && tokens.len() == budget,
        seed: match request.sampling {
            Sampling::Random { seed, .. } => Some(seed),
            Sampling::Greedy => None,
        },
        tokens,
        text,
        prompt_s,
        generation_s,
        stopped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::reader::{Array, Value};
    use crate::llm::testing::Table;
    use std::cell::Cell;

    /// Pieces "<unk>", "<bos>" (1), "<eos>" (2), "a", "b", "c"; no space prefix.
    fn tokenizer(add_bos: bool) -> Tokenizer {
        Tokenizer::from_source(&table(add_bos)).unwrap()
    }

    fn table(add_bos: bool) -> Table {
        let pieces = ["<unk>", "<bos>", "<eos>", "a", "b", "c"];
        let types = [2, 3, 3, 1, 1, 1];
        let mut t = Table::default();
        t.put("tokenizer.ggml.model", Value::String("llama".into()))
            .put("tokenizer.ggml.tokens", Value::Array(Array::String(pieces.iter().map(|p| p.to_string()).collect())))
            .put("tokenizer.ggml.scores", Value::Array(Array::F32(vec![0.0; 6])))
            .put("tokenizer.ggml.token_type", Value::Array(Array::I32(types.to_vec())))
            .put("tokenizer.ggml.bos_token_id", Value::U32(1))
            .put("tokenizer.ggml.eos_token_id", Value::U32(2))
            .put("tokenizer.ggml.add_bos_token", Value::Bool(add_bos))
            .put("tokenizer.ggml.add_space_prefix", Value::Bool(false));
        t
    }

    /// Logits that pick `next[i]` after the i-th run; refuses to run past its context.
    struct Scripted {
        context: usize,
        position: usize,
        next: Vec<u32>,
        runs: usize,
    }

    impl Forward for Scripted {
        fn context(&self) -> usize {
            self.context
        }

        async fn run(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
            self.position += tokens.len();
            assert!(self.position <= self.context, "ran past the context: {}", self.position);
            let mut logits = vec![0.0f32; 6];
            logits[self.next[self.runs] as usize] = 1.0;
            self.runs += 1;
            Ok(logits)
        }
    }

    fn run(forward: &mut Scripted, tokenizer: &Tokenizer, prompt: &str, tokens: usize) -> Result<Generated> {
        let clock = Cell::new(0.0);
        // Every reading of the clock is a second later.
        let now = || {
            clock.set(clock.get() + 1.0);
            clock.get()
        };
        let request = Request { prompt: prompt.into(), tokens, sampling: Sampling::Greedy, chat: false };
        crate::native::block_on(generate(forward, tokenizer, &request, &now, &mut |_| Ok(Flow::Go)))
    }

    #[test]
    fn the_last_token_is_picked_not_run_so_one_more_fits() {
        // Prompt <bos> a b: 3 positions of 5; three tokens fit (the last is never run).
        let mut f = Scripted { context: 5, position: 0, next: vec![3, 4, 5, 3], runs: 0 };
        let g = run(&mut f, &tokenizer(true), "ab", 10).unwrap();
        assert_eq!((g.tokens, g.text.as_str(), g.context_full, f.position), (vec![3, 4, 5], "abc", true, 5));
        assert_eq!(g.prompt_tokens, 3);
        // Asked for fewer than fit: not full.
        let mut f = Scripted { context: 5, position: 0, next: vec![3, 4, 5, 3], runs: 0 };
        assert!(!run(&mut f, &tokenizer(true), "ab", 2).unwrap().context_full);
    }

    /// A handler that answers Stop at the n-th token.
    fn stop_at(n: usize) -> impl FnMut(Event) -> Result<Flow> {
        let mut seen = 0;
        move |e| {
            if let Event::Token { .. } = e {
                seen += 1;
            }
            Ok(if seen == n { Flow::Stop } else { Flow::Go })
        }
    }

    #[test]
    fn a_handler_that_stops_keeps_the_tokens_so_far_and_runs_no_further_step() {
        let tok = tokenizer(true);
        let request = Request { prompt: "a".into(), tokens: 10, sampling: Sampling::Greedy, chat: false };
        let now = || 0.0;
        // Stop at the second token: two tokens, the prompt's run and one step.
        let mut f = Scripted { context: 64, position: 0, next: vec![3, 4, 5, 3], runs: 0 };
        let mut stop_at_two = stop_at(2);
        let g = crate::native::block_on(generate(&mut f, &tok, &request, &now, &mut stop_at_two)).unwrap();
        assert_eq!((g.tokens, g.text.as_str(), g.stopped, g.context_full, f.runs), (vec![3, 4], "ab", true, false, 2));
        // Stopped at the prompt's event: nothing runs.
        let mut f = Scripted { context: 64, position: 0, next: vec![3], runs: 0 };
        let g = crate::native::block_on(generate(&mut f, &tok, &request, &now, &mut |_| Ok(Flow::Stop))).unwrap();
        assert_eq!((g.tokens.len(), g.stopped, f.runs, g.prompt_tokens_per_s), (0, true, 0, 0.0));
        // A stop on the last token asked for cut nothing short: not marked.
        let two = Request { tokens: 2, ..request.clone() };
        let mut f = Scripted { context: 64, position: 0, next: vec![3, 4, 5], runs: 0 };
        let mut stop_at_two = stop_at(2);
        let g = crate::native::block_on(generate(&mut f, &tok, &two, &now, &mut stop_at_two)).unwrap();
        assert_eq!((g.tokens.len(), g.stopped), (2, false));
        // Never stopped: not marked.
        let mut f = Scripted { context: 64, position: 0, next: vec![3, 2], runs: 0 };
        assert!(!run(&mut f, &tok, "a", 10).unwrap().stopped);
    }

    #[test]
    fn a_stop_token_ends_and_one_token_has_no_step_rate() {
        let mut f = Scripted { context: 64, position: 0, next: vec![5, 2], runs: 0 };
        let g = run(&mut f, &tokenizer(true), "a", 10).unwrap();
        assert_eq!((g.tokens, g.context_full), (vec![5], false));
        assert_eq!(g.generation_tokens_per_s, 0.0, "one token took no step after the prompt");
        // Three tokens are two steps.
        let mut f = Scripted { context: 64, position: 0, next: vec![3, 3, 3, 3], runs: 0 };
        let g = run(&mut f, &tokenizer(true), "a", 3).unwrap();
        assert_eq!(g.generation_tokens_per_s, 2.0 / g.generation_s);
    }

    #[test]
    fn chat_on_a_vocabulary_without_turn_markers_is_refused() {
        let err = prompt_ids(&tokenizer(true), "ab", true).expect_err("refused").to_string();
        assert!(err.contains("no chat template"), "{err}");
        // A gemma template over a vocabulary without gemma's markers.
        let mut t = table(true);
        t.put("tokenizer.chat_template", Value::String("{{ '<start_of_turn>' + role }}".into()));
        let err = prompt_ids(&Tokenizer::from_source(&t).unwrap(), "ab", true).expect_err("refused").to_string();
        assert!(err.contains("no `<start_of_turn>` token"), "{err}");
        assert_eq!(prompt_ids(&tokenizer(true), "ab", false).unwrap(), [1, 3, 4]);
    }

    #[test]
    fn a_prompt_of_no_tokens_is_refused() {
        let mut f = Scripted { context: 64, position: 0, next: vec![3], runs: 0 };
        let err = run(&mut f, &tokenizer(false), "", 4).expect_err("refused").to_string();
        assert!(err.contains("no tokens"), "{err}");
    }
}
