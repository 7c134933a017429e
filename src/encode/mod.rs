//! Conversion methods: the reference encoders and encoded imports. Each returns the tensor with
//! its provenance (method identity and numerical parameters) for the container writer to record.
//!
//! Methods produce valid words or an error naming the rule — non-finite sources, overflowing
//! scales, illegal targets and mismatched shapes are refused, nothing is silently clipped.

pub mod convert;
pub mod direct;
pub mod fp8_row;
pub mod grouped;
pub mod import;
pub mod rules;

use crate::error::{Error, Result};
use crate::numeric::{bf16_to_f32, f16_to_f32};
use crate::tensor::EncodedTensor;
use serde::Serialize;
use std::collections::BTreeMap;

/// How a tensor's words were derived.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    /// The method's registered name (`grouped_absmax`, `fp8_row_maxabs`, `import_encoded`, …).
    pub method: &'static str,
    /// Its numerical parameters and source description.
    pub params: BTreeMap<&'static str, serde_json::Value>,
}

impl Provenance {
    pub fn new(method: &'static str) -> Self {
        Provenance { method, params: BTreeMap::new() }
    }

    pub fn with(mut self, key: &'static str, value: impl Into<serde_json::Value>) -> Self {
        self.params.insert(key, value.into());
        self
    }
}

/// A method's output: the encoded tensor and how it was made.
#[derive(Debug, Clone)]
pub struct Encoded {
    pub tensor: EncodedTensor<'static>,
    pub provenance: Provenance,
}

/// Floating-point source values of a rank-two matrix, row-major.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    F32(&'a [f32]),
    /// bf16 words: converted to binary32 exactly.
    Bf16(&'a [u16]),
    /// binary16 words: converted to binary32 exactly.
    F16(&'a [u16]),
}

impl Source<'_> {
    pub fn len(&self) -> usize {
        match self {
            Source::F32(v) => v.len(),
            Source::Bf16(v) | Source::F16(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Source::F32(_) => "f32",
            Source::Bf16(_) => "bf16",
            Source::F16(_) => "f16",
        }
    }

    /// The binary32 values (exact for bf16 and binary16), refusing any non-finite value.
    pub fn to_finite_f32(&self, method: &'static str) -> Result<Vec<f32>> {
        let values: Vec<f32> = match self {
            Source::F32(v) => v.to_vec(),
            Source::Bf16(v) => v.iter().map(|&w| bf16_to_f32(w)).collect(),
            Source::F16(v) => v.iter().map(|&w| f16_to_f32(w)).collect(),
        };
        if let Some(i) = values.iter().position(|x| !x.is_finite()) {
            return Err(Error::Words(format!(
                "{method}: source element {i} is {}: non-finite sources are refused",
                values[i]
            )));
        }
        Ok(values)
    }
}

/// Checks a positive `[n, k]` shape against the source length.
pub(crate) fn check_matrix(method: &str, n: usize, k: usize, len: usize) -> Result<()> {
    if n == 0 || k == 0 {
        return Err(Error::Words(format!("{method}: shape [{n}, {k}] must have positive dimensions")));
    }
    if n.checked_mul(k) != Some(len) {
        return Err(Error::Words(format!(
            "{method}: shape [{n}, {k}] needs {} values, got {len}",
            n.saturating_mul(k)
        )));
    }
    Ok(())
}
