//! `verify`: one tensor of a user's file on a GPU against the oracle, with the suite's judges.

use super::judge::Product;
use super::suite::{dequant_on, gather_on, gather_rows, matmul_on};
use super::{CaseResult, Verdict};
use crate::error::Result;
use crate::gpu::capability::{self, Status};
use crate::gpu::{Gpu, Op};
use crate::tensor::EncodedTensor;
use crate::testgen::{random_activation, Rng};
use serde::{Deserialize, Serialize};

/// Activation columns `verify` multiplies a user's matrix by.
pub const VERIFY_COLUMNS: usize = 2;

/// One tensor of a user's file checked on a GPU: its results per op, or why it was not run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TensorReport {
    pub name: String,
    pub format: String,
    pub shape: Vec<usize>,
    pub bytes: usize,
    pub results: Vec<CaseResult>,
    /// Ops the capability table rules out for this tensor on this device, with the reason.
    pub not_run: Vec<(String, String)>,
}

impl TensorReport {
    pub fn failed(&self) -> bool {
        self.results.iter().any(|r| r.verdict == Verdict::Fail)
    }
}

/// Checks one tensor of a user's file against the oracle on `gpu`: dequant by its format's
/// criterion, and for rank-2 float tensors gather (last, first, repeated and random rows) and
/// matmul with [`VERIFY_COLUMNS`] fresh random columns by A32, with the fastest variant. The
/// tensor is validated first; an invalid one is an error naming the rule.
pub async fn verify_tensor(gpu: &Gpu, name: &str, tensor: &EncodedTensor<'_>, rng: &mut Rng) -> Result<TensorReport> {
    // Validated and uploaded once; every op then runs on the same device buffers.
    let uploaded = gpu.upload(&tensor.validate()?).await?;
    let format = tensor.format();
    let mut report = TensorReport {
        name: name.to_string(),
        format: format.name().into(),
        shape: tensor.shape().to_vec(),
        bytes: tensor.payload().len(),
        results: Vec::new(),
        not_run: Vec::new(),
    };
    for op in Op::ALL {
        let variant = capability::best_variant(format, op, gpu.platform());
        if let Status::Unsupported(reason) =
            capability::status(format, tensor.layout(), op, variant, Some(gpu.platform()))
        {
            report.not_run.push((op.name().to_string(), reason));
            continue;
        }
        let result = match (op, tensor.shape()) {
            (Op::Dequant, _) => dequant_on(gpu, tensor, &uploaded).await?,
            (Op::Gather, [n, _]) => gather_on(gpu, tensor, &uploaded, &gather_rows(*n, rng)).await?,
            (Op::Matmul | Op::MatmulA8, [_, k]) => {
                let xs = random_activation(k * VERIFY_COLUMNS, rng);
                matmul_on(gpu, tensor, &uploaded, &Product { xs: &xs, columns: VERIFY_COLUMNS, op, variant }).await?
            }
            (Op::Gather | Op::Matmul | Op::MatmulA8, shape) => {
                report.not_run.push((op.name().to_string(), format!("needs a rank-2 tensor, shape is {shape:?}")));
                continue;
            }
        };
        report.results.push(result);
    }
    Ok(report)
}
