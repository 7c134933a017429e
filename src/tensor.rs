//! `EncodedTensor`: where every path meets — a format, a layout, a logical shape, `divisors` and
//! the payload bytes exactly as stored (borrowed or memory-mapped; never copied to be checked).

use crate::error::Result;
use crate::format::Format;
use crate::layout::{self, Layout, PayloadGeometry};
use crate::words::LogicalWords;
use std::borrow::Cow;
use std::ops::Range;

/// What a tensor is, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorDesc {
    pub format: Format,
    pub layout: Layout,
    /// The logical shape, never padded.
    pub shape: Vec<usize>,
    /// nvfp4's number of stacked source matrices; 1 for every other format.
    pub divisors: usize,
}

impl TensorDesc {
    pub fn new(format: Format, layout: Layout, shape: &[usize]) -> Self {
        TensorDesc { format, layout, shape: shape.to_vec(), divisors: 1 }
    }

    pub fn with_divisors(mut self, divisors: usize) -> Self {
        self.divisors = divisors;
        self
    }

    /// Checks every shape rule and derives the byte geometry.
    pub fn geometry(&self) -> Result<PayloadGeometry> {
        PayloadGeometry::new(self.format, self.layout, &self.shape, self.divisors)
    }

    /// The layout's exact encoded size for this shape.
    pub fn encoded_bytes(&self) -> Result<usize> {
        self.geometry().map(|g| g.bytes())
    }

    /// Number of logical elements; `None` when the product overflows.
    pub fn elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }
}

/// A tensor whose every word and padding byte obeys its format and layout: the only form that
/// reaches a kernel (see [`EncodedTensor::validate`] and [`EncodedTensor::trusted`]).
#[derive(Debug, Clone, Copy)]
pub struct Validated<'t, 'a> {
    tensor: &'t EncodedTensor<'a>,
}

impl<'a> std::ops::Deref for Validated<'_, 'a> {
    type Target = EncodedTensor<'a>;
    fn deref(&self) -> &EncodedTensor<'a> {
        self.tensor
    }
}

/// A tensor's description and its stored payload, with the size already checked.
///
/// Construction checks the (format, layout) pair, the shape rules and the exact size; it does not
/// scan words (the reference: a runtime uploads without rescanning what producers established).
/// [`EncodedTensor::validate`] checks every word and padding byte when wanted.
#[derive(Debug, Clone)]
pub struct EncodedTensor<'a> {
    desc: TensorDesc,
    geometry: PayloadGeometry,
    payload: Cow<'a, [u8]>,
}

impl<'a> EncodedTensor<'a> {
    pub fn new(desc: TensorDesc, payload: impl Into<Cow<'a, [u8]>>) -> Result<Self> {
        let geometry = desc.geometry()?;
        let payload = payload.into();
        if payload.len() != geometry.bytes() {
            return Err(crate::Error::PayloadSize {
                layout: desc.layout.name(),
                shape: desc.shape.clone(),
                expected: geometry.bytes() as u64,
                actual: payload.len() as u64,
            });
        }
        Ok(EncodedTensor { desc, geometry, payload })
    }

    /// Encodes valid logical words; invalid words are refused.
    pub fn encode(words: &LogicalWords, layout: Layout) -> Result<EncodedTensor<'static>> {
        let (geometry, payload) = layout::encode(words, layout)?;
        let desc = TensorDesc { format: words.format(), layout, shape: words.shape(), divisors: words.divisors() };
        Ok(EncodedTensor { desc, geometry, payload: Cow::Owned(payload) })
    }

    pub fn desc(&self) -> &TensorDesc {
        &self.desc
    }

    pub fn format(&self) -> Format {
        self.desc.format
    }

    pub fn layout(&self) -> Layout {
        self.desc.layout
    }

    pub fn shape(&self) -> &[usize] {
        &self.desc.shape
    }

    pub fn geometry(&self) -> &PayloadGeometry {
        &self.geometry
    }

    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// Checks every word rule of the format and every canonical padding byte of the layout; the
    /// proof is what an upload takes. A fast scan per layout decides; when it finds anything, the
    /// word-by-word reference path names the rule and the place.
    pub fn validate(&self) -> Result<Validated<'_, 'a>> {
        layout::validate(&self.geometry, &self.desc.shape, &self.payload)?;
        Ok(Validated { tensor: self })
    }

    /// Skips the rescan for a tensor whose producer established validity itself — this crate's
    /// encoders (`EncodedTensor::encode` refuses invalid words and writes canonical padding).
    /// Never for bytes that came from a file.
    pub fn trusted(&self) -> Validated<'_, 'a> {
        Validated { tensor: self }
    }

    /// Validates and returns the logical words.
    pub fn decode(&self) -> Result<LogicalWords> {
        layout::decode(&self.geometry, &self.desc.shape, &self.payload)
    }

    /// Consecutive rows `[start, end)` as a standalone tensor (words copied, never changed).
    pub fn slice_rows(&self, rows: Range<usize>) -> Result<EncodedTensor<'static>> {
        let total = self.geometry.rows().unwrap_or(0);
        if rows.start >= rows.end || rows.end > total {
            return Err(crate::Error::Shape {
                layout: self.desc.layout.name(),
                rule: "a row slice is a non-empty range of existing rows",
                detail: format!("rows {rows:?} of {total}"),
            });
        }
        let picked: Vec<usize> = rows.collect();
        self.select(&picked)
    }

    /// The chosen rows (ids, as gathers take them), in the given order, as a standalone tensor.
    pub fn gather_rows(&self, rows: &[u32]) -> Result<EncodedTensor<'static>> {
        let picked: Vec<usize> = rows.iter().map(|&r| r as usize).collect();
        self.select(&picked)
    }

    fn select(&self, rows: &[usize]) -> Result<EncodedTensor<'static>> {
        let (shape, divisors, payload) = layout::select_rows(&self.geometry, &self.desc.shape, &self.payload, rows)?;
        let desc = TensorDesc { format: self.desc.format, layout: self.desc.layout, shape, divisors };
        EncodedTensor::new(desc, payload)
    }

    /// The description and the payload as held (borrowed or owned), without a copy.
    pub fn into_parts(self) -> (TensorDesc, Cow<'a, [u8]>) {
        (self.desc, self.payload)
    }

    /// An owned copy that outlives the borrowed payload.
    pub fn into_owned(self) -> EncodedTensor<'static> {
        EncodedTensor { desc: self.desc, geometry: self.geometry, payload: Cow::Owned(self.payload.into_owned()) }
    }
}
