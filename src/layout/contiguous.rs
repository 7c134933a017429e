//! `contiguous_le_v1`: direct words in C order, little-endian, no padding.

use super::{sized, Layout, RowPlane};
use crate::error::{Error, Result};
use crate::format::{Format, Geometry as FormatGeometry};
use crate::words::DirectWords;

const LAYOUT: Layout = Layout::ContiguousLeV1;
/// The container's rank limit (container.md: rank 0..16).
pub const MAX_RANK: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub format: Format,
    pub shape: Vec<usize>,
    pub elements: usize,
    pub word_bytes: usize,
    pub bytes: usize,
}

impl Geometry {
    pub fn new(format: Format, shape: &[usize]) -> Result<Self> {
        let word_bytes = match format.spec().geometry {
            FormatGeometry::Direct { bytes, .. } => bytes,
            FormatGeometry::Grouped { .. }
            | FormatGeometry::BlockScaled { .. }
            | FormatGeometry::RowScaled { .. }
            | FormatGeometry::Block { .. } => {
                return Err(Error::Shape {
                    layout: LAYOUT.name(),
                    rule: "direct formats only",
                    detail: format.to_string(),
                })
            }
        };
        if shape.len() > MAX_RANK {
            return Err(Error::Shape {
                layout: LAYOUT.name(),
                rule: "rank is 0..16",
                detail: format!("rank {}", shape.len()),
            });
        }
        if shape.contains(&0) {
            return Err(Error::Shape {
                layout: LAYOUT.name(),
                rule: "dimensions are positive",
                detail: format!("shape {shape:?}"),
            });
        }
        let elements = sized(LAYOUT, shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)))?;
        let bytes = sized(LAYOUT, elements.checked_mul(word_bytes))?;
        Ok(Geometry { format, shape: shape.to_vec(), elements, word_bytes, bytes })
    }

    pub fn encode(&self, words: &DirectWords) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes);
        for &w in &words.words {
            out.extend_from_slice(&w.to_le_bytes()[..self.word_bytes]);
        }
        out
    }

    pub fn decode(&self, payload: &[u8]) -> DirectWords {
        let words = payload
            .chunks_exact(self.word_bytes)
            .map(|c| c.iter().rev().fold(0u32, |acc, &b| (acc << 8) | b as u32))
            .collect();
        DirectWords { format: self.format, shape: self.shape.clone(), words }
    }

    /// Rows along axis 0; a rank-0 tensor has none.
    pub fn row_planes(&self) -> Option<Vec<RowPlane>> {
        let rows = *self.shape.first()?;
        Some(vec![RowPlane { name: "words", offset: 0, row_bytes: self.bytes / rows }])
    }
}
