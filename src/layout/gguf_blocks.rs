//! `gguf_blocks_v1`: rows of K / block_values consecutive ggml blocks, byte for byte.

use super::{matrix, sized, Layout, RowPlane};
use crate::error::{Error, Result};
use crate::format::{Format, Geometry as FormatGeometry};

const LAYOUT: Layout = Layout::GgufBlocksV1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub format: Format,
    pub n: usize,
    pub k: usize,
    pub block_values: usize,
    pub block_bytes: usize,
    /// `(K / block_values) * block_bytes`.
    pub row_bytes: usize,
    pub bytes: usize,
}

impl Geometry {
    pub fn new(format: Format, shape: &[usize]) -> Result<Self> {
        let (n, k) = matrix(LAYOUT, shape)?;
        let (block_values, block_bytes) = match format.spec().geometry {
            FormatGeometry::Block { values, bytes } => (values, bytes),
            FormatGeometry::Direct { .. }
            | FormatGeometry::Grouped { .. }
            | FormatGeometry::BlockScaled { .. }
            | FormatGeometry::RowScaled { .. } => {
                return Err(Error::Shape {
                    layout: LAYOUT.name(),
                    rule: "gguf_* formats only",
                    detail: format.to_string(),
                })
            }
        };
        if k % block_values != 0 {
            return Err(Error::Shape {
                layout: LAYOUT.name(),
                rule: "K % block_values == 0",
                detail: format!("{format} has {block_values}-value blocks; K = {k}"),
            });
        }
        let row_bytes = sized(LAYOUT, (k / block_values).checked_mul(block_bytes))?;
        let bytes = sized(LAYOUT, n.checked_mul(row_bytes))?;
        Ok(Geometry { format, n, k, block_values, block_bytes, row_bytes, bytes })
    }

    pub fn row_planes(&self) -> Vec<RowPlane> {
        vec![RowPlane { name: "blocks", offset: 0, row_bytes: self.row_bytes }]
    }
}
