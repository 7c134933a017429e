//! The engine API in the browser (docs/engine.md, docs/browser.md#the-engine-api): a tensor
//! uploaded once, device buffers JavaScript can bind in its own pipelines on the same
//! `GPUDevice`, bound ops, and steps recorded into one compute pass and submitted at once.
//!
//! `submit` is synchronous: it records and hands the step to the queue before it returns, so
//! JavaScript's own `device.queue.submit` between two of our steps runs between them, in order.
//! Results come back with one await, `readF32`/`readU32`.

use super::{reject, NinferGpu, NinferModel};
use crate::error::Error;
use crate::gpu::{BoundOp, DeviceSlice, GpuTensor, Profile, Word};
use js_sys::{Float32Array, Promise, Uint32Array};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// A tensor on the device, uploaded once: products and gathers bind to it.
#[wasm_bindgen]
pub struct NinferTensor {
    tensor: Rc<GpuTensor>,
}

#[wasm_bindgen]
impl NinferTensor {
    /// The canonical format name.
    #[wasm_bindgen(getter)]
    pub fn format(&self) -> String {
        self.tensor.desc().format.name().to_string()
    }

    /// The logical shape, [N, K] for a matrix.
    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> Vec<usize> {
        self.tensor.desc().shape.clone()
    }
}

/// A device buffer of 4-byte elements (f32 activations and outputs, u32 ids and words).
#[wasm_bindgen]
pub struct NinferBuffer {
    buffer: wgpu::Buffer,
}

#[wasm_bindgen]
impl NinferBuffer {
    /// Its length in elements.
    #[wasm_bindgen(getter)]
    pub fn elements(&self) -> f64 {
        (self.buffer.size() / 4) as f64
    }

    /// The `GPUBuffer` itself (STORAGE, COPY_SRC and COPY_DST usage), for the page's own
    /// pipelines on [`NinferGpu::device`].
    #[wasm_bindgen(getter, js_name = gpuBuffer)]
    pub fn gpu_buffer(&self) -> JsValue {
        self.buffer.as_webgpu().map_or(JsValue::UNDEFINED, |b| JsValue::from(b.clone()))
    }
}

/// An op bound to a tensor and buffers ([`NinferGpu::bind_matmul`], [`NinferGpu::bind_gather`]).
#[wasm_bindgen]
pub struct NinferOp {
    op: Rc<BoundOp>,
}

#[wasm_bindgen]
impl NinferOp {
    /// The largest count (columns, or gathered rows) a record takes.
    #[wasm_bindgen(getter, js_name = maxCount)]
    pub fn max_count(&self) -> u32 {
        self.op.max_count()
    }
}

/// A step: records of bound ops, in order, submitted together by [`NinferGpu::submit`].
#[wasm_bindgen]
#[derive(Default)]
pub struct NinferStep {
    records: RefCell<Vec<(Rc<BoundOp>, u32)>>,
}

#[wasm_bindgen]
impl NinferStep {
    #[wasm_bindgen(constructor)]
    pub fn new() -> NinferStep {
        NinferStep::default()
    }

    /// Appends a record of `op` with `count` columns (products) or rows (gathers); checked when
    /// the step is submitted.
    pub fn record(&self, op: &NinferOp, count: u32) {
        self.records.borrow_mut().push((op.op.clone(), count));
    }
}

impl NinferGpu {
    /// Reads `len` elements from `offset` and hands them to JavaScript as `typed` makes them.
    fn read_as<T: Word>(&self, buffer: &NinferBuffer, offset: f64, len: f64, typed: fn(Vec<T>) -> JsValue) -> Promise {
        let (gpu, buffer) = (self.gpu.clone(), buffer.buffer.clone());
        future_to_promise(async move {
            let slice = DeviceSlice::<T>::new(&buffer, f64_to_u64(offset, "offset")?, f64_to_u64(len, "length")?);
            Ok(typed(gpu.read(slice, 1).await.map_err(reject)?))
        })
    }
}

fn f64_to_u64(v: f64, what: &str) -> Result<u64, JsValue> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= (1u64 << 53) as f64 {
        return Ok(v as u64);
    }
    Err(reject(Error::Unsupported(format!("{what} must be a whole number of elements, got {v}"))))
}

#[wasm_bindgen]
impl NinferGpu {
    /// The `GPUDevice` every buffer and op here lives on: the page's own kernels run on it.
    #[wasm_bindgen(getter)]
    pub fn device(&self) -> JsValue {
        self.gpu.device().as_webgpu().map_or(JsValue::UNDEFINED, |d| JsValue::from(d.clone()))
    }

    /// Uploads tensor `name` of `model` once (one object; a binding of several parts is refused:
    /// upload each part by its own name).
    pub fn upload(&self, model: &NinferModel, name: String) -> Promise {
        let (gpu, model) = (self.gpu.clone(), model.model.clone());
        future_to_promise(async move {
            let pieces = model.pieces(&name).map_err(reject)?;
            let [t] = pieces.as_slice() else {
                let e = format!("{name} is a binding of {} parts; upload each part by its own name", pieces.len());
                return Err(reject(Error::Unsupported(e)));
            };
            let tensor = gpu.upload(&t.validate().map_err(reject)?).await.map_err(reject)?;
            Ok(NinferTensor { tensor: Rc::new(tensor) }.into())
        })
    }

    /// A device buffer of `elements` 4-byte elements.
    #[wasm_bindgen(js_name = createBuffer)]
    pub fn create_buffer(&self, elements: f64) -> Promise {
        let gpu = self.gpu.clone();
        future_to_promise(async move {
            let elements = f64_to_u64(elements, "a buffer's length")?;
            let buffer = gpu.create_buffer(elements, "page buffer").await.map_err(reject)?;
            Ok(NinferBuffer { buffer }.into())
        })
    }

    /// Writes f32 values from element `offset` (lands before the next submit).
    #[wasm_bindgen(js_name = writeF32)]
    pub fn write_f32(&self, buffer: &NinferBuffer, offset: f64, data: &[f32]) -> Result<(), JsValue> {
        self.gpu.write(&buffer.buffer, f64_to_u64(offset, "offset")?, data).map_err(reject)
    }

    /// Writes u32 values (ids) from element `offset`.
    #[wasm_bindgen(js_name = writeU32)]
    pub fn write_u32(&self, buffer: &NinferBuffer, offset: f64, data: &[u32]) -> Result<(), JsValue> {
        self.gpu.write(&buffer.buffer, f64_to_u64(offset, "offset")?, data).map_err(reject)
    }

    /// Reads `len` f32 values from element `offset`: the one await of a step.
    #[wasm_bindgen(js_name = readF32)]
    pub fn read_f32(&self, buffer: &NinferBuffer, offset: f64, len: f64) -> Promise {
        self.read_as(buffer, offset, len, |v: Vec<f32>| Float32Array::from(&v[..]).into())
    }

    /// Reads `len` u32 values (gathered words) from element `offset`.
    #[wasm_bindgen(js_name = readU32)]
    pub fn read_u32(&self, buffer: &NinferBuffer, offset: f64, len: f64) -> Promise {
        self.read_as(buffer, offset, len, |v: Vec<u32>| Uint32Array::from(&v[..]).into())
    }

    /// Binds `Y = W X` (`profile` "a32" or "a8"): up to `maxColumns` columns of K values from
    /// element `xOffset` of `x`, `xStride` apart (both multiples of 4), their N outputs from
    /// element `yOffset` of `y`, `yStride` apart.
    #[wasm_bindgen(js_name = bindMatmul)]
    #[allow(clippy::too_many_arguments)]
    pub fn bind_matmul(
        &self,
        tensor: &NinferTensor,
        profile: String,
        x: &NinferBuffer,
        x_offset: f64,
        x_stride: f64,
        y: &NinferBuffer,
        y_offset: f64,
        y_stride: f64,
        max_columns: u32,
    ) -> Promise {
        let (gpu, weights) = (self.gpu.clone(), tensor.tensor.clone());
        let (xb, yb) = (x.buffer.clone(), y.buffer.clone());
        future_to_promise(async move {
            let profile = Profile::parse(&profile)
                .ok_or_else(|| reject(Error::Unsupported(format!("unknown profile `{profile}`; valid: a32, a8"))))?;
            let [n, k] = weights.desc().shape[..] else {
                return Err(reject(Error::Unsupported("matmul needs a rank-2 [N, K] tensor".into())));
            };
            let xs = DeviceSlice::new(&xb, f64_to_u64(x_offset, "xOffset")?, k as u64)
                .with_stride(f64_to_u64(x_stride, "xStride")?);
            let ys = DeviceSlice::new(&yb, f64_to_u64(y_offset, "yOffset")?, n as u64)
                .with_stride(f64_to_u64(y_stride, "yStride")?);
            let op = gpu.bind_matmul(&weights, profile, xs, ys, max_columns).await.map_err(reject)?;
            Ok(NinferOp { op: Rc::new(op) }.into())
        })
    }

    /// Binds a gather of up to `maxRows` rows of `table`: ids (u32) from element `idsOffset` of
    /// `ids`, each row's K words from element `yOffset` of `y`, `yStride` apart. An id past the
    /// table's rows is never read: its row holds the poison word 0x7fc0dead.
    #[wasm_bindgen(js_name = bindGather)]
    #[allow(clippy::too_many_arguments)]
    pub fn bind_gather(
        &self,
        table: &NinferTensor,
        ids: &NinferBuffer,
        ids_offset: f64,
        y: &NinferBuffer,
        y_offset: f64,
        y_stride: f64,
        max_rows: u32,
    ) -> Promise {
        let (gpu, table) = (self.gpu.clone(), table.tensor.clone());
        let (ib, yb) = (ids.buffer.clone(), y.buffer.clone());
        future_to_promise(async move {
            let [_, k] = table.desc().shape[..] else {
                return Err(reject(Error::Unsupported("gather needs a rank-2 [N, K] tensor".into())));
            };
            let ids = DeviceSlice::new(&ib, f64_to_u64(ids_offset, "idsOffset")?, max_rows as u64);
            let ys = DeviceSlice::new(&yb, f64_to_u64(y_offset, "yOffset")?, k as u64)
                .with_stride(f64_to_u64(y_stride, "yStride")?);
            let op = gpu.bind_gather(&table, ids, ys, max_rows).await.map_err(reject)?;
            Ok(NinferOp { op: Rc::new(op) }.into())
        })
    }

    /// Records `step` into one compute pass and submits it before returning (no await): the
    /// page's own `device.queue.submit` after this call runs after the step.
    pub fn submit(&self, step: &NinferStep) -> Result<(), JsValue> {
        let mut encoder = self.gpu.device().create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for (op, count) in step.records.borrow().iter() {
                op.record(&mut pass, *count).map_err(reject)?;
            }
        }
        self.gpu.queue().submit([encoder.finish()]);
        Ok(())
    }
}
