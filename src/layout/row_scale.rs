//! `row_scale_v1` (fp8_e4m3fn_row_bf16): row-major codes, zero bytes up to a 256-byte boundary,
//! then one bf16 multiplier per row.

use super::{align_up, matrix, scan, sized, Layout, RowPlane};
use crate::error::Result;
use crate::format::Format;
use crate::words::Fp8RowWords;

const LAYOUT: Layout = Layout::RowScaleV1;
/// Plane alignment of layouts.md.
const PLANE_ALIGN: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub format: Format,
    pub n: usize,
    pub k: usize,
    /// `align_up(N*K, 256)`: where the bf16 multipliers start.
    pub scale_offset: usize,
    pub bytes: usize,
}

impl Geometry {
    pub fn new(format: Format, shape: &[usize]) -> Result<Self> {
        let (n, k) = matrix(LAYOUT, shape)?;
        let codes = sized(LAYOUT, n.checked_mul(k))?;
        let scale_offset = sized(LAYOUT, align_up(codes, PLANE_ALIGN))?;
        let bytes = sized(LAYOUT, n.checked_mul(2).and_then(|s| s.checked_add(scale_offset)))?;
        Ok(Geometry { format, n, k, scale_offset, bytes })
    }

    pub fn encode(&self, w: &Fp8RowWords) -> Vec<u8> {
        let mut out = vec![0u8; self.bytes];
        out[..w.codes.len()].copy_from_slice(&w.codes);
        for (n, s) in w.scales.iter().enumerate() {
            let at = self.scale_offset + 2 * n;
            out[at..at + 2].copy_from_slice(&s.to_le_bytes());
        }
        out
    }

    /// The fast validity scan (see `layout::validate`).
    pub fn scan(&self, payload: &[u8]) -> bool {
        let Some(word) = scan::row_scale_word(self.format) else { return false };
        let codes = &payload[..self.n * self.k];
        let scales = &payload[self.scale_offset..];
        scan::fp8_codes_clean(codes)
            && scan::all_zero(&payload[codes.len()..self.scale_offset])
            && codes
                .chunks_exact(self.k)
                .zip(scales.chunks_exact(2))
                .all(|(row, s)| scan::fp8_row_clean(row, u16::from_le_bytes([s[0], s[1]]), word))
    }

    pub fn decode(&self, payload: &[u8]) -> Fp8RowWords {
        let codes = payload[..self.n * self.k].to_vec();
        let scales = payload[self.scale_offset..].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        Fp8RowWords { format: self.format, n: self.n, k: self.k, codes, scales }
    }

    pub fn describe(&self, offset: usize) -> String {
        if offset < self.n * self.k {
            format!("code byte {offset} (row {}, column {})", offset / self.k, offset % self.k)
        } else if offset < self.scale_offset {
            format!("gap byte {offset} between codes and scales")
        } else {
            format!("scale byte {offset} (row {})", (offset - self.scale_offset) / 2)
        }
    }

    pub fn row_planes(&self) -> Vec<RowPlane> {
        vec![
            RowPlane { name: "codes", offset: 0, row_bytes: self.k },
            RowPlane { name: "scales", offset: self.scale_offset, row_bytes: 2 },
        ]
    }
}
