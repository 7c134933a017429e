//! Resolving a use: its parameter and auxiliaries as tensors, with the auxiliary rules checked
//! at first use (they need format names and, for `input_columns`, the words themselves).

use super::reader::Artifact;
use super::root::{ActivationPolicy, AuxRole, Use};
use super::{rule, violation};
use crate::error::Result;
use crate::format::{Category, Format};
use crate::oracle::{self, Dequantized};
use crate::tensor::EncodedTensor;
use std::collections::BTreeMap;

/// A use with every binding resolved. Each binding is a list of pieces whose concatenation along
/// the first axis is the logical tensor (see [`Artifact::binding`]).
#[derive(Debug)]
pub struct ResolvedUse<'a> {
    pub parameter: Vec<EncodedTensor<'a>>,
    pub input: String,
    pub activation_policy: Option<ActivationPolicy>,
    pub auxiliaries: BTreeMap<AuxRole, Vec<EncodedTensor<'a>>>,
}

/// Total elements of rank-1 pieces of one format, or `None` if a piece breaks that.
fn vector_len(pieces: &[EncodedTensor], format: Format) -> Option<usize> {
    pieces.iter().try_fold(0usize, |a, t| match t.shape() {
        [k] if t.format() == format => a.checked_add(*k),
        _ => None,
    })
}

fn describe(pieces: &[EncodedTensor]) -> String {
    pieces.iter().map(|t| format!("{} {:?}", t.format(), t.shape())).collect::<Vec<_>>().join(" + ")
}

impl Artifact {
    /// Resolves `u` and checks its auxiliaries against the parameter: the divisor is an fp32
    /// scalar; signs are bf16 `[K]`; columns are an int32 `[K]` permutation of `0..K` and only
    /// accompany a gguf parameter. `K` is the parameter's last dimension.
    pub fn resolve_use(&self, u: &Use) -> Result<ResolvedUse<'_>> {
        let parameter = self.binding(&u.parameter)?;
        let k = parameter.first().and_then(|t| t.shape().last().copied());
        let at = format!("use ({:?}, {:?})", u.parameter, u.input);
        let mut auxiliaries = BTreeMap::new();
        for (&role, b) in &u.auxiliaries {
            let pieces = self.resolve_binding(b)?;
            match role {
                AuxRole::ActivationInputDivisor => {
                    let scalar = matches!(pieces.as_slice(), [t] if t.format() == Format::Fp32 && t.desc().elements() == Some(1));
                    if !scalar {
                        return Err(violation(rule::AUX_DIVISOR, format!("{at}: {}", describe(&pieces))));
                    }
                }
                AuxRole::HadamardSigns => {
                    if k.is_none() || vector_len(&pieces, Format::Bf16) != k {
                        return Err(violation(
                            rule::AUX_HADAMARD,
                            format!("{at}: {} for K = {k:?}", describe(&pieces)),
                        ));
                    }
                }
                AuxRole::InputColumns => self.check_columns(&parameter, &pieces, k, &at)?,
            }
            auxiliaries.insert(role, pieces);
        }
        Ok(ResolvedUse { parameter, input: u.input.clone(), activation_policy: u.activation_policy, auxiliaries })
    }

    fn check_columns(
        &self,
        parameter: &[EncodedTensor],
        pieces: &[EncodedTensor],
        k: Option<usize>,
        at: &str,
    ) -> Result<()> {
        if parameter.iter().any(|t| t.format().category() != Category::GgufBlock) {
            return Err(violation(
                rule::AUX_COLUMNS,
                format!("{at}: the parameter is {}, not gguf", describe(parameter)),
            ));
        }
        let Some(k) = k.filter(|&k| vector_len(pieces, Format::Int32) == Some(k)) else {
            return Err(violation(rule::AUX_COLUMNS, format!("{at}: {} for K = {k:?}", describe(pieces))));
        };
        let mut seen = vec![false; k];
        for t in pieces {
            let Dequantized::I32(values) = oracle::dequant(t)? else {
                return Err(violation(rule::AUX_COLUMNS, format!("{at}: columns did not decode as integers")));
            };
            for v in values {
                match usize::try_from(v).ok().and_then(|i| seen.get_mut(i)) {
                    Some(slot) if !*slot => *slot = true,
                    _ => {
                        return Err(violation(
                            rule::AUX_COLUMNS,
                            format!("{at}: column {v} is out of 0..{k} or repeated"),
                        ))
                    }
                }
            }
        }
        Ok(())
    }
}
