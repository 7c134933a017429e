//! The output head as the GPU forward binds it: the head's product into a logits buffer of some
//! columns, the final soft-cap where the model has one, and the buffer the logits are read back
//! through (docs/llm.md#the-output-head).

use super::kernels::{Dispatch, ModelKernel, Pipelines};
use super::uniforms::Softcap;
use crate::error::Result;
use crate::gpu::{BoundOp, DeviceSlice, Gpu, GpuTensor, Profile};

/// A head bound to a logits buffer of some columns, with the read-back buffer it is copied to,
/// and the final soft-cap where the model has one.
pub(super) struct Logits {
    pub(super) head: BoundOp,
    pub(super) softcap: Option<Dispatch>,
    pub(super) logits: wgpu::Buffer,
    pub(super) staging: wgpu::Buffer,
}

/// What binds a head: its weights and input, the model's kernels and the soft-cap.
pub(super) struct HeadInputs<'a> {
    pub(super) weights: &'a GpuTensor,
    pub(super) profile: Profile,
    pub(super) normed: &'a wgpu::Buffer,
    pub(super) width: u64,
    pub(super) vocab: u64,
    pub(super) pipelines: &'a Pipelines,
    pub(super) step: &'a wgpu::Buffer,
    pub(super) softcap: Option<f32>,
}

impl Logits {
    /// The head bound for up to `columns` columns of logits.
    pub(super) async fn bind(gpu: &Gpu, head: &HeadInputs<'_>, columns: u32) -> Result<Logits> {
        let HeadInputs { weights, profile, normed, width, vocab, .. } = *head;
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
        let head_op = gpu.bind_matmul(weights, profile, x, DeviceSlice::new(&logits, 0, vocab), columns).await?;
        let softcap = match head.softcap {
            Some(cap) => {
                let uniform = Softcap { count: vocab as u32, cap };
                Some(head.pipelines.bind(gpu, ModelKernel::Softcap, head.step, &uniform, &[&logits]).await?)
            }
            None => None,
        };
        Ok(Logits { head: head_op, softcap, logits, staging })
    }

    pub(super) fn bytes(&self) -> u64 {
        self.logits.size() + self.staging.size()
    }
}
