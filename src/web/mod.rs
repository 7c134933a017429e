//! The browser API: this crate compiled to wasm32 with the `web` feature, through
//! `wasm-bindgen` (`web/build.sh` writes the package and its `.d.ts`). Every call that touches
//! the GPU returns a Promise; errors reject it with the same message the CLI prints, and a
//! panic is reported (console, `globalThis.ninferLastPanic`) before the instance traps.
//!
//! Results that are reports (platform, tensors, conformance, verify) are the same serde types
//! as the CLI's `--json`, handed over as plain JavaScript objects.

use crate::conformance::{self, Report, TensorOutcome, Tier, VerifyReport};
use crate::error::Error;
use crate::format::{Category, Format};
use crate::gpu::{capability, Gpu, GpuOptions, Profile, MAX_HOST_COLUMNS};
use crate::model::Model;
use crate::testgen::Rng;
use js_sys::{Float32Array, Int32Array, Promise, Uint8Array};
use serde::Serialize;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

mod engine;
mod llm;
pub use engine::{NinferBuffer, NinferOp, NinferStep, NinferTensor};
pub use llm::{NinferLlm, NinferLlmStream};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = console, js_name = error)]
    fn console_error(message: &str);
}

/// Runs when the module is instantiated: panics are reported, not only trapped.
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        let message = format!("ninfer-wgpu panicked (a bug; please report it): {info}");
        console_error(&message);
        let _ = js_sys::Reflect::set(&js_sys::global(), &"ninferLastPanic".into(), &message.into());
    }));
}

fn reject(e: Error) -> JsValue {
    JsError::new(&e.to_string()).into()
}

/// A serde value as a plain JavaScript object (through JSON, so the shape is exactly the
/// CLI's `--json`).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    let text = serde_json::to_string(value).map_err(|e| reject(Error::Io(e.to_string())))?;
    js_sys::JSON::parse(&text)
}

fn from_js<T: serde::de::DeserializeOwned>(value: &JsValue, what: &str) -> Result<T, JsValue> {
    let text: String = js_sys::JSON::stringify(value)?.into();
    serde_json::from_str(&text).map_err(|e| reject(Error::Io(format!("not {what}: {e}"))))
}

/// The given seed, or a fresh one below 2^53 so that it survives a JavaScript number (and the
/// report's JSON) exactly and replays with `--seed`.
fn seed_or_fresh(seed: Option<f64>) -> u64 {
    seed.map(|s| s as u64).unwrap_or_else(|| Rng::seed_from_time() >> 11)
}

/// A lowered device limit given in bytes from JavaScript: a whole number from 4 to 2^53, or
/// refused by name (a negative or fractional number is not quietly made into some limit).
fn byte_limit(value: Option<f64>, name: &str) -> Result<Option<u64>, JsValue> {
    match value {
        None => Ok(None),
        Some(b) if b.fract() == 0.0 && (4.0..9007199254740992.0).contains(&b) => Ok(Some(b as u64)),
        Some(b) => Err(reject(Error::Unsupported(format!("{name} {b} is not a whole number of bytes from 4 to 2^53")))),
    }
}

fn now_seconds() -> f64 {
    js_sys::Date::now() / 1000.0
}

/// A GPU opened on the browser's WebGPU adapter.
#[wasm_bindgen]
pub struct NinferGpu {
    gpu: Rc<Gpu>,
}

/// A `.gguf` or `.ninfer` file handed over as bytes.
#[wasm_bindgen]
pub struct NinferModel {
    model: Rc<Model>,
}

#[wasm_bindgen]
impl NinferModel {
    /// Parses a GGUF file, or a `.ninfer` entry named `name` whose continuation parts are in
    /// `parts` (a Map from file name to Uint8Array). Nothing is uploaded yet.
    pub fn load(name: &str, bytes: Vec<u8>, parts: Option<js_sys::Map>) -> Result<NinferModel, JsValue> {
        let model = Model::from_bytes(name, bytes, |part| {
            let value = parts.as_ref().map(|m| m.get(&JsValue::from_str(part))).filter(|v| !v.is_undefined());
            match value {
                // A checked cast: `new Uint8Array(v)` on another kind of value would throw
                // through the wasm frames instead of returning an error.
                Some(v) => v
                    .dyn_into::<Uint8Array>()
                    .map(|bytes| bytes.to_vec())
                    .map_err(|_| Error::Io(format!("part {part} of {name} is not a Uint8Array"))),
                None => Err(Error::Io(format!("{name} continues in {part}, which was not given"))),
            }
        })
        .map_err(reject)?;
        Ok(NinferModel { model: Rc::new(model) })
    }

    /// The tensor names, in file order.
    pub fn names(&self) -> Vec<String> {
        self.model.tensor_names()
    }

    /// Every tensor with format, shape, bytes and its capability status per op without a
    /// device's rules (see [`NinferGpu::tensors`]), each payload validated.
    pub fn tensors(&self) -> Result<JsValue, JsValue> {
        to_js(&self.model.tensor_infos(None))
    }
}

/// Options for [`NinferGpu::open`]: lower limits than the adapter's own, to try a smaller device.
#[wasm_bindgen]
#[derive(Default, Clone, Copy)]
pub struct OpenOptions {
    /// Bytes; tensors larger than one buffer are split.
    pub max_buffer_size: Option<f64>,
    /// Bytes; kernels then run in windowed passes.
    pub max_binding: Option<f64>,
}

#[wasm_bindgen]
impl OpenOptions {
    #[wasm_bindgen(constructor)]
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }
}

#[wasm_bindgen]
impl NinferGpu {
    /// Opens the browser's WebGPU adapter with the limits it offers (no optional feature is
    /// required; subgroups and shader-f16 are used where offered).
    pub fn open(options: Option<OpenOptions>) -> Promise {
        let options = options.unwrap_or_default();
        future_to_promise(async move {
            let opts = GpuOptions {
                max_buffer_size: byte_limit(options.max_buffer_size, "max_buffer_size")?,
                max_binding: byte_limit(options.max_binding, "max_binding")?,
                ..Default::default()
            };
            let gpu = Gpu::open(&opts).await.map_err(reject)?;
            Ok(NinferGpu { gpu: Rc::new(gpu) }.into())
        })
    }

    /// The adapter's facts, limits and probe results (the CLI's `devices --json` entry).
    pub fn platform(&self) -> Result<JsValue, JsValue> {
        to_js(self.gpu.platform())
    }

    /// The capability table for this adapter (the CLI's `capabilities --json` rows).
    pub fn capabilities(&self) -> Result<JsValue, JsValue> {
        to_js(&capability::table(Some(self.gpu.platform())))
    }

    /// `model`'s tensors with their capability status per op on this GPU, each payload
    /// validated (the CLI's `inspect`).
    pub fn tensors(&self, model: &NinferModel) -> Result<JsValue, JsValue> {
        to_js(&model.model.tensor_infos(Some(self.gpu.platform())))
    }

    /// Every value of a tensor: Float32Array, or Int32Array for int32 tensors.
    pub fn dequant(&self, model: &NinferModel, tensor: String) -> Promise {
        let (gpu, model) = (self.gpu.clone(), model.model.clone());
        future_to_promise(async move {
            // An object, or a binding of several parts (their values one after another).
            let pieces = model.pieces(&tensor).map_err(reject)?;
            let mut words = Vec::new();
            for t in &pieces {
                let uploaded = gpu.upload(&t.validate().map_err(reject)?).await.map_err(reject)?;
                words.extend(gpu.dequant(&uploaded).await.map_err(reject)?);
            }
            let format = pieces.first().map_or(Format::Fp32, |t| t.format());
            Ok(typed(format, &words))
        })
    }

    /// The chosen rows' values in request order (an embedding lookup).
    pub fn gather(&self, model: &NinferModel, tensor: String, rows: Vec<u32>) -> Promise {
        let (gpu, model) = (self.gpu.clone(), model.model.clone());
        future_to_promise(async move {
            // Each request goes to the part holding its row, as the CLI routes it.
            let stacked = model.stacked(&tensor, "gather").map_err(reject)?;
            let routes = stacked.route(&rows).map_err(reject)?;
            let k = stacked.k;
            let mut words: Vec<u32> = zeroed(rows.len().saturating_mul(k))?;
            for (t, mine) in stacked.pieces.iter().zip(&routes).filter(|(_, mine)| !mine.is_empty()) {
                let uploaded = gpu.upload(&t.validate().map_err(reject)?).await.map_err(reject)?;
                let local: Vec<u32> = mine.iter().map(|&(_, r)| r).collect();
                let got = gpu.gather(&uploaded, &local).await.map_err(reject)?;
                for (slot, &(i, _)) in mine.iter().enumerate() {
                    words[i * k..(i + 1) * k].copy_from_slice(&got[slot * k..(slot + 1) * k]);
                }
            }
            let format = stacked.pieces.first().map_or(Format::Fp32, |t| t.format());
            Ok(typed(format, &words))
        })
    }

    /// `Y = W X` for a rank-2 tensor: `x` holds `columns` vectors of K values back to back; the
    /// result holds `columns` vectors of N values back to back. `profile`: "a32" (default: exact
    /// weights, f32 activation) or "a8" (q8_1 activation, integer dot products; gguf types).
    pub fn matvec(
        &self,
        model: &NinferModel,
        tensor: String,
        x: Vec<f32>,
        columns: usize,
        profile: Option<String>,
    ) -> Promise {
        let (gpu, model) = (self.gpu.clone(), model.model.clone());
        future_to_promise(async move {
            let profile = match profile.as_deref() {
                None => Profile::A32,
                Some(name) => Profile::parse(name)
                    .ok_or_else(|| reject(Error::Unsupported(format!("unknown profile `{name}`; valid: a32, a8"))))?,
            };
            // A binding's parts are row blocks: each gives its rows of every column.
            let stacked = model.stacked(&tensor, "matvec").map_err(reject)?;
            // Checked before the output is allocated; each piece's product checks x again.
            if columns == 0 || columns > MAX_HOST_COLUMNS {
                let e = format!("matmul takes 1..={MAX_HOST_COLUMNS} activation columns, got {columns}");
                return Err(reject(Error::Unsupported(e)));
            }
            let mut y: Vec<f32> = zeroed(stacked.n.saturating_mul(columns))?;
            for (i, t) in stacked.pieces.iter().enumerate() {
                let uploaded = gpu.upload_for(&t.validate().map_err(reject)?, profile).await.map_err(reject)?;
                let part = gpu.matmul_in(&uploaded, &x, columns, profile).await.map_err(reject)?;
                stacked.place_columns(i, &part, columns, &mut y).map_err(reject)?;
            }
            Ok(Float32Array::from(&y[..]).into())
        })
    }

    /// The conformance suite on this GPU: every format × op × variant on fresh random words
    /// (seed printed in the report), judged by the same code as `ninfer-wgpu conformance`.
    /// `formats`: canonical names (default: all). `progress(done)` is called after each case.
    /// Resolves to the report, the CLI's `--json` schema.
    pub fn conformance(
        &self,
        formats: Option<Vec<String>>,
        seed: Option<f64>,
        progress: Option<js_sys::Function>,
    ) -> Promise {
        let gpu = self.gpu.clone();
        future_to_promise(async move {
            let formats = crate::args::parse_formats(&formats.unwrap_or_default()).map_err(reject)?;
            let seed = seed_or_fresh(seed);
            let mut done = 0u32;
            let planned = conformance::plan(&formats, gpu.platform(), Tier::Fast);
            let results = conformance::run(&gpu, &planned, seed, |_| {
                done += 1;
                if let Some(f) = &progress {
                    let _ = f.call1(&JsValue::NULL, &done.into());
                }
            })
            .await;
            to_js(&Report::new(gpu.platform(), seed, &formats, &planned, results))
        })
    }

    /// Every tensor of `model` (or only `names`) checked on this GPU against the oracle, as
    /// `ninfer-wgpu verify --json` reports it. `progress(done, total)` after each tensor.
    pub fn verify(
        &self,
        model: &NinferModel,
        file: String,
        names: Option<Vec<String>>,
        seed: Option<f64>,
        progress: Option<js_sys::Function>,
    ) -> Promise {
        let (gpu, model) = (self.gpu.clone(), model.model.clone());
        future_to_promise(async move {
            let seed = seed_or_fresh(seed);
            let mut rng = Rng::new(seed);
            // The whole file unless names are given: a tensor of a type the registry lacks is
            // listed as not checked, never left out.
            let unsupported = if names.is_none() { model.unsupported_tensors() } else { Vec::new() };
            let names = names.unwrap_or_else(|| model.tensor_names());
            let mut tensors = Vec::with_capacity(names.len() + unsupported.len());
            for (i, name) in names.iter().enumerate() {
                let start = now_seconds();
                let report = match model.tensor(name) {
                    Ok(t) => conformance::verify_tensor(&gpu, name, &t, &mut rng).await,
                    Err(e) => Err(e),
                };
                tensors.push(TensorOutcome::new(name.clone(), report, now_seconds() - start));
                if let Some(f) = &progress {
                    let _ = f.call2(&JsValue::NULL, &((i + 1) as u32).into(), &(names.len() as u32).into());
                }
            }
            tensors.extend(unsupported.into_iter().map(|(name, why)| TensorOutcome::unsupported(name, why)));
            to_js(&VerifyReport::new(file, gpu.platform(), seed, tensors))
        })
    }
}

/// Decoded words as the JavaScript array of their type.
/// A zeroed output, or a rejection where the page's memory cannot hold it (a failed allocation
/// would trap the instance).
fn zeroed<T: Clone + Default>(len: usize) -> Result<Vec<T>, JsValue> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        reject(Error::Unsupported(format!("the output needs {len} values, more than this page can allocate")))
    })?;
    v.resize(len, T::default());
    Ok(v)
}

fn typed(format: Format, words: &[u32]) -> JsValue {
    match format.category() {
        Category::DirectInt => Int32Array::from(bytemuck::cast_slice::<u32, i32>(words)).into(),
        Category::DirectFloat
        | Category::Grouped
        | Category::RowScaledFloat
        | Category::BlockScaledFloat
        | Category::GgufBlock => Float32Array::from(bytemuck::cast_slice::<u32, f32>(words)).into(),
    }
}

/// A conformance report (as [`NinferGpu::conformance`] resolved it) as one self-contained HTML
/// page, the same as `ninfer-wgpu conformance --report`.
#[wasm_bindgen(js_name = conformanceHtml)]
pub fn conformance_html(report: JsValue) -> Result<String, JsValue> {
    let report: Report = from_js(&report, "a conformance report")?;
    Ok(crate::report::conformance_html(&report))
}

/// A verify report as one self-contained HTML page (`ninfer-wgpu verify --report`).
#[wasm_bindgen(js_name = verifyHtml)]
pub fn verify_html(report: JsValue) -> Result<String, JsValue> {
    let report: VerifyReport = from_js(&report, "a verify report")?;
    Ok(crate::report::verify_html(&report))
}

/// The format registry's names, for a format picker.
#[wasm_bindgen(js_name = formatNames)]
pub fn format_names() -> Vec<String> {
    Format::ALL.iter().map(|f| f.name().to_string()).collect()
}
