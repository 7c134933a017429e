//! `row_interleaved_v1` (fp8_e4m3fn_row_fp16): each row is its K codes then its binary16
//! multiplier, `K + 2` bytes, no padding.

use super::{matrix, scan, sized, Layout, RowPlane};
use crate::error::Result;
use crate::format::Format;
use crate::words::Fp8RowWords;

const LAYOUT: Layout = Layout::RowInterleavedV1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub format: Format,
    pub n: usize,
    pub k: usize,
    /// `K + 2`: the codes and the multiplier of one row.
    pub row_bytes: usize,
    pub bytes: usize,
}

impl Geometry {
    pub fn new(format: Format, shape: &[usize]) -> Result<Self> {
        let (n, k) = matrix(LAYOUT, shape)?;
        let row_bytes = sized(LAYOUT, k.checked_add(2))?;
        let bytes = sized(LAYOUT, n.checked_mul(row_bytes))?;
        Ok(Geometry { format, n, k, row_bytes, bytes })
    }

    pub fn encode(&self, w: &Fp8RowWords) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes);
        for (codes, scale) in w.codes.chunks_exact(self.k).zip(&w.scales) {
            out.extend_from_slice(codes);
            out.extend_from_slice(&scale.to_le_bytes());
        }
        out
    }

    pub fn decode(&self, payload: &[u8]) -> Fp8RowWords {
        let mut codes = Vec::with_capacity(self.n * self.k);
        let mut scales = Vec::with_capacity(self.n);
        for row in payload.chunks_exact(self.row_bytes) {
            codes.extend_from_slice(&row[..self.k]);
            scales.push(u16::from_le_bytes([row[self.k], row[self.k + 1]]));
        }
        Fp8RowWords { format: self.format, n: self.n, k: self.k, codes, scales }
    }

    /// The fast validity scan (see `layout::validate`).
    pub fn scan(&self, payload: &[u8]) -> bool {
        let Some(word) = scan::row_scale_word(self.format) else { return false };
        payload.chunks_exact(self.row_bytes).all(|row| {
            let (codes, s) = row.split_at(self.k);
            scan::fp8_codes_clean(codes) && scan::fp8_row_clean(codes, u16::from_le_bytes([s[0], s[1]]), word)
        })
    }

    pub fn row_planes(&self) -> Vec<RowPlane> {
        vec![RowPlane { name: "rows", offset: 0, row_bytes: self.row_bytes }]
    }
}
