//! How the GPU forward puts a model's weights on the device: products stacked where
//! neighbours share a format, and the token table as the layout whose kernels read it fastest.

use crate::encode::import::Q8FromQ8_0;
use crate::error::Result;
use crate::format::Format;
use crate::gguf::reader::GgufFile;
use crate::gpu::{capability, BoundOp, DeviceSlice, Gpu, GpuTensor, Op, Profile, Variant};
use crate::layout::Layout;

/// Uploads the token table (the head too, when tied) or an untied head: as q8_g32_fp16 where it
/// is Q8_0 and q8_g32_fp16 holds every block — the same weights, read in fewer loads
/// (docs/llm.md#the-output-head) — else as stored.
pub(super) async fn upload_table(gpu: &Gpu, file: &GgufFile, name: &str, profile: Profile) -> Result<GpuTensor> {
    let t = file.tensor(name)?;
    let v = t.validate()?;
    let d = v.desc();
    let runs = |op| {
        let platform = Some(gpu.platform());
        capability::check(Format::Q8G32Fp16, Layout::RowSplitK128V1, op, Variant::Workgroup, platform).is_ok()
    };
    if let (&[n, k], Format::GgufQ8_0) = (&d.shape[..], d.format) {
        if runs(profile.op()) && runs(Op::Gather) {
            // A block q8_g32_fp16 cannot hold leaves the table as stored, not refused.
            if let Ok(view) = Q8FromQ8_0::new(n, k, v.payload()) {
                return gpu.upload_q8_from_q8_0(&view, profile).await;
            }
        }
    }
    gpu.upload_for(&v, profile).await
}

/// A vector the model's kernels read as f32 (a norm's gains), as its exact values.
pub(super) async fn upload_f32(gpu: &Gpu, file: &GgufFile, name: &str) -> Result<wgpu::Buffer> {
    let values = super::weights::exact_values(file, name)?;
    gpu.create_buffer_with(&values, name).await
}

/// A product's weights, as stored, arranged for `profile`.
pub(super) async fn upload_matrix(gpu: &Gpu, file: &GgufFile, name: &str, profile: Profile) -> Result<GpuTensor> {
    gpu.upload_for(&file.tensor(name)?.validate()?, profile).await
}

/// Binds the products of `names`, which read `x` and write consecutive rows of one output
/// column of `y` = (buffer, the words between its columns): each run of names in one format is
/// uploaded as one stacked tensor and bound as one product, so a block's q, k and v of one
/// format are one dispatch (docs/llm.md#the-gpu-forward).
pub(super) async fn bind_stacked(
    gpu: &Gpu,
    file: &GgufFile,
    names: &[String],
    profile: Profile,
    x: DeviceSlice<'_, f32>,
    (y, stride): (&wgpu::Buffer, u64),
    batch: u32,
) -> Result<(Vec<BoundOp>, Vec<GpuTensor>)> {
    let tensors = names.iter().map(|n| file.tensor(n)).collect::<Result<Vec<_>>>()?;
    let valid = tensors.iter().map(|t| t.validate()).collect::<Result<Vec<_>>>()?;
    let (mut ops, mut uploaded) = (Vec::new(), Vec::new());
    let (mut i, mut row) = (0, 0u64);
    while i < valid.len() {
        let format = valid[i].desc().format;
        let run = valid[i..].iter().take_while(|v| v.desc().format == format).count();
        let parts: Vec<_> = valid[i..i + run].iter().collect();
        let tensor = match parts[..] {
            [one] => gpu.upload_for(one, profile).await?,
            _ => gpu.upload_stacked(&parts, profile).await?,
        };
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
