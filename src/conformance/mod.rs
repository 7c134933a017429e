//! Conformance: every format × op × variant on one adapter, against the scalar oracle, judged
//! by the named criteria of `criteria.md` on fresh random words (seed printed by the caller).
//! Ops: dequant (exact or bounded), matmul with J ∈ [`COLUMNS`] activation columns (A32, J = 1
//! is matvec) and gather with repeated and last rows (judged like dequant). Async, like the GPU
//! API it drives.
//!
//! `criteria/` holds the judges (pure, tested without a GPU), `suite.rs` what a run owes and how
//! a case runs, `verify.rs` one tensor of a user's file, `report.rs` the schema all of them report
//! in.

use crate::format::Format;
use crate::gpu::{Op, Variant};
use serde::{Deserialize, Serialize};

mod criteria;
mod engine;
mod judge;
mod report;
mod suite;
mod verify;

pub use criteria::{A32_REL_L2, A8_MAX_ABSOLUTE, A8_MAX_RELATIVE, A8_SQUARED_L2, L2_MIN_OUTPUTS};
pub use engine::{check_bound_products, ENGINE_COLUMNS};
pub use report::{compare, summarize, Difference, NotRun, Report, SummaryRow, TensorOutcome, VerifyReport};
pub use suite::{
    check_dequant, check_gather, check_matmul, check_matvec, check_product, gather_rows, plan, run, run_case, shapes,
    PlannedCase,
};
pub use verify::{verify_tensor, TensorReport, VERIFY_COLUMNS};

/// Which shapes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Awkward small shapes: every CI run.
    Fast,
    /// Adds K >= 14336 and N >= 4096 (minutes on a CPU adapter).
    Slow,
}

/// The verdict of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// The platform flushed an f32 subnormal result (found by its probe): reported, not a pass.
    PlatformDeviation,
}

/// The activation column counts every conformance run covers.
pub const COLUMNS: [usize; 4] = [1, 2, 3, 8];

/// The smallest positive normal binary32, 2^-126.
const MIN_NORMAL: f64 = 1.1754943508222875e-38;

/// One case's outcome, with the measured error next to its bound. Owned text, so a saved
/// `--json` report reads back (`conformance --compare`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    pub format: String,
    pub op: String,
    pub variant: String,
    pub shape: Vec<usize>,
    /// Activation columns (matmul), gathered rows (gather), 0 for dequant.
    pub columns: usize,
    pub criterion: String,
    pub verdict: Verdict,
    /// Largest error seen: ULPs for bounded dequant, error/bound ratio for A32, 0 for exact.
    #[serde(with = "report::unbounded")]
    pub max_error: f64,
    /// The largest error as a fraction of its criterion's bound (1 = at the bound): ULPs / 3 for
    /// bounded dequant, `max_error` for A32, 0 for an exact pass, infinite for a broken one.
    #[serde(with = "report::unbounded", default)]
    pub of_bound: f64,
    /// Relative L2 error over the output (matvec).
    #[serde(with = "report::unbounded")]
    pub rel_l2: f64,
    /// `Σ (y - y_ref)^2` and `Σ y_ref^2`, for the relative L2 check over several cases.
    #[serde(skip, default)]
    pub l2_parts: (f64, f64),
    /// A8: `max|y - y_ref|` and `max|y_ref|`, for judging small cases together.
    #[serde(skip, default)]
    pub max_parts: (f64, f64),
    pub detail: String,
    /// A bound-op case: the column counts recorded in its one submission (`columns` is their
    /// sum); empty for the host-slice cases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<usize>,
}

/// A failing result of a case that has not run yet, filled in by its judge.
fn blank(format: Format, op: Op, variant: Variant, shape: &[usize]) -> CaseResult {
    CaseResult {
        format: format.name().into(),
        op: op.name().into(),
        variant: variant.name().into(),
        shape: shape.to_vec(),
        columns: 0,
        criterion: String::new(),
        verdict: Verdict::Fail,
        max_error: 0.0,
        of_bound: 0.0,
        rel_l2: 0.0,
        l2_parts: (0.0, 0.0),
        max_parts: (0.0, 0.0),
        detail: String::new(),
        records: Vec::new(),
    }
}
