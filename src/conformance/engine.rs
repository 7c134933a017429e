//! Bound ops as an engine uses them, judged like every product: one bound op per column count,
//! each reading its columns from a random offset and stride of one shared x buffer and writing
//! them at a random offset and stride of one shared y buffer; all recorded into one compute pass
//! (each twice, with one column and then with its count), submitted once and read back once.
//! Every word outside the slices must come back as it was written.

use super::judge::{judge_product, Product};
use super::CaseResult;
use crate::error::{Error, Result};
use crate::gpu::{BindOptions, DeviceSlice, Gpu, Op, Profile, Variant};
use crate::tensor::EncodedTensor;
use crate::testgen::{random_activation, Rng};

/// The column counts a bound-op case records in its one submission: the host kernels' sizes, one
/// past them, and prompt-sized counts.
pub const ENGINE_COLUMNS: [usize; 8] = [1, 2, 3, 8, 9, 64, 300, 512];

/// The word every y word outside the slices holds before and after (a NaN no kernel writes).
const Y_SENTINEL: u32 = 0x7fc0_beef;

/// One count's slices: where its x columns and y columns start and their strides, in elements.
struct Region {
    columns: usize,
    x_at: u64,
    x_stride: u64,
    y_at: u64,
    y_stride: u64,
}

/// Runs `op` (a product) as bound ops over `counts` and judges every output against the oracle.
/// `options` may name the crossover to the tiled kernel (default: the platform's).
pub async fn check_bound_products(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    op: Op,
    variant: Variant,
    options: BindOptions,
    counts: &[usize],
    rng: &mut Rng,
) -> Result<CaseResult> {
    let profile = match op {
        Op::Matmul => Profile::A32,
        Op::MatmulA8 => Profile::A8,
        Op::Dequant | Op::Gather => return Err(Error::Unsupported(format!("{} is not a product", op.name()))),
    };
    let (n, k) = match tensor.shape() {
        &[n, k] => (n as u64, k as u64),
        s => return Err(Error::Unsupported(format!("a bound product needs a rank-2 shape, got {s:?}"))),
    };
    // Random gaps between and inside the slices: x's offsets and strides stay on whole vec4s.
    let (mut x_end, mut y_end, mut regions) = (0u64, 0u64, Vec::new());
    for &columns in counts {
        let x_at = x_end + 4 * rng.below(8);
        let x_stride = k.div_ceil(4) * 4 + 4 * rng.below(3);
        let y_at = y_end + rng.below(37);
        let y_stride = n + rng.below(5);
        x_end = x_at + x_stride * columns as u64;
        y_end = y_at + y_stride * (columns as u64 - 1) + n;
        regions.push(Region { columns, x_at, x_stride, y_at, y_stride });
    }
    let total: usize = counts.iter().sum();
    let xs = random_activation(k as usize * total, rng);
    // x's gaps hold NaN: a kernel that read one would show it.
    let mut x_host = vec![f32::NAN; x_end as usize];
    let mut c = 0;
    for r in &regions {
        for j in 0..r.columns as u64 {
            let at = (r.x_at + j * r.x_stride) as usize;
            x_host[at..at + k as usize].copy_from_slice(&xs[c * k as usize..][..k as usize]);
            c += 1;
        }
    }
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    let x = gpu.create_buffer_with(&x_host, "conformance x").await?;
    let y = gpu.create_buffer_with(&vec![Y_SENTINEL; y_end as usize + 3], "conformance y").await?;
    let mut bound = Vec::new();
    for r in &regions {
        let xs = DeviceSlice::new(&x, r.x_at, k).with_stride(r.x_stride);
        let ys = DeviceSlice::new(&y, r.y_at, n).with_stride(r.y_stride);
        let options = BindOptions { variant: Some(variant), ..options };
        bound.push(gpu.bind_matmul_with(&uploaded, profile, options, xs, ys, r.columns as u32).await?);
    }
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        for (b, r) in bound.iter().zip(&regions) {
            b.record(&mut pass, 1)?;
            b.record(&mut pass, r.columns as u32)?;
        }
    }
    gpu.submit(encoder).await?;
    let words: Vec<u32> = gpu.read(DeviceSlice::new(&y, 0, y_end + 3), 1).await?;
    let mut got = Vec::with_capacity(n as usize * total);
    let mut outside = vec![true; words.len()];
    for r in &regions {
        for j in 0..r.columns as u64 {
            let at = (r.y_at + j * r.y_stride) as usize;
            got.extend(words[at..at + n as usize].iter().map(|&w| f32::from_bits(w)));
            outside[at..at + n as usize].iter_mut().for_each(|o| *o = false);
        }
    }
    let mut result = judge_product(gpu, tensor, &Product { xs: &xs, columns: total, op, variant }, &got)?;
    result.records = counts.to_vec();
    if let Some(i) = (0..words.len()).find(|&i| outside[i] && words[i] != Y_SENTINEL) {
        result.verdict = super::Verdict::Fail;
        result.detail = format!("y word {i}, outside every slice, was overwritten with {:#010x}", words[i]);
    }
    Ok(result)
}
