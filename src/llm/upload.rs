//! How the GPU forward binds the weights a load put on the device ([`Weights`]): products
//! stacked where neighbours share a format, and vectors the kernels read as f32.

use super::ingest::Weights;
use crate::error::Result;
use crate::gpu::{BoundOp, DeviceSlice, Gpu, GpuTensor, Profile};

/// A vector the model's kernels read as f32 (a norm's gains), as its exact values.
pub(super) async fn upload_f32(gpu: &Gpu, weights: &mut Weights, name: &str) -> Result<wgpu::Buffer> {
    gpu.create_buffer_with(&weights.values(name)?, name).await
}

/// Binds the products of `names`, which read `x` and write consecutive rows of one output
/// column of `y` = (buffer, the words between its columns): each run of names in one format
/// was uploaded as one stacked tensor and is bound as one product, so a block's q, k and v of
/// one format are one dispatch (docs/llm.md#the-gpu-forward).
pub(super) async fn bind_stacked(
    gpu: &Gpu,
    weights: &mut Weights,
    names: &[String],
    profile: Profile,
    x: DeviceSlice<'_, f32>,
    (y, stride): (&wgpu::Buffer, u64),
    batch: u32,
) -> Result<(Vec<BoundOp>, Vec<GpuTensor>)> {
    let (mut ops, mut uploaded) = (Vec::new(), Vec::new());
    let (mut i, mut row) = (0, 0u64);
    while i < names.len() {
        let (tensor, run) = weights.tensor(&names[i])?;
        let rows = tensor.desc().shape[0] as u64;
        ops.push(
            gpu.bind_matmul(&tensor, profile, x, DeviceSlice::new(y, row, rows).with_stride(stride), batch).await?,
        );
        uploaded.push(tensor);
        row += rows;
        i += run;
    }
    Ok((ops, uploaded))
}
