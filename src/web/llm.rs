//! The browser's text generation: `NinferLlm.load(bytes, options)` uploads a model's GGUF once
//! (any architecture `llm::arch` lists; the file's bytes are dropped after the upload; the
//! tokenizer keeps its vocabulary), and `generate(prompt, options, onToken)` runs the same loop
//! as the CLI's `generate` (the library's `llm::generate`), calling `onToken` as each token
//! comes and resolving to the CLI's `--json` fields of the generation (the process's and
//! device's are in `info()`).

use super::{from_js, now_seconds, reject, to_js, NinferGpu};
use crate::error::Error;
use crate::gguf::reader::GgufFile;
use crate::gpu::{Gpu, GpuOptions, Profile};
use crate::llm::{self, Event, ForwardOptions, GpuForward, ModelConfig, Request, Sampling, Tokenizer};
use js_sys::{Function, Promise};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** NinferLlm.load's options. */
export interface LlmLoadOptions { profile?: "a32" | "a8"; context?: number; }
/** NinferLlm.generate's options: greedy unless a temperature is given. */
export interface LlmGenerateOptions {
  maxTokens?: number; temperature?: number; topK?: number; topP?: number; seed?: number; chat?: boolean;
}
/** Called as each token comes: the text it completes (may be empty), its id, the count so far
 *  and the seconds since generation began. */
export type LlmOnToken = (text: string, id: number, count: number, seconds: number) => void;
/** The loaded model and what loading it cost. */
export interface LlmInfo {
  adapter: string; profile: string; context: number; vocab: number; blocks: number;
  load_s: number; device_bytes: number;
}
/** A generation: the CLI's `generate --json` fields of the generation itself. */
export interface LlmGenerated {
  tokens: number[]; text: string; prompt_tokens: number; prompt_s: number; generation_s: number;
  prompt_tokens_per_s: number; generation_tokens_per_s: number; context_full: boolean;
  seed: number | null;
}
"#;

/// What `load` may be told (every field optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadOptions {
    /// "a32" (exact weights, f32 activation; the default) or "a8".
    profile: Option<String>,
    /// Positions the KV cache holds (default: the model's context, at most 4096).
    context: Option<usize>,
}

/// What `generate` may be told (every field optional; greedy unless a temperature is given).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GenerateOptions {
    max_tokens: Option<usize>,
    temperature: Option<f32>,
    top_k: Option<usize>,
    top_p: Option<f32>,
    seed: Option<f64>,
    chat: Option<bool>,
}

/// The model's facts and the load's cost, for the page.
#[derive(Serialize)]
struct Loaded {
    adapter: String,
    profile: String,
    context: usize,
    vocab: usize,
    blocks: usize,
    load_s: f64,
    device_bytes: u64,
}

struct State {
    forward: GpuForward<'static>,
    tokenizer: Tokenizer,
}

/// A language model on the browser's GPU.
#[wasm_bindgen]
pub struct NinferLlm {
    loaded: Loaded,
    /// Taken out while a generation runs (no borrow is held across its awaits), so a second
    /// call meanwhile is refused instead of panicking.
    state: Rc<RefCell<Option<State>>>,
}

fn options_of<T: for<'de> Deserialize<'de> + Default>(value: &JsValue, what: &str) -> Result<T, JsValue> {
    match value.is_undefined() || value.is_null() {
        true => Ok(T::default()),
        false => from_js(value, what),
    }
}

async fn load_on(gpu: Rc<Gpu>, bytes: Vec<u8>, options: LoadOptions) -> Result<NinferLlm, JsValue> {
    let started = now_seconds();
    let profile = match options.profile.as_deref() {
        None => Profile::A32,
        Some(name) => Profile::parse(name)
            .ok_or_else(|| reject(Error::Unsupported(format!("unknown profile `{name}`; valid: a32, a8"))))?,
    };
    let file = GgufFile::from_bytes(bytes).map_err(reject)?;
    let config = ModelConfig::from_gguf(&file).map_err(reject)?;
    let tokenizer = Tokenizer::from_gguf(&file).map_err(reject)?;
    let adapter = gpu.platform().summary();
    let forward_options = ForwardOptions { profile, context: options.context.unwrap_or(0), ..Default::default() };
    let forward = GpuForward::load_shared(gpu, &file, &config, &forward_options).await.map_err(reject)?;
    // The file's bytes go here: the weights are on the device, the vocabulary in the tokenizer.
    drop(file);
    let loaded = Loaded {
        adapter,
        profile: profile.name().into(),
        context: forward.context(),
        vocab: config.vocab,
        blocks: config.blocks,
        load_s: now_seconds() - started,
        device_bytes: forward.device_bytes(),
    };
    Ok(NinferLlm { loaded, state: Rc::new(RefCell::new(Some(State { forward, tokenizer }))) })
}

#[wasm_bindgen]
impl NinferLlm {
    /// Opens the browser's WebGPU adapter and loads a model's GGUF (llama, qwen2, qwen3, gemma,
    /// gemma2, gemma3) onto it. `options`: `{ profile?: "a32" | "a8", context?: number }`.
    /// Resolves to a `NinferLlm`.
    #[wasm_bindgen(unchecked_return_type = "Promise<NinferLlm>")]
    pub fn load(bytes: Vec<u8>, #[wasm_bindgen(unchecked_param_type = "LlmLoadOptions")] options: JsValue) -> Promise {
        future_to_promise(async move {
            let options: LoadOptions = options_of(&options, "load options")?;
            let gpu = Gpu::open(&GpuOptions::default()).await.map_err(reject)?;
            Ok(load_on(Rc::new(gpu), bytes, options).await?.into())
        })
    }

    /// The adapter, profile, context, vocabulary, blocks, load time (`load_s`) and device bytes.
    #[wasm_bindgen(unchecked_return_type = "LlmInfo")]
    pub fn info(&self) -> Result<JsValue, JsValue> {
        to_js(&self.loaded)
    }

    /// Generates after `prompt` from an empty cache. `options`: `{ maxTokens?: number (default
    /// 64), temperature?, topK? (default 40), topP? (default 0.95), seed?, chat?: boolean }`;
    /// greedy without a temperature. `onToken(text, id, count, seconds)` is called as each token
    /// comes (`text` may be empty: part of a character; the text's held-back last bytes are only
    /// in the result). Resolves to the CLI's `generate --json` fields of the generation (with
    /// `seed`, so a sampled run repeats); one generation at a time.
    #[wasm_bindgen(unchecked_return_type = "Promise<LlmGenerated>")]
    pub fn generate(
        &self,
        prompt: String,
        #[wasm_bindgen(unchecked_param_type = "LlmGenerateOptions")] options: JsValue,
        #[wasm_bindgen(unchecked_param_type = "LlmOnToken")] on_token: Option<Function>,
    ) -> Promise {
        let state = self.state.clone();
        future_to_promise(async move {
            let o: GenerateOptions = options_of(&options, "generate options")?;
            let seed = match o.seed {
                None => crate::testgen::Rng::seed_from_time() >> 11,
                // Exactly representable, so the seed the result reports repeats the run.
                Some(s) if s >= 0.0 && s.fract() == 0.0 && s < 9007199254740992.0 => s as u64,
                Some(s) => return Err(reject(Error::Model(format!("seed {s} is not an integer in 0..2^53")))),
            };
            let sampling = Sampling::checked(o.temperature, o.top_k.unwrap_or(40), o.top_p.unwrap_or(0.95), seed)
                .map_err(reject)?;
            let request =
                Request { prompt, tokens: o.max_tokens.unwrap_or(64), sampling, chat: o.chat.unwrap_or(false) };
            let mut taken = state.borrow_mut().take().ok_or_else(busy)?;
            let done = run(&mut taken, &request, on_token.as_ref()).await;
            *state.borrow_mut() = Some(taken);
            to_js(&done.map_err(reject)?)
        })
    }
}

/// One generation from an empty cache, `on_token` called per token.
async fn run(state: &mut State, request: &Request, on_token: Option<&Function>) -> crate::Result<llm::Generated> {
    let State { forward, tokenizer } = state;
    forward.reset();
    let mut on_event = |event: Event| match (event, on_token) {
        (Event::Token { id, text, count, seconds }, Some(f)) => f
            .call4(&JsValue::NULL, &text.into(), &id.into(), &(count as f64).into(), &seconds.into())
            .map(|_| ())
            .map_err(|e| {
                let message = match e.dyn_ref::<js_sys::Error>() {
                    Some(error) => String::from(error.message()),
                    None => e.as_string().unwrap_or_else(|| "a value that is not an Error".into()),
                };
                Error::Io(format!("onToken threw: {message}"))
            }),
        _ => Ok(()),
    };
    llm::generate(forward, tokenizer, request, &now_seconds, &mut on_event).await
}

fn busy() -> JsValue {
    JsError::new("a generation is running on this model; wait for it to finish").into()
}

#[wasm_bindgen]
impl NinferGpu {
    /// [`NinferLlm::load`] on this GPU (the page's own device, no second one).
    #[wasm_bindgen(js_name = loadLlm, unchecked_return_type = "Promise<NinferLlm>")]
    pub fn load_llm(
        &self,
        bytes: Vec<u8>,
        #[wasm_bindgen(unchecked_param_type = "LlmLoadOptions")] options: JsValue,
    ) -> Promise {
        let gpu = self.gpu.clone();
        future_to_promise(async move {
            let options: LoadOptions = options_of(&options, "load options")?;
            Ok(load_on(gpu, bytes, options).await?.into())
        })
    }
}
