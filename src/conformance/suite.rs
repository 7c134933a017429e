//! The suite: which cases a run owes on a platform ([`plan`]), each case on fresh random words
//! uploaded and run on the GPU, and its judging by [`super::criteria`].

use super::criteria::{judge_l2_together, judge_words};
use super::engine::ENGINE_COLUMNS;
use super::judge::{flushes, judge_product, Product};
use super::{blank, CaseResult, Tier, COLUMNS};
use crate::error::Result;
use crate::format::{Format, Geometry};
use crate::gpu::capability::{self, Status};
use crate::gpu::{Gpu, GpuTensor, Op, Platform, Variant};
use crate::oracle::{self, Dequantized};
use crate::tensor::EncodedTensor;
use crate::testgen::{random_activation, random_words, Rng, Words};

/// The shapes of a format's cases.
pub fn shapes(format: Format, tier: Tier) -> Vec<Vec<usize>> {
    let mut s: Vec<Vec<usize>> = match format.spec().geometry {
        Geometry::BlockScaled { .. } => vec![vec![128, 64], vec![256, 128], vec![384, 192]],
        Geometry::Direct { .. } => {
            vec![vec![1, 1], vec![3, 5], vec![5, 33], vec![9, 1000], vec![2, 3, 5], vec![], vec![7]]
        }
        Geometry::Grouped { .. } | Geometry::RowScaled { .. } => {
            vec![vec![1, 1], vec![1, 64], vec![3, 65], vec![6, 200], vec![67, 1000], vec![13, 4304]]
        }
        Geometry::Block { values, .. } => {
            vec![vec![1, values], vec![3, 2 * values], vec![67, 1024], vec![5, 4096 + values]]
        }
    };
    if tier == Tier::Slow && !s.is_empty() {
        // N >= 4096 and K >= 14336; divisible by nvfp4's 128 rows and 64 columns and by every
        // ggml block.
        s.push(vec![4096, 14336]);
    }
    s
}

/// The divisors used for an nvfp4 shape: one per 128 rows up to three, to cover stacking.
pub(super) fn divisors(format: Format, shape: &[usize]) -> usize {
    match (format, shape) {
        (Format::Nvfp4, [n, _]) => [3, 2, 1].into_iter().find(|d| n % (128 * d) == 0).unwrap_or(1),
        _ => 1,
    }
}

pub(super) fn oracle_words(t: &EncodedTensor) -> Result<Vec<u32>> {
    Ok(match oracle::dequant(t)? {
        Dequantized::F32(v) => v.into_iter().map(f32::to_bits).collect(),
        Dequantized::I32(v) => v.into_iter().map(|i| i as u32).collect(),
    })
}

/// Dequantizes `tensor` on the GPU and judges it against the oracle (exact, or bounded for nvfp4).
pub async fn check_dequant(gpu: &Gpu, tensor: &EncodedTensor<'_>) -> Result<CaseResult> {
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    dequant_on(gpu, tensor, &uploaded).await
}

pub(super) async fn dequant_on(gpu: &Gpu, tensor: &EncodedTensor<'_>, uploaded: &GpuTensor) -> Result<CaseResult> {
    let format = tensor.format();
    let mut result = blank(format, Op::Dequant, Variant::Workgroup, tensor.shape());
    let expect = oracle_words(tensor)?;
    let got = gpu.dequant(uploaded).await?;
    judge_words(&mut result, flushes(gpu), format, &expect, &got);
    Ok(result)
}

/// Gathers `rows` on the GPU and judges them like dequant of those rows.
pub async fn check_gather(gpu: &Gpu, tensor: &EncodedTensor<'_>, rows: &[u32]) -> Result<CaseResult> {
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    gather_on(gpu, tensor, &uploaded, rows).await
}

pub(super) async fn gather_on(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    uploaded: &GpuTensor,
    rows: &[u32],
) -> Result<CaseResult> {
    let format = tensor.format();
    let mut result = blank(format, Op::Gather, Variant::Workgroup, tensor.shape());
    result.columns = rows.len();
    let expect = match oracle::gather(tensor, rows)? {
        Dequantized::F32(v) => v.into_iter().map(f32::to_bits).collect::<Vec<_>>(),
        Dequantized::I32(v) => v.into_iter().map(|i| i as u32).collect(),
    };
    let got = gpu.gather(uploaded, rows).await?;
    judge_words(&mut result, flushes(gpu), format, &expect, &got);
    Ok(result)
}

/// `Y = W X` on the GPU with `variant` for `columns` activation vectors, judged by A32 against
/// the f64 oracle, output by output.
pub async fn check_matmul(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    xs: &[f32],
    columns: usize,
    variant: Variant,
) -> Result<CaseResult> {
    check_product(gpu, tensor, xs, columns, Op::Matmul, variant).await
}

/// A product op (A32 `matmul` or A8 `matmul_a8`) judged by its profile's criterion.
pub async fn check_product(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    xs: &[f32],
    columns: usize,
    op: Op,
    variant: Variant,
) -> Result<CaseResult> {
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    matmul_on(gpu, tensor, &uploaded, &Product { xs, columns, op, variant }).await
}

pub(super) async fn matmul_on(
    gpu: &Gpu,
    tensor: &EncodedTensor<'_>,
    uploaded: &GpuTensor,
    p: &Product<'_>,
) -> Result<CaseResult> {
    let got = gpu.product(uploaded, p.xs, p.columns, p.op, p.variant).await?;
    judge_product(gpu, tensor, p, &got)
}

/// `y = W x`: matmul with one column.
pub async fn check_matvec(gpu: &Gpu, tensor: &EncodedTensor<'_>, x: &[f32], variant: Variant) -> Result<CaseResult> {
    check_matmul(gpu, tensor, x, 1, variant).await
}

/// Rows for a gather case of N rows: the last row, the first, repeats and random rows.
pub fn gather_rows(n: usize, rng: &mut Rng) -> Vec<u32> {
    let last = n.saturating_sub(1) as u32;
    let mut rows = vec![last, 0, last];
    for _ in 0..(2 * n).min(40) {
        rows.push(rng.below(n as u64) as u32);
    }
    rows.push(rows[3 % rows.len()]);
    rows
}

/// Runs one (format, op, variant, shape) case on fresh random words; `columns` is matmul's J.
pub async fn run_case(
    gpu: &Gpu,
    format: Format,
    op: Op,
    variant: Variant,
    shape: &[usize],
    columns: usize,
    rng: &mut Rng,
) -> Result<CaseResult> {
    let words = match op {
        Op::Dequant | Op::Gather => Words::All,
        Op::Matmul | Op::MatmulA8 => Words::Finite,
    };
    let logical = random_words(format, shape, divisors(format, shape), rng, words)?;
    let tensor = EncodedTensor::encode(&logical, format.layout())?;
    match op {
        Op::Dequant => check_dequant(gpu, &tensor).await,
        Op::Gather => {
            let rows = gather_rows(shape[0], rng);
            check_gather(gpu, &tensor, &rows).await
        }
        Op::Matmul | Op::MatmulA8 => {
            let xs = random_activation(*shape.last().unwrap_or(&1) * columns, rng);
            check_product(gpu, &tensor, &xs, columns, op, variant).await
        }
    }
}

/// A bound-op case on fresh random words (see [`super::engine`]).
pub async fn run_bound_case(
    gpu: &Gpu,
    format: Format,
    op: Op,
    variant: Variant,
    shape: &[usize],
    records: &[usize],
    rng: &mut Rng,
) -> Result<CaseResult> {
    let logical = random_words(format, shape, divisors(format, shape), rng, Words::Finite)?;
    let tensor = EncodedTensor::encode(&logical, format.layout())?;
    super::engine::check_bound_products(gpu, &tensor, op, variant, Default::default(), records, rng).await
}

/// One case of a conformance run: a (format, op, variant), a shape, and matmul's J (1 for the
/// other ops).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedCase {
    pub format: Format,
    pub op: Op,
    pub variant: Variant,
    pub shape: Vec<usize>,
    pub columns: usize,
    /// A bound-op case ([`super::engine`]): the column counts recorded in one submission;
    /// empty for a host-slice case.
    pub records: Vec<usize>,
}

/// The shape of a format's bound-op case: its smallest rank-2 case shape of more than one row.
fn engine_shape(format: Format) -> Option<Vec<usize>> {
    shapes(format, Tier::Fast).into_iter().filter(|s| s.len() == 2 && s[0] > 1).min_by_key(|s| s[0] * s[1])
}

/// Every case a run of `formats` on `platform` owes, in run order: each (op, variant) the
/// capability table supports, each shape of the tier (products and gather on rank-2 shapes
/// only), each column count of a product. Pure, so a report can hold [`run`] to it: fewer
/// results than planned cases is a failure, not a smaller pass (see [`Report::shortfall`]).
pub fn plan(formats: &[Format], platform: &Platform, tier: Tier) -> Vec<PlannedCase> {
    let mut planned = Vec::new();
    for &format in formats {
        let layout = format.layout();
        for op in Op::ALL {
            for variant in Variant::ALL {
                if capability::status(format, layout, op, variant, Some(platform)) != Status::Supported {
                    continue;
                }
                let column_set: &[usize] = match op {
                    Op::Matmul | Op::MatmulA8 => &COLUMNS,
                    Op::Dequant | Op::Gather => &[1],
                };
                for shape in shapes(format, tier) {
                    let runs = match op {
                        Op::Dequant => true,
                        Op::Matmul | Op::MatmulA8 | Op::Gather => shape.len() == 2,
                    };
                    if runs {
                        planned.extend(column_set.iter().map(|&columns| PlannedCase {
                            format,
                            op,
                            variant,
                            shape: shape.clone(),
                            columns,
                            records: Vec::new(),
                        }));
                    }
                }
                // Bound ops with the variant an engine gets: one case of every engine count.
                let engine = op.is_product() && variant == capability::best_variant(format, op, platform);
                if let (true, Some(shape)) = (engine, engine_shape(format)) {
                    let records = ENGINE_COLUMNS.to_vec();
                    planned.push(PlannedCase { format, op, variant, shape, columns: records.iter().sum(), records });
                }
            }
        }
    }
    planned
}

/// Runs every case of `planned` (from [`plan`]) on this adapter, one result per case: errors
/// become failing cases.
pub async fn run(
    gpu: &Gpu,
    planned: &[PlannedCase],
    seed: u64,
    mut progress: impl FnMut(&CaseResult),
) -> Vec<CaseResult> {
    let mut rng = Rng::new(seed);
    let mut results = Vec::new();
    for (i, case) in planned.iter().enumerate() {
        let PlannedCase { format, op, variant, ref shape, columns, ref records } = *case;
        let r = match records.is_empty() {
            true => run_case(gpu, format, op, variant, shape, columns, &mut rng).await,
            false => run_bound_case(gpu, format, op, variant, shape, records, &mut rng).await,
        };
        let r = r.unwrap_or_else(|e| CaseResult {
            criterion: "error".into(),
            max_error: f64::INFINITY,
            of_bound: f64::INFINITY,
            rel_l2: f64::INFINITY,
            l2_parts: (f64::INFINITY, 1.0),
            detail: e.to_string(),
            columns,
            records: records.clone(),
            ..blank(format, op, variant, shape)
        });
        progress(&r);
        results.push(r);
        // A (format, op, variant)'s cases are consecutive: judge them together after its last.
        let last = planned.get(i + 1).is_none_or(|next| (next.format, next.op, next.variant) != (format, op, variant));
        if op.is_product() && last {
            judge_l2_together(&mut results, format, op, variant);
        }
    }
    results
}
