//! A model's weights taken in the order the file holds them, as their bytes come: each tensor
//! the forward reads is checked (its words' rules, every weight finite) and put on the device
//! a few rows at a time, so neither a memory-mapped file nor a network stream is ever copied
//! whole (docs/browser.md#streaming). What the forward binds afterwards it takes from
//! [`Weights`] by name, in its own order.
//!
//! GGUF writers order tensors their own way (gemma-3-270m's starts with `output_norm`, then the
//! token table, then blocks 0, 1, 10, 11, …), which is why the load cannot pull tensors in the
//! order it binds them: the reader already requires tensor data in the order of the infos,
//! without overlap, so one pass over the data meets each tensor once.

use super::config::ModelConfig;
use super::forward::{ForwardOptions, GpuForward, LoadStep, OnGpu};
use super::tokenizer::Tokenizer;
use super::weights::check_finite_from;
use crate::encode::import::{Q8FromQ8_0, Q8FromQ8_0Rows};
use crate::error::{Error, Result};
use crate::format::{Format, Geometry};
use crate::gguf::reader::GgufHeader;
use crate::gpu::{capability, Gpu, GpuTensor, Op, PayloadWriter, Profile, Variant, UPLOAD_CHUNK};
use crate::layout::Layout;
use crate::tensor::{EncodedTensor, TensorDesc};
use std::collections::HashMap;
use std::rc::Rc;

/// The weights a load made, taken by name as the forward binds them.
#[derive(Default)]
pub(super) struct Weights {
    /// Uploaded tensors by name; a stack of products under its first name, with how many
    /// names it holds.
    tensors: HashMap<String, (GpuTensor, usize)>,
    /// Vectors the kernels read as f32 (norm gains, biases, RoPE factors): exact values.
    values: HashMap<String, Vec<f32>>,
}

fn not_loaded(name: &str) -> Error {
    Error::Model(format!("tensor `{name}` was not loaded: the file has no such tensor"))
}

impl Weights {
    /// An uploaded tensor, or the stack of products starting at `name`, and how many names
    /// it holds.
    pub fn tensor(&mut self, name: &str) -> Result<(GpuTensor, usize)> {
        self.tensors.remove(name).ok_or_else(|| not_loaded(name))
    }

    pub fn values(&mut self, name: &str) -> Result<Vec<f32>> {
        self.values.remove(name).ok_or_else(|| not_loaded(name))
    }
}

/// What the load does with a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The token table or an untied head: as q8_g32_fp16 where it is q8_0 and the device runs
    /// that (docs/llm.md#the-output-head), else as stored; streamed.
    Table,
    /// A product's weights as stored, streamed.
    Matrix,
    /// One of a run of products of one format (a block's q, k and v, say) uploaded as one
    /// stacked tensor (docs/llm.md#the-gpu-forward): held until the run is complete.
    Part(usize),
    /// Exact f32 values on the host.
    Values,
}

struct Item {
    name: String,
    /// Where its bytes lie in the file.
    start: u64,
    len: u64,
    desc: TensorDesc,
    role: Role,
}

/// Runs of consecutive names of one format.
pub(super) fn runs(header: &GgufHeader, names: &[String]) -> Result<Vec<Vec<String>>> {
    let mut runs: Vec<(Format, Vec<String>)> = Vec::new();
    for name in names {
        let format = header.desc(name)?.format;
        match runs.last_mut() {
            Some((f, run)) if *f == format => run.push(name.clone()),
            _ => runs.push((format, vec![name.clone()])),
        }
    }
    Ok(runs.into_iter().map(|(_, run)| run).collect())
}

/// One pass over a model's tensor data.
pub(super) struct Ingest {
    profile: Profile,
    /// The tensors the forward reads, in file order.
    order: Vec<Item>,
    next: usize,
    /// The file position of the next byte pushed.
    at: u64,
    sink: Option<Sink>,
    runs: Vec<Run>,
    weights: Weights,
}

/// A stacked run: its names, and the parts' bytes held until the last comes.
struct Run {
    names: Vec<String>,
    parts: Vec<Option<Vec<u8>>>,
}

enum Sink {
    Rows(Box<Rows>),
    Held(Vec<u8>),
}

/// A tensor streamed a few rows at a time: each piece of whole rows checked, then written.
struct Rows {
    desc: TensorDesc,
    row_bytes: usize,
    /// Elements (a float tensor) or blocks in a row: where a refusal points.
    units_per_row: usize,
    rows_done: usize,
    /// Bytes of rows not yet whole, or short of a piece.
    pending: Vec<u8>,
    piece: usize,
    out: PayloadWriter,
    q8: Option<Q8FromQ8_0Rows>,
}

impl Ingest {
    /// The plan for `config`'s tensors as `header` lays them out; the next byte pushed is the
    /// file's byte `at`.
    pub fn new(header: &GgufHeader, config: &ModelConfig, profile: Profile, at: u64) -> Result<Ingest> {
        let mut roles: HashMap<String, Role> = HashMap::new();
        let mut stacked = Vec::new();
        for b in 0..config.blocks {
            let name = |s: &str| format!("blk.{b}.{s}.weight");
            for group in [vec![name("attn_q"), name("attn_k"), name("attn_v")], vec![name("ffn_gate"), name("ffn_up")]]
            {
                for run in runs(header, &group)? {
                    match run.len() {
                        1 => roles.insert(run[0].clone(), Role::Matrix),
                        _ => {
                            for n in &run {
                                roles.insert(n.clone(), Role::Part(stacked.len()));
                            }
                            stacked.push(Run { parts: vec![None; run.len()], names: run.clone() });
                            None
                        }
                    };
                }
            }
            roles.insert(name("attn_output"), Role::Matrix);
            roles.insert(name("ffn_down"), Role::Matrix);
        }
        for table in ["token_embd.weight", "output.weight"] {
            roles.insert(table.into(), Role::Table);
        }
        let needed: HashMap<String, Role> = config
            .tensors()
            .into_iter()
            .map(|(name, _)| {
                let role = roles.get(&name).copied().unwrap_or(Role::Values);
                (name, role)
            })
            .collect();
        let mut order = Vec::with_capacity(needed.len());
        for t in &header.tensors {
            if let Some(&role) = needed.get(&t.name) {
                let desc = header.desc(&t.name)?;
                let len = desc.encoded_bytes()? as u64;
                order.push(Item { name: t.name.clone(), start: header.data_offset + t.offset, len, desc, role });
            }
        }
        if let Some((name, _)) = needed.iter().find(|(name, _)| header.info(name).is_none()) {
            return Err(not_loaded(name));
        }
        Ok(Ingest { profile, order, next: 0, at, sink: None, runs: stacked, weights: Weights::default() })
    }

    /// The next bytes of the file, in order, in chunks of any size; `on_step` hears of each
    /// tensor checked. Bytes no tensor of the forward's holds are passed over.
    pub async fn push(&mut self, gpu: &Gpu, mut bytes: &[u8], on_step: &mut dyn FnMut(LoadStep)) -> Result<()> {
        while !bytes.is_empty() {
            let Some(item) = self.order.get(self.next) else {
                self.at += bytes.len() as u64;
                return Ok(());
            };
            let (start, end) = (item.start, item.start + item.len);
            if self.at < start {
                let skip = (start - self.at).min(bytes.len() as u64) as usize;
                self.at += skip as u64;
                bytes = &bytes[skip..];
                continue;
            }
            if self.sink.is_none() {
                self.sink = Some(self.open(gpu, bytes).await?);
            }
            let take = ((end - self.at) as usize).min(bytes.len());
            let item = &self.order[self.next];
            match self.sink.as_mut() {
                Some(Sink::Rows(rows)) => rows.feed(gpu, &item.name, &bytes[..take])?,
                Some(Sink::Held(held)) => held.extend_from_slice(&bytes[..take]),
                None => unreachable!("opened above"),
            }
            self.at += take as u64;
            bytes = &bytes[take..];
            if self.at == end {
                self.close(gpu).await?;
                self.next += 1;
                on_step(LoadStep::Validated { done: self.next, of: self.order.len() });
            }
        }
        Ok(())
    }

    /// The sink of the next tensor; `bytes` are its first bytes (all of them, from a map).
    async fn open(&self, gpu: &Gpu, bytes: &[u8]) -> Result<Sink> {
        let item = &self.order[self.next];
        let d = &item.desc;
        let table_q8 = item.role == Role::Table && d.format == Format::GgufQ8_0 && {
            let runs = |op| {
                let platform = Some(gpu.platform());
                capability::check(Format::Q8G32Fp16, Layout::RowSplitK128V1, op, Variant::Workgroup, platform).is_ok()
            };
            // Where the whole table is here, a block q8_g32_fp16 cannot hold leaves it as
            // stored; a stream decides before its blocks come (and refuses such a block).
            let holds = match (&d.shape[..], bytes.get(..item.len as usize)) {
                (&[n, k], Some(all)) => Q8FromQ8_0::new(n, k, all).is_ok(),
                (&[_, _], None) => true,
                _ => false,
            };
            holds && runs(self.profile.op()) && runs(Op::Gather)
        };
        // Checked whole just above: the pieces need not be checked again.
        let checked = bytes.len() as u64 >= item.len;
        match item.role {
            // Grown as bytes come: a header's claimed size is not trusted with an allocation.
            Role::Part(_) | Role::Values => Ok(Sink::Held(Vec::new())),
            Role::Table | Role::Matrix => {
                let (n, k) = match d.shape[..] {
                    [n, k] => (n, k),
                    _ => {
                        return Err(Error::Model(format!(
                            "tensor `{}` of shape {:?} is not a matrix",
                            item.name, d.shape
                        )))
                    }
                };
                let units_per_row = match d.format.spec().geometry {
                    Geometry::Block { values, .. } => k / values,
                    _ => k,
                };
                let row_bytes = (item.len as usize) / n.max(1);
                let q8 = table_q8.then(|| Q8FromQ8_0Rows::new(n, k, checked)).transpose()?;
                let (out_desc, out_len) = match &q8 {
                    Some(q) => (q.desc(), q.bytes() as u64),
                    None => (d.clone(), item.len),
                };
                let out = PayloadWriter::new(gpu, out_desc, out_len, self.profile).await?;
                let piece = (UPLOAD_CHUNK / row_bytes.max(1)).max(1) * row_bytes;
                Ok(Sink::Rows(Box::new(Rows {
                    desc: d.clone(),
                    row_bytes,
                    units_per_row,
                    rows_done: 0,
                    pending: Vec::new(),
                    piece,
                    out,
                    q8,
                })))
            }
        }
    }

    /// The tensor's last byte has come.
    async fn close(&mut self, gpu: &Gpu) -> Result<()> {
        let item = &self.order[self.next];
        let name = item.name.clone();
        match self.sink.take() {
            Some(Sink::Rows(rows)) => {
                let tensor = rows.finish(gpu, &name)?;
                self.weights.tensors.insert(name, (tensor, 1));
            }
            Some(Sink::Held(bytes)) => {
                let t = EncodedTensor::new(item.desc.clone(), &bytes[..])?;
                t.validate()?;
                check_finite_from(&name, &t, 0)?;
                match item.role {
                    Role::Part(run) => self.part(gpu, run, &name, bytes).await?,
                    _ => {
                        let values = super::weights::values_of(&name, &t)?;
                        self.weights.values.insert(name, values);
                    }
                }
            }
            None => unreachable!("a tensor closes after it opened"),
        }
        Ok(())
    }

    /// One part of a stacked run: the run is uploaded once its last part is here.
    async fn part(&mut self, gpu: &Gpu, run: usize, name: &str, bytes: Vec<u8>) -> Result<()> {
        let Run { names, parts } = &mut self.runs[run];
        let i = names.iter().position(|n| n == name).ok_or_else(|| not_loaded(name))?;
        parts[i] = Some(bytes);
        if parts.iter().any(Option::is_none) {
            return Ok(());
        }
        let mut tensors = Vec::with_capacity(parts.len());
        for (n, bytes) in names.iter().zip(parts.iter()) {
            let desc =
                self.order.iter().find(|it| &it.name == n).map(|it| it.desc.clone()).ok_or_else(|| not_loaded(n))?;
            tensors.push(EncodedTensor::new(desc, bytes.as_deref().unwrap_or_default())?);
        }
        let valid = tensors.iter().map(|t| t.validate()).collect::<Result<Vec<_>>>()?;
        let tensor = gpu.upload_stacked(&valid.iter().collect::<Vec<_>>(), self.profile).await?;
        let first = names[0].clone();
        let count = names.len();
        parts.iter_mut().for_each(|p| *p = None);
        self.weights.tensors.insert(first, (tensor, count));
        Ok(())
    }

    /// The weights, once every tensor the forward reads has come; a stream that ended before
    /// is refused, naming the tensor it cut.
    pub fn finish(self) -> Result<Weights> {
        match self.order.get(self.next) {
            None => Ok(self.weights),
            Some(item) => Err(Error::Io(format!(
                "the model's bytes ended at byte {} of the file, inside or before tensor `{}` (bytes {}..{}): \
                 the file is truncated",
                self.at,
                item.name,
                item.start,
                item.start + item.len
            ))),
        }
    }
}

impl Rows {
    /// The tensor's next bytes: checked and written a piece of whole rows at a time.
    fn feed(&mut self, gpu: &Gpu, name: &str, mut bytes: &[u8]) -> Result<()> {
        let total = self.desc.encoded_bytes()?;
        while !bytes.is_empty() {
            let target = self.piece.min(total - self.rows_done * self.row_bytes);
            if self.pending.is_empty() && bytes.len() >= target {
                // Straight from where the bytes lie (a memory map, a stream's chunk).
                let whole = bytes.len().min(self.piece) / self.row_bytes * self.row_bytes;
                self.rows(gpu, name, &bytes[..whole])?;
                bytes = &bytes[whole..];
            } else {
                let take = (target - self.pending.len()).min(bytes.len());
                self.pending.extend_from_slice(&bytes[..take]);
                bytes = &bytes[take..];
                if self.pending.len() == target {
                    let pending = std::mem::take(&mut self.pending);
                    self.rows(gpu, name, &pending)?;
                    self.pending = pending;
                    self.pending.clear();
                }
            }
        }
        Ok(())
    }

    /// Whole rows: their words' rules and finite weights checked, then written (or imported).
    fn rows(&mut self, gpu: &Gpu, name: &str, bytes: &[u8]) -> Result<()> {
        let n = bytes.len() / self.row_bytes;
        let k = self.desc.shape[1];
        let t = EncodedTensor::new(TensorDesc::new(self.desc.format, self.desc.layout, &[n, k]), bytes)?;
        t.validate()?;
        check_finite_from(name, &t, self.rows_done * self.units_per_row)?;
        let out = &mut self.out;
        match &mut self.q8 {
            Some(q8) => q8.rows(bytes, &mut |b| out.push(gpu, b, &mut |_, _| ())).map_err(|e| match e {
                e @ Error::InvalidWord { .. } => Error::Unsupported(format!(
                    "tensor `{name}`: {e}; a streamed load chose q8_g32_fp16 for this q8_0 table before its \
                     blocks came — load the whole file to keep it as stored"
                )),
                e => e,
            })?,
            None => out.push(gpu, bytes, &mut |_, _| ())?,
        }
        self.rows_done += n;
        Ok(())
    }

    fn finish(self, gpu: &Gpu, name: &str) -> Result<GpuTensor> {
        let Rows { mut out, q8, .. } = self;
        if let Some(q8) = q8 {
            q8.finish(&mut |b| out.push(gpu, b, &mut |_, _| ()))
                .map_err(|e| Error::Model(format!("tensor `{name}`: {e}")))?;
        }
        out.finish(gpu)
    }
}

/// The most bytes a streamed file's header (metadata and tensor infos) may take: gemma-3-270m's,
/// with its 262144-token vocabulary, takes 6.5 MB. Past it, the stream is refused rather than
/// held: a hostile header cannot make the load keep the whole file.
pub const MAX_STREAMED_HEADER: usize = 64 << 20;

/// Where a streamed load is: reading the header, or the tensors.
enum Stage {
    Header { bytes: Vec<u8>, next_try: usize },
    Data { config: Box<ModelConfig>, tokenizer: Box<Tokenizer>, ingest: Ingest },
}

/// A model loaded from its file's bytes as they come (a fetch's body, a `File`'s stream), never
/// holding the file: the header is parsed once its bytes are here (the configuration, the
/// tokenizer and what the kernels run checked before any upload), then each tensor the forward
/// reads is checked and uploaded as it completes ([`Ingest`]), and the forward bound at the end.
pub struct StreamLoad<'g> {
    on: OnGpu<'g>,
    options: ForwardOptions,
    stage: Stage,
}

impl StreamLoad<'static> {
    /// A streamed load onto a shared device, which the forward keeps alive.
    pub fn shared(gpu: Rc<Gpu>, options: ForwardOptions) -> StreamLoad<'static> {
        StreamLoad::on(OnGpu::Shared(gpu), options)
    }
}

impl<'g> StreamLoad<'g> {
    pub fn new(gpu: &'g Gpu, options: ForwardOptions) -> StreamLoad<'g> {
        StreamLoad::on(OnGpu::Borrowed(gpu), options)
    }

    fn on(on: OnGpu<'g>, options: ForwardOptions) -> StreamLoad<'g> {
        // Parsed again at each doubling of the bytes held: linear in the header's size.
        StreamLoad { on, options, stage: Stage::Header { bytes: Vec::new(), next_try: 64 << 10 } }
    }

    /// The file's next bytes, in order, in chunks of any size.
    pub async fn push(&mut self, bytes: &[u8], on_step: &mut dyn FnMut(LoadStep)) -> Result<()> {
        match &mut self.stage {
            Stage::Data { ingest, .. } => ingest.push(&self.on, bytes, on_step).await,
            // A first chunk holding the whole header (a whole file, a map): read where it lies,
            // not copied.
            Stage::Header { bytes: held, .. } if held.is_empty() && bytes.len() >= 64 << 10 => {
                match GgufHeader::parse_prefix(bytes)? {
                    Some(header) => self.begin(header, bytes, on_step).await,
                    None => {
                        held.extend_from_slice(bytes);
                        self.start(false, on_step).await
                    }
                }
            }
            Stage::Header { bytes: held, next_try } => {
                held.extend_from_slice(bytes);
                if held.len() < *next_try {
                    return Ok(());
                }
                *next_try = (held.len() * 2).min(MAX_STREAMED_HEADER + 1);
                self.start(false, on_step).await
            }
        }
    }

    /// Parses the header from the bytes held and starts on the tensors, when it is complete
    /// (refused when it is not and the stream has `ended`, or it is over the limit).
    async fn start(&mut self, ended: bool, on_step: &mut dyn FnMut(LoadStep)) -> Result<()> {
        let Stage::Header { bytes, next_try } = &mut self.stage else { return Ok(()) };
        let Some(header) = GgufHeader::parse_prefix(bytes)? else {
            *next_try = (bytes.len() * 2).clamp(*next_try, MAX_STREAMED_HEADER + 1);
            return match (ended, bytes.len() > MAX_STREAMED_HEADER) {
                (true, _) => Err(Error::Io(format!(
                    "malformed GGUF: truncated: the model's bytes ended after {} bytes, inside its header",
                    bytes.len()
                ))),
                (false, true) => Err(Error::Unsupported(format!(
                    "a streamed GGUF's header (metadata and tensor infos) is over {MAX_STREAMED_HEADER} bytes"
                ))),
                (false, false) => Ok(()),
            };
        };
        let held = std::mem::take(bytes);
        self.begin(header, &held, on_step).await
    }

    /// Starts on the tensors: the configuration, the tokenizer and what the kernels run are
    /// checked, then `bytes`, the file's from its first, go to the tensors' pass (the header's
    /// are passed over).
    async fn begin(&mut self, header: GgufHeader, bytes: &[u8], on_step: &mut dyn FnMut(LoadStep)) -> Result<()> {
        let config = ModelConfig::from_gguf(&header)?;
        let tokenizer = Tokenizer::from_gguf(&header)?;
        super::forward::check_supported(&header, &config, &self.options, &self.on)?;
        let ingest = Ingest::new(&header, &config, self.options.profile, 0)?;
        drop(header);
        self.stage = Stage::Data { config: Box::new(config), tokenizer: Box::new(tokenizer), ingest };
        match &mut self.stage {
            Stage::Data { ingest, .. } => ingest.push(&self.on, bytes, on_step).await,
            Stage::Header { .. } => unreachable!("set above"),
        }
    }

    /// After the last byte: the forward bound over the weights, and the model's tokenizer. A
    /// stream that ended early is refused, naming where.
    pub async fn finish(mut self, on_step: &mut dyn FnMut(LoadStep)) -> Result<(GpuForward<'g>, Tokenizer)> {
        self.start(true, on_step).await?;
        match self.stage {
            Stage::Data { config, tokenizer, ingest } => {
                let weights = ingest.finish()?;
                let forward = GpuForward::bind(self.on, &config, &self.options, weights, on_step).await?;
                Ok((forward, *tokenizer))
            }
            Stage::Header { .. } => unreachable!("start refuses an incomplete header"),
        }
    }
}
