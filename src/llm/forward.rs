//! The forward pass of a model on the GPU, built on the public engine API
//! (docs/engine.md) and the model's own kernels (`kernels.rs`, `shaders/llm/`): the same graph
//! as the CPU reference (`reference.rs`). Weights stay GGUF blocks as stored; activations, the
//! KV cache and the logits stay on the device; a step (a prompt's chunk of up to `batch` tokens,
//! or one generated token) is one recorded pass, one submission and one read-back of the logits
//! it keeps.

pub use super::block::DispatchKind;
use super::block::{rope_table, Activations, Block};
use super::config::ModelConfig;
use super::head::{HeadInputs, Logits};
use super::ingest::{Ingest, Weights};
use super::kernels::{
    attention_columns, position_shares, Dispatch, ModelKernel, Pipelines, ATTENTION_SPLITS, ATTENTION_SPLIT_BELOW,
    CPU_WG, HEAD_MAX, LLM_WG,
};
use super::uniforms::{Norm, Step};
use super::upload::upload_f32;
use crate::error::{Error, Result};
use crate::gguf::reader::{GgufFile, GgufHeader};
use crate::gpu::{capability, BoundOp, DeviceSlice, Gpu, GpuTensor, Op, Profile, Variant};
use std::rc::Rc;

#[cfg(not(target_arch = "wasm32"))]
mod profile;

/// How a forward pass is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardOptions {
    /// The products' arithmetic (criteria.md).
    pub profile: Profile,
    /// Positions the KV cache holds; 0: the model's context, at most [`DEFAULT_CONTEXT`].
    pub context: usize,
    /// The most tokens one step takes (a prompt goes through in steps of this many columns).
    pub batch: u32,
    /// Invocations in the workgroups of the model kernels that meet at barriers (attention,
    /// norms, q/k norm and RoPE), a power of two up to [`LLM_WG`]; `None`: the adapter's
    /// ([`CPU_WG`] on CPU drivers, [`LLM_WG`] on GPUs). Set, it runs the other shape on one
    /// adapter (tests, profiles).
    pub kernel_workgroup: Option<u32>,
}

/// How far a load has come: tensors checked (types, shapes, every weight finite) and put on
/// the device as the pass over the file meets them, then the work bound (the token table,
/// each block, the head), `done` of `of` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadStep {
    Validated { done: usize, of: usize },
    Uploaded { done: usize, of: usize },
}

/// The synchronising kernels' workgroup for `options` on `gpu`: the one asked for, else the
/// adapter's.
fn kernel_workgroup(options: &ForwardOptions, gpu: &Gpu) -> u32 {
    kernel_workgroup_on(options.kernel_workgroup, &gpu.platform().device_type)
}

/// [`kernel_workgroup`] for an adapter of `device_type` (wgpu's name: "Cpu", "DiscreteGpu", …).
fn kernel_workgroup_on(asked: Option<u32>, device_type: &str) -> u32 {
    match asked {
        Some(n) => n,
        None if device_type == "Cpu" => CPU_WG,
        None => LLM_WG,
    }
}

#[cfg(test)]
mod workgroup_tests;

/// The cache a run gets unless it asks: 4096 positions (gemma-3-270m's 18 blocks: 151 MB).
pub const DEFAULT_CONTEXT: usize = 4096;

/// The positions a run may take when `asked` for (0: the default), on the GPU and the CPU alike.
pub fn run_context(config: &ModelConfig, asked: usize) -> Result<usize> {
    match asked {
        0 => Ok(config.context_length.min(DEFAULT_CONTEXT)),
        n if n > config.context_length => {
            Err(Error::Model(format!("a context of {n} is more than the model's {}", config.context_length)))
        }
        n => Ok(n),
    }
}

/// Refuses `tokens` after `position` where they would run past `context` or name an id past the
/// vocabulary, before anything runs (the GPU forward and the CPU reference's runs alike).
pub fn check_run(config: &ModelConfig, tokens: &[u32], position: usize, context: usize) -> Result<()> {
    if tokens.is_empty() {
        return Err(Error::Model("no tokens to run".into()));
    }
    if position + tokens.len() > context {
        return Err(Error::Model(format!(
            "{} tokens after {position} are more than the context of {context} positions",
            tokens.len()
        )));
    }
    if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= config.vocab) {
        return Err(Error::Model(format!("token id {bad} is past the vocabulary of {}", config.vocab)));
    }
    Ok(())
}

impl Default for ForwardOptions {
    fn default() -> Self {
        ForwardOptions { profile: Profile::A32, context: 0, batch: 64, kernel_workgroup: None }
    }
}

/// Which logits a call returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The last token's: what generation needs.
    Last,
    /// Every token's, [token][vocab]: teacher forcing, perplexity.
    All,
}

/// The device a forward runs on: borrowed (a native program holds its `Gpu` for the run) or
/// shared (the browser, where a model object outlives any borrow JavaScript could hold).
pub(super) enum OnGpu<'g> {
    Borrowed(&'g Gpu),
    Shared(Rc<Gpu>),
}

impl std::ops::Deref for OnGpu<'_> {
    type Target = Gpu;
    fn deref(&self) -> &Gpu {
        match self {
            OnGpu::Borrowed(g) => g,
            OnGpu::Shared(g) => g,
        }
    }
}

/// A model on one device, with its KV cache and the position it has reached.
pub struct GpuForward<'g> {
    gpu: OnGpu<'g>,
    config: ModelConfig,
    context: usize,
    batch: u32,
    /// The most columns of logits one step produces (the logits buffer is one binding).
    head_columns: u32,
    position: usize,
    ids: wgpu::Buffer,
    step: wgpu::Buffer,
    /// The head's output for one column (every generated token) and for `head_columns`
    /// (teacher forcing: made on the first call that keeps every token's logits).
    one: Logits,
    all: Option<Logits>,
    /// What the head reads: the final norm's output.
    normed: wgpu::Buffer,
    /// The head's weights: an index into `_tensors`.
    head_at: usize,
    profile: Profile,
    pipelines: Pipelines,
    gather: BoundOp,
    embed: Dispatch,
    blocks: Vec<Block>,
    /// Every weight and activation buffer, kept for the lifetime of the bound work.
    _tensors: Vec<GpuTensor>,
    _buffers: Vec<wgpu::Buffer>,
}

/// The products' tensors, checked (format, shape) before anything is uploaded.
fn product_tensors(config: &ModelConfig) -> Vec<String> {
    let mut names = Vec::new();
    for b in 0..config.blocks {
        for s in ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"] {
            names.push(format!("blk.{b}.{s}.weight"));
        }
    }
    names
}

/// Refuses what the kernels cannot run, before any GPU work.
pub(super) fn check_supported(
    file: &GgufHeader,
    config: &ModelConfig,
    options: &ForwardOptions,
    gpu: &Gpu,
) -> Result<()> {
    let c = config;
    let (kl, vl) = (c.key_length, c.value_length);
    if kl > HEAD_MAX || vl > HEAD_MAX || !kl.is_multiple_of(4) || !vl.is_multiple_of(4) {
        return Err(Error::Unsupported(format!(
            "heads of key length {} and value length {}: the attention kernel takes multiples of 4 up to \
             {HEAD_MAX}",
            c.key_length, c.value_length
        )));
    }
    // Products read x as vec4: every product input's length is a multiple of 4.
    for (what, n) in
        [("width", c.width), ("feed_forward", c.feed_forward), ("heads × value_length", c.heads * c.value_length)]
    {
        if n % 4 != 0 {
            return Err(Error::Unsupported(format!("{what} {n} is not a multiple of 4 (products read vec4)")));
        }
    }
    if options.batch == 0 {
        return Err(Error::Unsupported("a batch of 0 tokens".into()));
    }
    if let Some(n) = options.kernel_workgroup {
        if !n.is_power_of_two() || n > LLM_WG {
            return Err(Error::Unsupported(format!(
                "a kernel workgroup of {n} invocations: the model's kernels take a power of two up to {LLM_WG}"
            )));
        }
    }
    let head = if c.separate_head { "output.weight" } else { "token_embd.weight" };
    let profile_op = options.profile.op();
    for name in product_tensors(c).iter().map(String::as_str).chain([head]) {
        let d = file.desc(name)?;
        capability::check(d.format, d.layout, profile_op, Variant::Workgroup, Some(gpu.platform()))
            .map_err(|e| Error::Model(format!("tensor `{name}`: {e}")))?;
    }
    let d = file.desc("token_embd.weight")?;
    capability::check(d.format, d.layout, Op::Gather, Variant::Workgroup, Some(gpu.platform()))
        .map_err(|e| Error::Model(format!("tensor `token_embd.weight`: {e}")))?;
    head_columns(c, options, gpu).map(|_| ())
}

/// The most columns of logits one step makes: one binding holds them.
fn head_columns(c: &ModelConfig, options: &ForwardOptions, gpu: &Gpu) -> Result<u32> {
    let batch = options.batch.min(run_context(c, options.context)? as u32);
    match (gpu.max_binding() / (c.vocab as u64 * 4)).min(batch as u64) as u32 {
        0 => Err(Error::Unsupported(format!(
            "one column of {} logits is over this adapter's {}-byte storage binding",
            c.vocab,
            gpu.max_binding()
        ))),
        columns => Ok(columns),
    }
}

impl GpuForward<'static> {
    /// [`GpuForward::load`] on a shared device, which the forward keeps alive.
    pub async fn load_shared(
        gpu: Rc<Gpu>,
        file: &GgufFile,
        config: &ModelConfig,
        options: &ForwardOptions,
    ) -> Result<GpuForward<'static>> {
        GpuForward::load_on(OnGpu::Shared(gpu), file, config, options, &mut |_| ()).await
    }

    /// [`GpuForward::load_shared`], calling `on_step` as the load goes (the browser's progress).
    pub async fn load_shared_reporting(
        gpu: Rc<Gpu>,
        file: &GgufFile,
        config: &ModelConfig,
        options: &ForwardOptions,
        on_step: &mut dyn FnMut(LoadStep),
    ) -> Result<GpuForward<'static>> {
        GpuForward::load_on(OnGpu::Shared(gpu), file, config, options, on_step).await
    }
}

impl<'g> GpuForward<'g> {
    /// Uploads the model's weights and binds every step's work.
    pub async fn load(
        gpu: &'g Gpu,
        file: &GgufFile,
        config: &ModelConfig,
        options: &ForwardOptions,
    ) -> Result<GpuForward<'g>> {
        GpuForward::load_on(OnGpu::Borrowed(gpu), file, config, options, &mut |_| ()).await
    }

    /// Checks what the kernels run, then takes the file's tensors in its order ([`Ingest`],
    /// straight from where its bytes lie) and binds them.
    async fn load_on(
        on: OnGpu<'g>,
        file: &GgufFile,
        config: &ModelConfig,
        options: &ForwardOptions,
        on_step: &mut dyn FnMut(LoadStep),
    ) -> Result<GpuForward<'g>> {
        check_supported(file, config, options, &on)?;
        let mut ingest = Ingest::new(file, config, options.profile, 0)?;
        ingest.push(&on, file.bytes(), on_step).await?;
        GpuForward::bind(on, config, options, ingest.finish()?, on_step).await
    }

    /// Binds every step's work over the weights a load made; `on_step` hears of each upload
    /// bound (the token table, each block, the head).
    pub(super) async fn bind(
        on: OnGpu<'g>,
        config: &ModelConfig,
        options: &ForwardOptions,
        mut weights: Weights,
        on_step: &mut dyn FnMut(LoadStep),
    ) -> Result<GpuForward<'g>> {
        let gpu: &Gpu = &on;
        // The token table, each block, the head.
        let uploads = config.blocks + 2;
        let c = config;
        let context = run_context(c, options.context)?;
        let batch = options.batch.min(context as u32);
        let head_columns = head_columns(c, options, gpu)?;
        let (w, ff, jb) = (c.width as u64, c.feed_forward as u64, batch as u64);
        let (kl, vl) = (c.key_length as u64, c.value_length as u64);
        let (h, kv) = (c.heads as u64, c.kv_heads as u64);
        let qkv_stride = h * kl + kv * kl + kv * vl;

        let small = kernel_workgroup(options, gpu);
        let pipelines = Pipelines::new(gpu, small).await?;
        let ids = gpu.create_buffer(jb, "token ids").await?;
        let step = gpu
            .scoped("allocating the step uniform", || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("step"),
                    size: std::mem::size_of::<Step>() as u64,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .await?;
        let rows = gpu.create_buffer(jb * w, "embedding rows").await?;
        let profile = options.profile;
        let act = Activations {
            step,
            x: gpu.create_buffer(jb * w, "residual").await?,
            hn: gpu.create_buffer(jb * w, "normed").await?,
            qkv: gpu.create_buffer(jb * qkv_stride, "qkv").await?,
            qkv_stride,
            q: gpu.create_buffer(jb * h * kl, "queries").await?,
            att: gpu.create_buffer(jb * h * vl, "attention").await?,
            // Shares run only for steps of fewer than ATTENTION_SPLIT_BELOW workgroups of
            // attention_columns columns.
            part: gpu
                .create_buffer(
                    (ATTENTION_SPLIT_BELOW * attention_columns(position_shares(small))) as u64
                        * h
                        * ATTENTION_SPLITS as u64
                        * (vl + 2),
                    "attention shares",
                )
                .await?,
            position_shares: position_shares(small),
            o: gpu.create_buffer(jb * w, "block output").await?,
            gu: gpu.create_buffer(jb * 2 * ff, "gate and up").await?,
            a: gpu.create_buffer(jb * ff, "gated").await?,
            rope: gpu.create_buffer_with(&rope_table(&mut weights, c, context)?, "rope").await?,
            absent: gpu.create_buffer(4, "absent weights").await?,
            context,
            batch,
            profile,
        };

        let mut tensors = Vec::new();
        let mut buffers = Vec::new();
        let (embd, _) = weights.tensor("token_embd.weight")?;
        let gather =
            gpu.bind_gather(&embd, DeviceSlice::new(&ids, 0, jb), DeviceSlice::new(&rows, 0, w), batch).await?;
        let attn_norm0 = upload_f32(gpu, &mut weights, "blk.0.attn_norm.weight").await?;
        let embed = pipelines
            .bind(
                gpu,
                ModelKernel::Norm,
                &act.step,
                &Norm { width: w as u32, mode: 0, shifted: 0, eps: c.rms_epsilon, scale: c.embedding_scale },
                &[&rows, &attn_norm0, &attn_norm0, &act.x, &act.hn],
            )
            .await?;
        buffers.push(attn_norm0);
        on_step(LoadStep::Uploaded { done: 1, of: uploads });

        // A block at a time: its weights uploaded, its work bound, then the next.
        let mut blocks = Vec::with_capacity(c.blocks);
        for b in 0..c.blocks {
            let next = match b + 1 == c.blocks {
                true => "output_norm.weight".to_string(),
                false => format!("blk.{}.attn_norm.weight", b + 1),
            };
            let next_norm = upload_f32(gpu, &mut weights, &next).await?;
            let (block, held) = Block::bind(gpu, &mut weights, c, b, &act, &pipelines, &next_norm).await?;
            blocks.push(block);
            tensors.extend(held.tensors);
            buffers.extend(held.buffers.into_iter().chain([next_norm]));
            on_step(LoadStep::Uploaded { done: b + 2, of: uploads });
        }
        let head_tensor = match c.separate_head {
            true => weights.tensor("output.weight")?.0,
            false => embd,
        };
        // One column's logits: what generation needs; every column's are bound on first use.
        let head = HeadInputs {
            weights: &head_tensor,
            profile,
            normed: &act.hn,
            width: w,
            vocab: c.vocab as u64,
            pipelines: &pipelines,
            step: &act.step,
            softcap: c.final_logit_softcap,
        };
        let one = Logits::bind(gpu, &head, 1).await?;
        on_step(LoadStep::Uploaded { done: uploads, of: uploads });
        tensors.push(head_tensor);
        let head_at = tensors.len() - 1;
        let Activations { step, x, hn, qkv, q, att, part, o, gu, a, rope, absent, .. } = act;
        buffers.extend([rows, x, qkv, q, att, part, o, gu, a, rope, absent]);
        Ok(GpuForward {
            gpu: on,
            config: c.clone(),
            context,
            batch,
            head_columns,
            position: 0,
            ids,
            step,
            one,
            all: None,
            normed: hn,
            head_at,
            profile,
            pipelines,
            gather,
            embed,
            blocks,
            _tensors: tensors,
            _buffers: buffers,
        })
    }

    /// Device memory this model holds: weights, KV cache, activations, logits and read-back.
    pub fn device_bytes(&self) -> u64 {
        let tensors: u64 = self
            ._tensors
            .iter()
            .map(|t| (0..t.placement().segments.len()).map(|i| t.buffer(i).size()).sum::<u64>())
            .sum();
        let buffers: u64 = self._buffers.iter().map(wgpu::Buffer::size).sum();
        let logits = self.one.bytes() + self.all.as_ref().map_or(0, Logits::bytes);
        tensors + buffers + logits + [&self.ids, &self.step, &self.normed].iter().map(|b| b.size()).sum::<u64>()
    }

    /// Positions the KV cache holds.
    pub fn context(&self) -> usize {
        self.context
    }

    /// The configuration the forward was loaded with.
    /// The products' arithmetic this forward was bound for.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Tokens seen since the last reset: the next token's position.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Forgets every token (the cache is overwritten from position 0).
    pub fn reset(&mut self) {
        self.position = 0;
    }

    /// Runs `tokens` from the current position: the last token's logits ([`Keep::Last`]) or
    /// every token's, [token][vocab] back to back ([`Keep::All`]).
    pub async fn forward(&mut self, tokens: &[u32], keep: Keep) -> Result<Vec<f32>> {
        check_run(&self.config, tokens, self.position, self.context)?;
        let chunk = match keep {
            Keep::Last => self.batch,
            Keep::All => self.head_columns,
        } as usize;
        let mut out = Vec::new();
        let count = tokens.len().div_ceil(chunk);
        for (i, part) in tokens.chunks(chunk).enumerate() {
            let kept = match (keep, i + 1 == count) {
                (Keep::All, _) => part.len(),
                (Keep::Last, true) => 1,
                (Keep::Last, false) => 0,
            };
            out.extend(self.step(part, kept).await?);
        }
        Ok(out)
    }

    /// One submission: `tokens` at the current position, the logits of the last `kept` of them.
    async fn step(&mut self, tokens: &[u32], kept: usize) -> Result<Vec<f32>> {
        if kept > 1 && self.all.is_none() {
            let c = &self.config;
            let head = HeadInputs {
                weights: &self._tensors[self.head_at],
                profile: self.profile,
                normed: &self.normed,
                width: c.width as u64,
                vocab: c.vocab as u64,
                pipelines: &self.pipelines,
                step: &self.step,
                softcap: c.final_logit_softcap,
            };
            self.all = Some(Logits::bind(&self.gpu, &head, self.head_columns).await?);
        }
        let gpu: &Gpu = &self.gpu;
        let out = match (kept, &self.all) {
            (0 | 1, _) | (_, None) => &self.one,
            (_, Some(all)) => all,
        };
        let j = tokens.len() as u32;
        let out_from = j - kept as u32;
        gpu.write(&self.ids, 0, tokens)?;
        let step = Step { columns: j, pos0: self.position as u32, out_from, pad: 0 };
        gpu.write(&self.step, 0, bytemuck::cast_slice::<Step, u32>(&[step]))?;
        let c = &self.config;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        self.record(&mut encoder, out, j, kept as u32, &|_| true)?;
        let bytes = kept as u64 * c.vocab as u64 * 4;
        if bytes > 0 {
            encoder.copy_buffer_to_buffer(&out.logits, 0, &out.staging, 0, bytes);
        }
        gpu.submit(encoder).await?;
        self.position += tokens.len();
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let words = gpu.read_mapped(&out.staging, bytes).await?;
        let logits: Vec<f32> = bytemuck::pod_collect_to_vec(&words);
        super::weights::check_logits(&logits, c.vocab, self.position - kept)?;
        Ok(logits)
    }

    /// Records a step's dispatches of the kinds `keep` takes into one pass: `j` columns, the
    /// logits of the last `kept` into `out`. Returns how many it recorded.
    fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        out: &Logits,
        j: u32,
        kept: u32,
        keep: &dyn Fn(DispatchKind) -> bool,
    ) -> Result<u32> {
        let c = &self.config;
        let mut pass = encoder.begin_compute_pass(&Default::default());
        let p = &mut pass;
        let mut n = 0;
        if keep(DispatchKind::Gather) {
            self.gather.record(p, j)?;
            n += 1;
        }
        if keep(DispatchKind::Embed) {
            self.embed.record(p, j, 1);
            n += 1;
        }
        // The positions the step's last column attends to, itself included.
        let positions = (self.position as u32).saturating_add(j);
        for b in &self.blocks {
            n += b.record(p, c, j, positions, keep)?;
        }
        if kept > 0 && keep(DispatchKind::Head) {
            out.head.record(p, kept)?;
            n += 1;
            if let Some(softcap) = &out.softcap {
                softcap.record(p, (c.vocab as u32).div_ceil(LLM_WG), kept);
                n += 1;
            }
        }
        Ok(n)
    }
}
