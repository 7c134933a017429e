//! The forward pass of a gemma3 model on the GPU, built on the public engine API
//! (docs/engine.md) and the model's own kernels (`kernels.rs`, `shaders/llm/`): the same graph
//! as the CPU reference (`reference.rs`). Weights stay GGUF blocks as stored; activations, the
//! KV cache and the logits stay on the device; a step (a prompt's chunk of up to `batch` tokens,
//! or one generated token) is one recorded pass, one submission and one read-back of the logits
//! it keeps.

use super::config::Gemma3Config;
use super::kernels::{Dispatch, ModelKernel, Pipelines, ATTENTION_SPLITS, HEAD_MAX, LLM_WG};
use super::uniforms::{Attention, Geglu, Heads, Norm, Step};
use super::upload::{bind_stacked, upload_f32, upload_matrix, upload_table};
use crate::error::{Error, Result};
use crate::gguf::reader::GgufFile;
use crate::gpu::{capability, BoundOp, DeviceSlice, Gpu, GpuTensor, Op, Profile, Variant};
use std::rc::Rc;

/// How a forward pass is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardOptions {
    /// The products' arithmetic (criteria.md).
    pub profile: Profile,
    /// Positions the KV cache holds; 0: the model's context, at most [`DEFAULT_CONTEXT`].
    pub context: usize,
    /// The most tokens one step takes (a prompt goes through in steps of this many columns).
    pub batch: u32,
}

/// The cache a run gets unless it asks: 4096 positions (gemma-3-270m's 18 blocks: 151 MB).
pub const DEFAULT_CONTEXT: usize = 4096;

/// The positions a run may take when `asked` for (0: the default), on the GPU and the CPU alike.
pub fn run_context(config: &Gemma3Config, asked: usize) -> Result<usize> {
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
pub fn check_run(config: &Gemma3Config, tokens: &[u32], position: usize, context: usize) -> Result<()> {
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
        ForwardOptions { profile: Profile::A32, context: 0, batch: 64 }
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

/// A head bound to a logits buffer of some columns, with the read-back buffer it is copied to.
struct Logits {
    head: BoundOp,
    logits: wgpu::Buffer,
    staging: wgpu::Buffer,
}

impl Logits {
    /// The head (`weights`, reading `normed`) bound for up to `columns` columns of `vocab`.
    async fn bind(
        gpu: &Gpu,
        weights: &GpuTensor,
        profile: Profile,
        normed: &wgpu::Buffer,
        width: u64,
        vocab: u64,
        columns: u32,
    ) -> Result<Logits> {
        let words = columns as u64 * vocab;
        let logits = gpu.create_buffer(words, "logits").await?;
        let staging = gpu
            .scoped("allocating the logits read-back", || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some("logits read-back"),
                    size: words * 4,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .await?;
        let x = DeviceSlice::new(normed, 0, width);
        let head = gpu.bind_matmul(weights, profile, x, DeviceSlice::new(&logits, 0, vocab), columns).await?;
        Ok(Logits { head, logits, staging })
    }

    fn bytes(&self) -> u64 {
        self.logits.size() + self.staging.size()
    }
}

/// One block's products and kernels. q, k and v are one to three products (each run of one
/// format stacked into one tensor: one dispatch), and so are gate and up.
struct Block {
    qkv: Vec<BoundOp>,
    o: BoundOp,
    gate_up: Vec<BoundOp>,
    down: BoundOp,
    qk_rope: Dispatch,
    attention: Dispatch,
    post_attention: Dispatch,
    geglu: Dispatch,
    post_ffw: Dispatch,
}

/// The device a forward runs on: borrowed (a native program holds its `Gpu` for the run) or
/// shared (the browser, where a model object outlives any borrow JavaScript could hold).
enum OnGpu<'g> {
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

/// A gemma3 model on one device, with its KV cache and the position it has reached.
pub struct GpuForward<'g> {
    gpu: OnGpu<'g>,
    config: Gemma3Config,
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
    gather: BoundOp,
    embed: Dispatch,
    blocks: Vec<Block>,
    /// Every weight and activation buffer, kept for the lifetime of the bound work.
    _tensors: Vec<GpuTensor>,
    _buffers: Vec<wgpu::Buffer>,
}

/// The products' tensors, checked (format, shape) before anything is uploaded.
fn product_tensors(config: &Gemma3Config) -> Vec<String> {
    let mut names = Vec::new();
    for b in 0..config.blocks {
        for s in ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"] {
            names.push(format!("blk.{b}.{s}.weight"));
        }
    }
    names
}

/// Refuses what the kernels cannot run, before any GPU work.
fn check_supported(file: &GgufFile, config: &Gemma3Config, options: &ForwardOptions, gpu: &Gpu) -> Result<()> {
    let c = config;
    if c.final_logit_softcap.is_some() {
        return Err(Error::Unsupported("final logit soft-capping is not in the GPU forward yet".into()));
    }
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
    let head = if file.info("output.weight").is_some() { "output.weight" } else { "token_embd.weight" };
    let profile_op = options.profile.op();
    for name in product_tensors(c).iter().map(String::as_str).chain([head]) {
        let t = file.tensor(name)?;
        let d = t.desc();
        capability::check(d.format, d.layout, profile_op, Variant::Workgroup, Some(gpu.platform()))
            .map_err(|e| Error::Model(format!("tensor `{name}`: {e}")))?;
    }
    let t = file.tensor("token_embd.weight")?;
    capability::check(t.desc().format, t.desc().layout, Op::Gather, Variant::Workgroup, Some(gpu.platform()))
        .map_err(|e| Error::Model(format!("tensor `token_embd.weight`: {e}")))?;
    Ok(())
}

/// The RoPE angles' (cos, sin) for every position and pair: [global, local][position][pair].
fn rope_table(c: &Gemma3Config, context: usize) -> Vec<f32> {
    let half = c.key_length / 2;
    let mut t = Vec::with_capacity(2 * context * half * 2);
    for base in [c.rope_base_global, c.rope_base_local] {
        for pos in 0..context {
            for i in 0..half {
                let theta = pos as f64 * (base as f64).powf(-2.0 * i as f64 / c.key_length as f64);
                t.extend([theta.cos() as f32, theta.sin() as f32]);
            }
        }
    }
    t
}

impl GpuForward<'static> {
    /// [`GpuForward::load`] on a shared device, which the forward keeps alive.
    pub async fn load_shared(
        gpu: Rc<Gpu>,
        file: &GgufFile,
        config: &Gemma3Config,
        options: &ForwardOptions,
    ) -> Result<GpuForward<'static>> {
        GpuForward::load_on(OnGpu::Shared(gpu), file, config, options).await
    }
}

impl<'g> GpuForward<'g> {
    /// Uploads the model's weights and binds every step's work.
    pub async fn load(
        gpu: &'g Gpu,
        file: &GgufFile,
        config: &Gemma3Config,
        options: &ForwardOptions,
    ) -> Result<GpuForward<'g>> {
        GpuForward::load_on(OnGpu::Borrowed(gpu), file, config, options).await
    }

    async fn load_on(
        on: OnGpu<'g>,
        file: &GgufFile,
        config: &Gemma3Config,
        options: &ForwardOptions,
    ) -> Result<GpuForward<'g>> {
        let gpu: &Gpu = &on;
        check_supported(file, config, options, gpu)?;
        super::weights::check_model(file, config)?;
        let c = config;
        let context = run_context(c, options.context)?;
        let batch = options.batch.min(context as u32);
        let head_columns = (gpu.max_binding() / (c.vocab as u64 * 4)).min(batch as u64) as u32;
        if head_columns == 0 {
            return Err(Error::Unsupported(format!(
                "one column of {} logits is over this adapter's {}-byte storage binding",
                c.vocab,
                gpu.max_binding()
            )));
        }
        let (w, ff, jb) = (c.width as u64, c.feed_forward as u64, batch as u64);
        let (kl, vl) = (c.key_length as u64, c.value_length as u64);
        let (h, kv) = (c.heads as u64, c.kv_heads as u64);
        let qkv_stride = h * kl + kv * kl + kv * vl;

        let pipelines = Pipelines::new(gpu).await?;
        let mut buffers = Vec::new();
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
        let x = gpu.create_buffer(jb * w, "residual").await?;
        let hn = gpu.create_buffer(jb * w, "normed").await?;
        let qkv = gpu.create_buffer(jb * qkv_stride, "qkv").await?;
        let q = gpu.create_buffer(jb * h * kl, "queries").await?;
        let att = gpu.create_buffer(jb * h * vl, "attention").await?;
        let o = gpu.create_buffer(jb * w, "block output").await?;
        let gu = gpu.create_buffer(jb * 2 * ff, "gate and up").await?;
        let a = gpu.create_buffer(jb * ff, "geglu").await?;
        let rope = gpu.create_buffer_with(&rope_table(c, context), "rope").await?;
        let f32_buffer = |name: String| async move { upload_f32(gpu, file, &name).await };

        let mut tensors = Vec::new();
        let profile = options.profile;
        let upload = |name: String| async move { upload_matrix(gpu, file, &name, profile).await };
        let embd = upload_table(gpu, file, "token_embd.weight", profile).await?;
        let gather =
            gpu.bind_gather(&embd, DeviceSlice::new(&ids, 0, jb), DeviceSlice::new(&rows, 0, w), batch).await?;
        let eps = c.rms_epsilon;
        let attn_norm0 = f32_buffer("blk.0.attn_norm.weight".into()).await?;
        let embed = pipelines
            .bind(
                gpu,
                ModelKernel::Norm,
                &step,
                &Norm { width: w as u32, mode: 0, shifted: 0, eps, scale: c.embedding_scale },
                &[&rows, &attn_norm0, &attn_norm0, &x, &hn],
            )
            .await?;
        buffers.push(attn_norm0);

        let hx = DeviceSlice::new(&hn, 0, w);
        let mut blocks = Vec::with_capacity(c.blocks);
        let mut next_norm: Option<wgpu::Buffer> = None;
        for b in 0..c.blocks {
            let name = |s: &str| format!("blk.{b}.{s}.weight");
            let (qkv_ops, qkv_tensors) = bind_stacked(
                gpu,
                file,
                &[name("attn_q"), name("attn_k"), name("attn_v")],
                profile,
                hx,
                (&qkv, qkv_stride),
                batch,
            )
            .await?;
            let (gate_up, gate_up_tensors) =
                bind_stacked(gpu, file, &[name("ffn_gate"), name("ffn_up")], profile, hx, (&gu, 2 * ff), batch).await?;
            let wo = upload(name("attn_output")).await?;
            let wd = upload(name("ffn_down")).await?;
            let k_cache = gpu.create_buffer(context as u64 * kv * kl, &format!("blk.{b} keys")).await?;
            let v_cache = gpu.create_buffer(context as u64 * kv * vl, &format!("blk.{b} values")).await?;
            let q_norm = f32_buffer(name("attn_q_norm")).await?;
            let k_norm = f32_buffer(name("attn_k_norm")).await?;
            let post_attn_w = f32_buffer(name("post_attention_norm")).await?;
            let ffn_norm = f32_buffer(name("ffn_norm")).await?;
            let post_ffw_w = f32_buffer(name("post_ffw_norm")).await?;
            let last = b + 1 == c.blocks;
            let out_norm = match last {
                true => f32_buffer("output_norm.weight".into()).await?,
                false => f32_buffer(format!("blk.{}.attn_norm.weight", b + 1)).await?,
            };
            let table = if c.local[b] { 1 } else { 0 };
            let window = match (c.local[b], c.sliding_window) {
                (true, Some(win)) => win as u32,
                _ => 0,
            };
            let heads_uniform = Heads {
                heads: h as u32,
                kv_heads: kv as u32,
                key_length: kl as u32,
                value_length: vl as u32,
                qkv_stride: qkv_stride as u32,
                context: context as u32,
                table,
                eps,
                q_scale: c.attention_scale,
            };
            let block = Block {
                qkv: qkv_ops,
                o: gpu
                    .bind_matmul(&wo, profile, DeviceSlice::new(&att, 0, h * vl), DeviceSlice::new(&o, 0, w), batch)
                    .await?,
                gate_up,
                down: gpu
                    .bind_matmul(&wd, profile, DeviceSlice::new(&a, 0, ff), DeviceSlice::new(&o, 0, w), batch)
                    .await?,
                qk_rope: pipelines
                    .bind(
                        gpu,
                        ModelKernel::QkRope,
                        &step,
                        &heads_uniform,
                        &[&qkv, &q_norm, &k_norm, &rope, &q, &k_cache, &v_cache],
                    )
                    .await?,
                attention: pipelines
                    .bind(
                        gpu,
                        ModelKernel::Attention,
                        &step,
                        &Attention {
                            heads: h as u32,
                            kv_heads: kv as u32,
                            key_length: kl as u32,
                            value_length: vl as u32,
                            window,
                        },
                        &[&q, &k_cache, &v_cache, &att],
                    )
                    .await?,
                post_attention: pipelines
                    .bind(
                        gpu,
                        ModelKernel::Norm,
                        &step,
                        &Norm { width: w as u32, mode: 1, shifted: 0, eps, scale: 0.0 },
                        &[&o, &post_attn_w, &ffn_norm, &x, &hn],
                    )
                    .await?,
                geglu: pipelines.bind(gpu, ModelKernel::Geglu, &step, &Geglu { width: ff as u32 }, &[&gu, &a]).await?,
                post_ffw: pipelines
                    .bind(
                        gpu,
                        ModelKernel::Norm,
                        &step,
                        &Norm { width: w as u32, mode: 1, shifted: last as u32, eps, scale: 0.0 },
                        &[&o, &post_ffw_w, &out_norm, &x, &hn],
                    )
                    .await?,
            };
            blocks.push(block);
            tensors.extend(qkv_tensors.into_iter().chain(gate_up_tensors).chain([wo, wd]));
            buffers.extend([k_cache, v_cache, q_norm, k_norm, post_attn_w, ffn_norm, post_ffw_w]);
            next_norm = Some(out_norm);
        }
        buffers.extend(next_norm);
        let head_tensor = match file.info("output.weight") {
            Some(_) => upload_table(gpu, file, "output.weight", profile).await?,
            None => embd,
        };
        // One column's logits: what generation needs; every column's are bound on first use.
        let one = Logits::bind(gpu, &head_tensor, profile, &hn, w, c.vocab as u64, 1).await?;
        tensors.push(head_tensor);
        let head_at = tensors.len() - 1;
        buffers.extend([rows, x, qkv, q, att, o, gu, a, rope]);
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
    pub fn config(&self) -> &Gemma3Config {
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
            let (weights, width, vocab) = (&self._tensors[self.head_at], c.width as u64, c.vocab as u64);
            let all = Logits::bind(&self.gpu, weights, self.profile, &self.normed, width, vocab, self.head_columns);
            self.all = Some(all.await?);
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
        let (heads, kv) = (c.heads as u32, c.kv_heads as u32);
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            let p = &mut pass;
            self.gather.record(p, j)?;
            self.embed.record(p, j, 1);
            for b in &self.blocks {
                for op in &b.qkv {
                    op.record(p, j)?;
                }
                b.qk_rope.record(p, heads + 2 * kv, j);
                b.attention.record_3d(p, kv * (heads / kv).div_ceil(4), j, ATTENTION_SPLITS);
                b.o.record(p, j)?;
                b.post_attention.record(p, j, 1);
                for op in &b.gate_up {
                    op.record(p, j)?;
                }
                b.geglu.record(p, (c.feed_forward as u32).div_ceil(LLM_WG), j);
                b.down.record(p, j)?;
                b.post_ffw.record(p, j, 1);
            }
            if kept > 0 {
                out.head.record(p, kept as u32)?;
            }
        }
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
}
