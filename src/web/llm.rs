//! The browser's text generation: `NinferLlm.load(bytes, options)` uploads a model's GGUF once
//! (any architecture `llm::arch` lists; the file's bytes are dropped after the upload; the
//! tokenizer keeps its vocabulary), or `NinferLlm.stream(options)` takes its bytes as they come
//! (`llm::StreamLoad`: never the whole file in wasm memory), and
//! `generate(prompt, options, onToken)` runs the same loop
//! as the CLI's `generate` (the library's `llm::generate`), calling `onToken` as each token
//! comes and resolving to the CLI's `--json` fields of the generation (the process's and
//! device's are in `info()`).

use super::{byte_limit, from_js, now_seconds, reject, to_js, NinferGpu};
use crate::error::Error;
use crate::gpu::{Gpu, GpuOptions, Profile};
use crate::llm::{self, Event, Flow, ForwardOptions, GpuForward, LoadStep, Request, Sampling, StreamLoad, Tokenizer};
use js_sys::{Function, Promise};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** NinferLlm.load's and stream's options. `onProgress` is called after each tensor is checked
 *  and put on the device (`validate`: types, shapes, every weight finite), then as the work is
 *  bound (`upload`: the token table, each block, the head), `done` of `of`. */
export interface LlmLoadOptions {
  profile?: "a32" | "a8"; context?: number;
  /** `NinferLlm.load` only: the adapter's limits lowered (bytes), to try a smaller device. */
  maxBufferSize?: number; maxBinding?: number;
  onProgress?: (phase: "validate" | "upload", done: number, of: number) => void;
}
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
  /** `abort()` ended it: `tokens` are those that came before. */
  stopped: boolean;
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
    /// The adapter's limits lowered, in bytes (`load` only: it opens its own device), to see
    /// whether a model fits a smaller device.
    #[serde(rename = "maxBufferSize")]
    max_buffer_size: Option<f64>,
    #[serde(rename = "maxBinding")]
    max_binding: Option<f64>,
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
    /// Set by `abort()`, cleared as a generation starts; read at each token.
    abort: Rc<Cell<bool>>,
}

fn options_of<T: for<'de> Deserialize<'de> + Default>(value: &JsValue, what: &str) -> Result<T, JsValue> {
    match value.is_undefined() || value.is_null() {
        true => Ok(T::default()),
        false => from_js(value, what),
    }
}

/// `load`'s options, and its `onProgress` (a function: not part of the JSON the rest is read from).
fn load_options(value: &JsValue) -> Result<(LoadOptions, Option<Function>), JsValue> {
    let options = options_of(value, "load options")?;
    let on_progress = match value.is_object() {
        true => js_sys::Reflect::get(value, &"onProgress".into())?,
        false => JsValue::UNDEFINED,
    };
    match on_progress.is_undefined() {
        true => Ok((options, None)),
        false => match on_progress.dyn_into::<Function>() {
            Ok(f) => Ok((options, Some(f))),
            Err(_) => Err(reject(Error::Unsupported("load options: onProgress is not a function".into()))),
        },
    }
}

/// `onProgress` as the library's load reports: a throwing one is the page's bug, and the load
/// goes on (its error is on the console).
fn reporter(on_progress: &Option<Function>) -> impl FnMut(LoadStep) + '_ {
    move |step: LoadStep| {
        let (phase, done, of) = match step {
            LoadStep::Validated { done, of } => ("validate", done, of),
            LoadStep::Uploaded { done, of } => ("upload", done, of),
        };
        if let Some(f) = on_progress {
            if let Err(e) = f.call3(&JsValue::NULL, &phase.into(), &(done as f64).into(), &(of as f64).into()) {
                super::console_error(&format!("onProgress threw: {e:?}"));
            }
        }
    }
}

fn forward_options(options: &LoadOptions) -> Result<ForwardOptions, JsValue> {
    let profile = match options.profile.as_deref() {
        None => Profile::A32,
        Some(name) => Profile::parse(name)
            .ok_or_else(|| reject(Error::Unsupported(format!("unknown profile `{name}`; valid: a32, a8"))))?,
    };
    Ok(ForwardOptions { profile, context: options.context.unwrap_or(0), ..Default::default() })
}

/// The loaded model, its facts and what the load cost.
fn loaded(gpu: &Gpu, forward: GpuForward<'static>, tokenizer: Tokenizer, started: f64) -> NinferLlm {
    let c = forward.config();
    let loaded = Loaded {
        adapter: gpu.platform().summary(),
        profile: forward.profile().name().into(),
        context: forward.context(),
        vocab: c.vocab,
        blocks: c.blocks,
        load_s: now_seconds() - started,
        device_bytes: forward.device_bytes(),
    };
    let state = Rc::new(RefCell::new(Some(State { forward, tokenizer })));
    NinferLlm { loaded, state, abort: Rc::new(Cell::new(false)) }
}

/// The browser's adapter, with the limits the options lower.
async fn open_for(options: &LoadOptions) -> Result<Rc<Gpu>, JsValue> {
    let limits = GpuOptions {
        max_buffer_size: byte_limit(options.max_buffer_size, "maxBufferSize")?,
        max_binding: byte_limit(options.max_binding, "maxBinding")?,
        ..Default::default()
    };
    Ok(Rc::new(Gpu::open(&limits).await.map_err(reject)?))
}

/// The whole file in one push: the streamed load's own path.
async fn load_on(
    gpu: Rc<Gpu>,
    bytes: Vec<u8>,
    options: LoadOptions,
    on_progress: Option<Function>,
) -> Result<NinferLlm, JsValue> {
    let started = now_seconds();
    let mut load = StreamLoad::shared(gpu.clone(), forward_options(&options)?);
    let mut on_step = reporter(&on_progress);
    load.push(&bytes, &mut on_step).await.map_err(reject)?;
    // The file's bytes go here: the weights are on the device, the vocabulary in the tokenizer.
    drop(bytes);
    let (forward, tokenizer) = load.finish(&mut on_step).await.map_err(reject)?;
    Ok(loaded(&gpu, forward, tokenizer, started))
}

/// A model's GGUF loaded from its bytes as they come — a fetch's body, a `File`'s stream —
/// never holding the whole file in wasm memory: `push` each chunk in order (awaiting each),
/// then `finish`. Made by `NinferLlm.stream` or `NinferGpu.streamLlm`.
#[wasm_bindgen]
pub struct NinferLlmStream {
    gpu: Rc<Gpu>,
    /// Taken out while a push runs; `None` for good after a failure or `finish`.
    load: Rc<RefCell<Option<StreamLoad<'static>>>>,
    on_progress: Rc<Option<Function>>,
    started: f64,
}

fn stream_on(gpu: Rc<Gpu>, options: &LoadOptions, on_progress: Option<Function>) -> Result<NinferLlmStream, JsValue> {
    let load = StreamLoad::shared(gpu.clone(), forward_options(options)?);
    Ok(NinferLlmStream {
        gpu,
        load: Rc::new(RefCell::new(Some(load))),
        on_progress: Rc::new(on_progress),
        started: now_seconds(),
    })
}

fn stream_gone() -> JsValue {
    JsError::new(
        "this streamed load is pushing, has failed or has finished: await each push, and stream again after a failure",
    )
    .into()
}

#[wasm_bindgen]
impl NinferLlmStream {
    /// The file's next bytes, in order: resolves once every tensor they complete is checked
    /// and on the device. Refused while another push runs, and after a failure.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn push(&self, chunk: Vec<u8>) -> Promise {
        let Some(mut load) = self.load.borrow_mut().take() else {
            return Promise::reject(&stream_gone());
        };
        let (slot, on_progress) = (self.load.clone(), self.on_progress.clone());
        future_to_promise(async move {
            load.push(&chunk, &mut reporter(&on_progress)).await.map_err(reject)?;
            *slot.borrow_mut() = Some(load);
            Ok(JsValue::UNDEFINED)
        })
    }

    /// After the last chunk: resolves to the model, or rejects naming what the stream lacks
    /// (a file cut short names the tensor it cut).
    #[wasm_bindgen(unchecked_return_type = "Promise<NinferLlm>")]
    pub fn finish(&self) -> Promise {
        let Some(load) = self.load.borrow_mut().take() else {
            return Promise::reject(&stream_gone());
        };
        let (gpu, on_progress, started) = (self.gpu.clone(), self.on_progress.clone(), self.started);
        future_to_promise(async move {
            let (forward, tokenizer) = load.finish(&mut reporter(&on_progress)).await.map_err(reject)?;
            Ok(loaded(&gpu, forward, tokenizer, started).into())
        })
    }
}

#[wasm_bindgen]
impl NinferLlm {
    /// Opens the browser's WebGPU adapter and loads a model's GGUF (llama, qwen2, qwen3, gemma,
    /// gemma2, gemma3) onto it. `options`: `{ profile?: "a32" | "a8", context?: number }`.
    /// Resolves to a `NinferLlm`.
    #[wasm_bindgen(unchecked_return_type = "Promise<NinferLlm>")]
    pub fn load(bytes: Vec<u8>, #[wasm_bindgen(unchecked_param_type = "LlmLoadOptions")] options: JsValue) -> Promise {
        future_to_promise(async move {
            let (options, on_progress) = load_options(&options)?;
            let gpu = open_for(&options).await?;
            Ok(load_on(gpu, bytes, options, on_progress).await?.into())
        })
    }

    /// Opens the browser's WebGPU adapter (as `load`) for a model whose bytes will come as a
    /// stream: resolves to a `NinferLlmStream` to `push` them into.
    #[wasm_bindgen(unchecked_return_type = "Promise<NinferLlmStream>")]
    pub fn stream(#[wasm_bindgen(unchecked_param_type = "LlmLoadOptions")] options: JsValue) -> Promise {
        future_to_promise(async move {
            let (options, on_progress) = load_options(&options)?;
            let gpu = open_for(&options).await?;
            Ok(stream_on(gpu, &options, on_progress)?.into())
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
        // Checked and taken before the promise's future starts, so an `abort()` right after this
        // call belongs to this generation and is not cleared by it.
        let request = match request_of(prompt, &options) {
            Ok(request) => request,
            Err(e) => return Promise::reject(&e),
        };
        let Some(mut taken) = self.state.borrow_mut().take() else {
            return Promise::reject(&busy());
        };
        self.abort.set(false);
        let (state, abort) = (self.state.clone(), self.abort.clone());
        future_to_promise(async move {
            let done = run(&mut taken, &request, on_token.as_ref(), &abort).await;
            *state.borrow_mut() = Some(taken);
            to_js(&done.map_err(reject)?)
        })
    }

    /// Ends the running generation after the token being made (before the next forward step):
    /// its promise resolves with the tokens so far and `stopped: true`. Nothing happens when
    /// none runs.
    pub fn abort(&self) {
        self.abort.set(true);
    }
}

/// The request `generate`'s prompt and options make.
fn request_of(prompt: String, options: &JsValue) -> Result<Request, JsValue> {
    let o: GenerateOptions = options_of(options, "generate options")?;
    let seed = match o.seed {
        None => crate::testgen::Rng::seed_from_time() >> 11,
        // Exactly representable, so the seed the result reports repeats the run.
        Some(s) if s >= 0.0 && s.fract() == 0.0 && s < 9007199254740992.0 => s as u64,
        Some(s) => return Err(reject(Error::Model(format!("seed {s} is not an integer in 0..2^53")))),
    };
    let sampling =
        Sampling::checked(o.temperature, o.top_k.unwrap_or(40), o.top_p.unwrap_or(0.95), seed).map_err(reject)?;
    Ok(Request { prompt, tokens: o.max_tokens.unwrap_or(64), sampling, chat: o.chat.unwrap_or(false) })
}

/// One generation from an empty cache, `on_token` called per token, stopped where `abort` is set.
async fn run(
    state: &mut State,
    request: &Request,
    on_token: Option<&Function>,
    abort: &Cell<bool>,
) -> crate::Result<llm::Generated> {
    let State { forward, tokenizer } = state;
    forward.reset();
    let mut on_event = |event: Event| {
        let call = call_on_token(event, on_token);
        // Read after onToken: an abort() it makes stops at once.
        call.map(|()| match abort.get() {
            true => Flow::Stop,
            false => Flow::Go,
        })
    };
    llm::generate(forward, tokenizer, request, &now_seconds, &mut on_event).await
}

fn call_on_token(event: Event, on_token: Option<&Function>) -> crate::Result<()> {
    match (event, on_token) {
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
    }
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
            let (options, on_progress) = load_options(&options)?;
            if options.max_buffer_size.is_some() || options.max_binding.is_some() {
                return Err(reject(Error::Unsupported(
                    "loadLlm runs on this NinferGpu's device: lower its limits in NinferGpu.open".into(),
                )));
            }
            Ok(load_on(gpu, bytes, options, on_progress).await?.into())
        })
    }

    /// [`NinferLlm::stream`] on this GPU.
    #[wasm_bindgen(js_name = streamLlm)]
    pub fn stream_llm(
        &self,
        #[wasm_bindgen(unchecked_param_type = "LlmLoadOptions")] options: JsValue,
    ) -> Result<NinferLlmStream, JsValue> {
        let (options, on_progress) = load_options(&options)?;
        if options.max_buffer_size.is_some() || options.max_binding.is_some() {
            return Err(reject(Error::Unsupported(
                "streamLlm runs on this NinferGpu's device: lower its limits in NinferGpu.open".into(),
            )));
        }
        stream_on(self.gpu.clone(), &options, on_progress)
    }
}
