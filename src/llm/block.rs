//! One block of the GPU forward: its work bound over the weights the load made, a block at a
//! time (`Block::bind`), then recorded into a step's pass (`Block::record`, by kind of dispatch:
//! [`DispatchKind`]). What the block reads and writes between kernels lives in
//! [`Activations`], shared by every block, with RoPE's table.

use super::arch::{Activation, Norms, Pairing};
use super::config::ModelConfig;
use super::ingest::Weights;
use super::kernels::{attention_columns, attention_shares, Dispatch, ModelKernel, Pipelines, LLM_WG};
use super::uniforms::{Attention, Gated, Heads, Norm};
use super::upload::{bind_stacked, upload_f32};
use crate::error::Result;
use crate::gpu::{BoundOp, DeviceSlice, Gpu, GpuTensor, Profile};

/// Writes [`DispatchKind`] from one table: each kind, in the order a step records them, with
/// the name a profile prints.
macro_rules! dispatch_kinds {
    ($($kind:ident => $name:literal,)*) => {
        /// The kinds of dispatch a step records: where a token's time goes, kind by kind
        /// ([`GpuForward::step_only`](super::GpuForward::step_only), `examples/step_profile.rs`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum DispatchKind {
            $($kind,)*
        }

        impl DispatchKind {
            /// In the order a step records them.
            pub const ALL: &'static [DispatchKind] = &[$(DispatchKind::$kind,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(DispatchKind::$kind => $name,)*
                }
            }
        }
    };
}

dispatch_kinds! {
    Gather => "gather",
    Embed => "embed (scale, first norm)",
    QkvProduct => "q, k, v products",
    QkRope => "q/k norm, RoPE, cache write",
    Attention => "attention",
    OutputProduct => "attention output product",
    PostAttentionNorm => "post-attention norm",
    GateUpProduct => "gate, up products",
    Gated => "GeGLU / SwiGLU",
    DownProduct => "down product",
    PostFfwNorm => "post-FFN norm",
    Head => "output head (+ soft-cap)",
}

/// The RoPE angles' (cos, sin) for every position and pair: [global, local][position][pair].
/// Each pair's angle as the CPU reference computes it (`reference::rope_angle`): the block's
/// base and scale, and the file's frequency factors where it has them.
pub(super) fn rope_table(weights: &mut Weights, c: &ModelConfig, context: usize) -> Result<Vec<f32>> {
    let (d, half) = (c.key_length, c.key_length / 2);
    let factors = match c.rope_factors {
        true => weights.values(super::config::ROPE_FACTORS)?,
        false => vec![1.0; half],
    };
    let mut t = Vec::with_capacity(2 * context * half * 2);
    for (base, scale) in [(c.rope_base_global, c.rope_scale_global), (c.rope_base_local, c.rope_scale_local)] {
        for pos in 0..context {
            for (i, &factor) in factors.iter().enumerate() {
                let theta = super::reference::rope_angle(pos, i, d, base, scale, factor);
                t.extend([theta.cos() as f32, theta.sin() as f32]);
            }
        }
    }
    Ok(t)
}

/// The step's buffers every block's kernels read and write, and what binds them.
pub(super) struct Activations {
    pub step: wgpu::Buffer,
    /// The residual stream, and its normed copy (every product's input).
    pub x: wgpu::Buffer,
    pub hn: wgpu::Buffer,
    /// q, k and v of each column back to back (`qkv_stride` values a column).
    pub qkv: wgpu::Buffer,
    pub qkv_stride: u64,
    /// Queries after norm and RoPE; attention's output; a product's output for the residual.
    pub q: wgpu::Buffer,
    pub att: wgpu::Buffer,
    /// The attention's position shares, before `attention_combine` joins them (CPU drivers).
    pub part: wgpu::Buffer,
    /// Whether the attention's shares are runs of positions (`kernels::position_shares`).
    pub position_shares: bool,
    pub o: wgpu::Buffer,
    /// Gate and up of each column; the activation's output.
    pub gu: wgpu::Buffer,
    pub a: wgpu::Buffer,
    /// RoPE's (cos, sin) tables: [global, local][position][pair].
    pub rope: wgpu::Buffer,
    /// Bound where a model has no such weights (q/k norms, biases, a pre-norm's gains): the
    /// kernels' flags keep it unread.
    pub absent: wgpu::Buffer,
    pub context: usize,
    pub batch: u32,
    pub profile: Profile,
}

/// One block's products and kernels. q, k and v are one to three products (each run of one
/// format stacked into one tensor: one dispatch), and so are gate and up.
pub(super) struct Block {
    qkv: Vec<BoundOp>,
    o: BoundOp,
    gate_up: Vec<BoundOp>,
    down: BoundOp,
    qk_rope: Dispatch,
    attention: Dispatch,
    /// Joins the attention's position shares, where it runs them.
    combine: Option<Dispatch>,
    /// The attention of steps of several columns, `attention_columns` a workgroup, where that
    /// is more than one (CPU drivers; `kernels::attention_columns`).
    attention_runs: Option<(Dispatch, u32)>,
    post_attention: Dispatch,
    gated: Dispatch,
    post_ffw: Dispatch,
}

/// A block's weights and buffers, held for the lifetime of its bound work.
pub(super) struct Held {
    pub tensors: Vec<GpuTensor>,
    pub buffers: Vec<wgpu::Buffer>,
}

/// The q, k and v biases of block `b` back to back, zeros where one has none (the kernel adds
/// them only when one exists): `None` where the model has no biases.
fn biases(weights: &mut Weights, c: &ModelConfig, b: usize) -> Result<Option<Vec<f32>>> {
    if !c.qkv_bias.iter().any(|&on| on) {
        return Ok(None);
    }
    let lengths = [c.heads * c.key_length, c.kv_heads * c.key_length, c.kv_heads * c.value_length];
    let mut all = Vec::with_capacity(lengths.iter().sum());
    for ((&on, part), n) in c.qkv_bias.iter().zip(["q", "k", "v"]).zip(lengths) {
        match on {
            true => all.extend(weights.values(&format!("blk.{b}.attn_{part}.bias"))?),
            false => all.extend(std::iter::repeat_n(0.0, n)),
        }
    }
    Ok(Some(all))
}

impl Block {
    /// Uploads block `b`'s weights and binds its work; `next_norm` is the gains of the norm
    /// after it (the next block's `attn_norm`, or `output_norm`).
    pub(super) async fn bind(
        gpu: &Gpu,
        weights: &mut Weights,
        c: &ModelConfig,
        b: usize,
        act: &Activations,
        pipelines: &Pipelines,
        next_norm: &wgpu::Buffer,
    ) -> Result<(Block, Held)> {
        let name = |s: &str| format!("blk.{b}.{s}.weight");
        let (profile, batch) = (act.profile, act.batch);
        let (w, ff) = (c.width as u64, c.feed_forward as u64);
        let (kl, vl, h, kv) = (c.key_length as u64, c.value_length as u64, c.heads as u64, c.kv_heads as u64);
        let hx = DeviceSlice::new(&act.hn, 0, w);
        let (qkv, mut tensors) = bind_stacked(
            gpu,
            weights,
            &[name("attn_q"), name("attn_k"), name("attn_v")],
            profile,
            hx,
            (&act.qkv, act.qkv_stride),
            batch,
        )
        .await?;
        let (gate_up, gate_up_tensors) =
            bind_stacked(gpu, weights, &[name("ffn_gate"), name("ffn_up")], profile, hx, (&act.gu, 2 * ff), batch)
                .await?;
        tensors.extend(gate_up_tensors);
        let (wo, _) = weights.tensor(&name("attn_output"))?;
        let (wd, _) = weights.tensor(&name("ffn_down"))?;
        let k_cache = gpu.create_buffer(act.context as u64 * kv * kl, &format!("blk.{b} keys")).await?;
        let v_cache = gpu.create_buffer(act.context as u64 * kv * vl, &format!("blk.{b} values")).await?;
        let mut buffers = Vec::new();
        let (q_norm, k_norm) = match c.qk_norm {
            true => (
                Some(upload_f32(gpu, weights, &name("attn_q_norm")).await?),
                Some(upload_f32(gpu, weights, &name("attn_k_norm")).await?),
            ),
            false => (None, None),
        };
        let bias = match biases(weights, c, b)? {
            Some(values) => Some(gpu.create_buffer_with(&values, &format!("blk.{b} biases")).await?),
            None => None,
        };
        let sandwich = c.norms == Norms::Sandwich;
        let (post_attn_w, post_ffw_w) = match sandwich {
            true => (
                Some(upload_f32(gpu, weights, &name("post_attention_norm")).await?),
                Some(upload_f32(gpu, weights, &name("post_ffw_norm")).await?),
            ),
            false => (None, None),
        };
        let ffn_norm = upload_f32(gpu, weights, &name("ffn_norm")).await?;
        let absent = &act.absent;
        fn or<'a>(b: &'a Option<wgpu::Buffer>, absent: &'a wgpu::Buffer) -> &'a wgpu::Buffer {
            b.as_ref().unwrap_or(absent)
        }
        let or_absent = |b| or(b, absent);
        let local = c.local[b];
        let heads = Heads {
            heads: h as u32,
            kv_heads: kv as u32,
            key_length: kl as u32,
            value_length: vl as u32,
            qkv_stride: act.qkv_stride as u32,
            context: act.context as u32,
            table: local as u32,
            eps: c.rms_epsilon,
            q_scale: c.attention_scale,
            qk_norm: c.qk_norm as u32,
            pairing: match c.pairing {
                Pairing::Halves => 0,
                Pairing::Adjacent => 1,
            },
            biased: bias.is_some() as u32,
        };
        let qk_rope = pipelines
            .bind(
                gpu,
                ModelKernel::QkRope,
                &act.step,
                &heads,
                &[
                    &act.qkv,
                    or_absent(&bias),
                    or_absent(&q_norm),
                    or_absent(&k_norm),
                    &act.rope,
                    &act.q,
                    &k_cache,
                    &v_cache,
                ],
            )
            .await?;
        let window = match (local, c.sliding_window) {
            (true, Some(win)) => win as u32,
            _ => 0,
        };
        let attention_uniform = Attention {
            heads: h as u32,
            kv_heads: kv as u32,
            key_length: kl as u32,
            value_length: vl as u32,
            window,
            softcap: c.attention_softcap.unwrap_or(0.0),
        };
        let attention_buffers = [&act.q, &k_cache, &v_cache, &act.att, &act.part];
        let attention =
            pipelines.bind(gpu, ModelKernel::Attention, &act.step, &attention_uniform, &attention_buffers).await?;
        let attention_runs = match attention_columns(act.position_shares) {
            1 => None,
            columns => Some((
                pipelines
                    .bind(gpu, ModelKernel::AttentionColumns, &act.step, &attention_uniform, &attention_buffers)
                    .await?,
                columns,
            )),
        };
        let combine = match act.position_shares {
            true => Some(
                pipelines
                    .bind(gpu, ModelKernel::AttentionCombine, &act.step, &attention_uniform, &[&act.part, &act.att])
                    .await?,
            ),
            false => None,
        };
        // A sandwich's post-norm joins the residual normed (mode 1); a pre-norm block's output
        // joins it as it is (mode 2).
        let mode = if sandwich { 1 } else { 2 };
        let residual =
            |shifted: bool| Norm { width: w as u32, mode, shifted: shifted as u32, eps: c.rms_epsilon, scale: 0.0 };
        let post_attention = pipelines
            .bind(
                gpu,
                ModelKernel::Norm,
                &act.step,
                &residual(false),
                &[&act.o, or_absent(&post_attn_w), &ffn_norm, &act.x, &act.hn],
            )
            .await?;
        let activation = match c.activation {
            Activation::GeluTanh => 0,
            Activation::Silu => 1,
        };
        let gated = pipelines
            .bind(gpu, ModelKernel::Gated, &act.step, &Gated { width: ff as u32, activation }, &[&act.gu, &act.a])
            .await?;
        let post_ffw = pipelines
            .bind(
                gpu,
                ModelKernel::Norm,
                &act.step,
                &residual(b + 1 == c.blocks),
                &[&act.o, or_absent(&post_ffw_w), next_norm, &act.x, &act.hn],
            )
            .await?;
        let block = Block {
            qkv,
            o: gpu
                .bind_matmul(&wo, profile, DeviceSlice::new(&act.att, 0, h * vl), DeviceSlice::new(&act.o, 0, w), batch)
                .await?,
            gate_up,
            down: gpu
                .bind_matmul(&wd, profile, DeviceSlice::new(&act.a, 0, ff), DeviceSlice::new(&act.o, 0, w), batch)
                .await?,
            qk_rope,
            attention,
            combine,
            attention_runs,
            post_attention,
            gated,
            post_ffw,
        };
        tensors.extend([wo, wd]);
        buffers.extend(
            [Some(k_cache), Some(v_cache), q_norm, k_norm, bias, post_attn_w, post_ffw_w, Some(ffn_norm)]
                .into_iter()
                .flatten(),
        );
        Ok((block, Held { tensors, buffers }))
    }

    /// Records the block's work for `j` token columns, the last of which attends to `positions`
    /// positions: the dispatches of the kinds `keep` takes (every kind, but in a profile);
    /// returns how many it recorded.
    pub(super) fn record(
        &self,
        p: &mut wgpu::ComputePass<'_>,
        c: &ModelConfig,
        j: u32,
        positions: u32,
        keep: &dyn Fn(DispatchKind) -> bool,
    ) -> Result<u32> {
        use DispatchKind as K;
        let (heads, kv) = (c.heads as u32, c.kv_heads as u32);
        let mut n = 0;
        let mut joined = 0;
        let mut products = |kind, ops: &[BoundOp], p: &mut wgpu::ComputePass<'_>| -> Result<()> {
            if keep(kind) {
                for op in ops {
                    op.record(p, j)?;
                    n += 1;
                }
            }
            Ok(())
        };
        products(K::QkvProduct, &self.qkv, p)?;
        if keep(K::QkRope) {
            self.qk_rope.record(p, heads + 2 * kv, j);
        }
        if keep(K::Attention) {
            let groups = kv * (heads / kv).div_ceil(4);
            let (attention, runs) = match &self.attention_runs {
                Some((kernel, columns)) if j > 1 => (kernel, j.div_ceil(*columns)),
                _ => (&self.attention, j),
            };
            let shares = attention_shares(groups, runs, positions, self.combine.is_some());
            attention.record_3d(p, groups, runs, shares);
            if let (Some(combine), true) = (&self.combine, shares > 1) {
                combine.record(p, (heads * c.value_length as u32).div_ceil(LLM_WG), j);
                joined = 1;
            }
        }
        products(K::OutputProduct, std::slice::from_ref(&self.o), p)?;
        if keep(K::PostAttentionNorm) {
            self.post_attention.record(p, j, 1);
        }
        products(K::GateUpProduct, &self.gate_up, p)?;
        if keep(K::Gated) {
            self.gated.record(p, (c.feed_forward as u32).div_ceil(LLM_WG), j);
        }
        products(K::DownProduct, std::slice::from_ref(&self.down), p)?;
        if keep(K::PostFfwNorm) {
            self.post_ffw.record(p, j, 1);
        }
        let kernels = [K::QkRope, K::Attention, K::PostAttentionNorm, K::Gated, K::PostFfwNorm];
        Ok(n + joined + kernels.into_iter().filter(|&k| keep(k)).count() as u32)
    }
}
