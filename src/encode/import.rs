//! import_encoded: copies already-encoded words without requantizing or canonicalizing them,
//! then validates them as the target format. A refusal names the rule the source broke.

use super::{Encoded, Provenance};
use crate::error::{Error, Result};
use crate::format::{Format, Geometry};
use crate::layout::{row_split, Layout, PayloadGeometry};
use crate::tensor::{EncodedTensor, TensorDesc};
use crate::words::{Fp8RowWords, GroupedWords, LogicalWords, Nvfp4Words};

fn provenance(source: &'static str) -> Provenance {
    Provenance::new("import_encoded").with("source", source)
}

/// T2 ternary codes (signed, in [-1, 1]) and one binary16 scale per 128 columns.
pub fn t2(n: usize, k: usize, codes: &[i8], scales: &[u16]) -> Result<Encoded> {
    let words = GroupedWords { format: Format::T2G128Fp16, n, k, codes: codes.to_vec(), scales: scales.to_vec() };
    let tensor = EncodedTensor::encode(&LogicalWords::Grouped(words), Layout::RowSplitK128V1)?;
    Ok(Encoded { tensor, provenance: provenance("ternary codes and scales") })
}

/// Copies GGUF blocks `[d: binary16][codes: block_values * bits / 8 bytes]` into row_split
/// records: the block's code bytes become the group's base record, `d` its scale word; physical
/// padding groups get canonical contents. The result is validated as `format`.
fn from_gguf_blocks(
    format: Format,
    source: Format,
    n: usize,
    k: usize,
    blocks: &[u8],
) -> Result<EncodedTensor<'static>> {
    let Geometry::Block { values, bytes: block_bytes } = source.spec().geometry else {
        return Err(Error::Unsupported(format!("{source} is not a GGUF block format")));
    };
    let geometry = PayloadGeometry::new(format, Layout::RowSplitK128V1, &[n, k], 1)?;
    let PayloadGeometry::RowSplit(g) = &geometry else {
        return Err(Error::Unsupported(format!("{format} is not a row_split_k128_v1 format")));
    };
    if !k.is_multiple_of(values) || g.spec.group != values || g.spec.base_bytes != block_bytes - 2 {
        return Err(Error::Shape {
            layout: Layout::GgufBlocksV1.name(),
            rule: "K % block_values == 0 and blocks match the target's groups",
            detail: format!("{source} into {format} with K = {k}"),
        });
    }
    let per_row = k / values;
    let expected = n * per_row * block_bytes;
    if blocks.len() != expected {
        return Err(Error::PayloadSize {
            layout: Layout::GgufBlocksV1.name(),
            shape: vec![n, k],
            expected: expected as u64,
            actual: blocks.len() as u64,
        });
    }
    let mut payload = vec![0u8; g.bytes];
    let padding_code = if format == Format::Q2G64Fp16 { 0x55 } else { 0x00 };
    for row in 0..n {
        for group in 0..g.gpr {
            let rec = row * g.gpr + group;
            let base = &mut payload[rec * g.spec.base_bytes..(rec + 1) * g.spec.base_bytes];
            if group < per_row {
                let block = &blocks[(row * per_row + group) * block_bytes..][..block_bytes];
                base.copy_from_slice(&block[2..]);
                payload[g.scale_offset + 2 * rec..][..2].copy_from_slice(&block[..2]);
            } else {
                base.fill(padding_code);
            }
        }
    }
    let tensor = EncodedTensor::new(TensorDesc::new(format, Layout::RowSplitK128V1, &[n, k]), payload)?;
    tensor.validate()?;
    Ok(tensor)
}

/// GGUF Q2_0 blocks (ggml type 42) into `q2_g64_fp16`: a byte copy of codes and scale words;
/// every finite scale is kept (both zeros included), inf and NaN are refused. K % 64 == 0.
pub fn q2_from_gguf_q2_0(n: usize, k: usize, blocks: &[u8]) -> Result<Encoded> {
    let tensor = from_gguf_blocks(Format::Q2G64Fp16, Format::GgufQ2_0, n, k, blocks)?;
    Ok(Encoded { tensor, provenance: provenance("gguf_q2_0 blocks") })
}

/// GGUF q8_0 blocks into `q8_g32_fp16`: refuses scale -0, code -128, nonzero codes under a zero
/// scale and non-finite scales (the q8_g32_fp16 validity rules). K % 32 == 0.
pub fn q8_from_gguf_q8_0(n: usize, k: usize, blocks: &[u8]) -> Result<Encoded> {
    let tensor = from_gguf_blocks(Format::Q8G32Fp16, Format::GgufQ8_0, n, k, blocks)?;
    Ok(Encoded { tensor, provenance: provenance("gguf_q8_0 blocks") })
}

/// NVFP4 E2M1 codes `[N, K]` (one per byte), E4M3FN scales `[N, K/16]` and the binary32 bits of
/// each stacked source matrix's divisor, copied as they are.
pub fn nvfp4(n: usize, k: usize, codes: &[u8], scales: &[u8], divisors: &[u32]) -> Result<Encoded> {
    let words = Nvfp4Words { n, k, codes: codes.to_vec(), scales: scales.to_vec(), divisors: divisors.to_vec() };
    let tensor = EncodedTensor::encode(&LogicalWords::Nvfp4(words), Layout::BlockScaleK16M128x4V1)?;
    Ok(Encoded { tensor, provenance: provenance("nvfp4 codes, scales and divisors").with("divisors", divisors.len()) })
}

/// FP8 E4M3FN codes `[N, K]` and one multiplier word per row (bf16 or binary16, by `format`).
pub fn fp8(format: Format, n: usize, k: usize, codes: &[u8], scales: &[u16]) -> Result<Encoded> {
    let words = Fp8RowWords { format, n, k, codes: codes.to_vec(), scales: scales.to_vec() };
    let tensor = EncodedTensor::encode(&LogicalWords::Fp8Row(words), format.layout())?;
    Ok(Encoded { tensor, provenance: provenance("fp8 codes and row scales") })
}

/// GGUF q8_0 blocks as the `q8_g32_fp16` payload [`q8_from_gguf_q8_0`] makes of them, produced
/// a byte range at a time ([`Q8FromQ8_0::fill`]): an upload writes it piece by piece from where
/// the blocks lie (a memory map), never holding the whole payload on the host. The same codes
/// and scales, so the same weights bit for bit.
pub struct Q8FromQ8_0<'a> {
    blocks: &'a [u8],
    geometry: row_split::Geometry,
    per_row: usize,
}

/// The q8_g32_fp16 tensor a q8_0 import makes.
fn q8_desc(g: &row_split::Geometry) -> TensorDesc {
    TensorDesc::new(Format::Q8G32Fp16, Layout::RowSplitK128V1, &[g.n, g.k])
}

/// Rows checked at a time by [`Q8FromQ8_0::new`]: the piece it imports stays a few MB.
const CHECK_ROWS: usize = 4096;
const Q8_0_BYTES: usize = 34;

impl<'a> Q8FromQ8_0<'a> {
    /// Checks every block against q8_g32_fp16's rules by importing `CHECK_ROWS` rows at a time
    /// with [`q8_from_gguf_q8_0`] (its validator, its refusals), and keeps none of it.
    pub fn new(n: usize, k: usize, blocks: &'a [u8]) -> Result<Self> {
        let geometry = row_split::Geometry::new(Format::Q8G32Fp16, &[n, k])?;
        let per_row = k / 32;
        let row_bytes = per_row * Q8_0_BYTES;
        if !k.is_multiple_of(32) || Some(blocks.len()) != n.checked_mul(row_bytes) {
            // from_gguf_blocks names the rule broken, before it allocates anything.
            let refused = from_gguf_blocks(Format::Q8G32Fp16, Format::GgufQ8_0, n, k, blocks).err();
            return Err(refused.unwrap_or_else(|| Error::Unsupported(format!("gguf_q8_0 [{n}, {k}] blocks"))));
        }
        for rows in blocks.chunks(CHECK_ROWS * row_bytes.max(1)) {
            from_gguf_blocks(Format::Q8G32Fp16, Format::GgufQ8_0, rows.len() / row_bytes, k, rows)?;
        }
        Ok(Q8FromQ8_0 { blocks, geometry, per_row })
    }

    pub fn desc(&self) -> TensorDesc {
        q8_desc(&self.geometry)
    }

    /// The payload's length in bytes.
    pub fn len(&self) -> usize {
        self.geometry.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.geometry.bytes == 0
    }

    /// Writes payload bytes `offset..offset + out.len()` into `out`: codes from the blocks' code
    /// bytes, scales from their `d`, zeros for padding groups and between the planes. A range
    /// past [`Q8FromQ8_0::len`] is refused.
    pub fn fill(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let g = &self.geometry;
        if offset.checked_add(out.len()).is_none_or(|end| end > g.bytes) {
            return Err(Error::Unsupported(format!(
                "bytes {offset}..+{} of a {}-byte q8_g32_fp16 payload",
                out.len(),
                g.bytes
            )));
        }
        let group = g.spec.base_bytes;
        // The block of record `rec` (row-major over physical groups), if it is a logical one.
        let block = |rec: usize| {
            let (row, i) = (rec / g.gpr, rec % g.gpr);
            (i < self.per_row).then(|| &self.blocks[(row * self.per_row + i) * Q8_0_BYTES..][..Q8_0_BYTES])
        };
        let mut at = 0;
        while at < out.len() {
            let o = offset + at;
            let (from, len): (Option<&[u8]>, usize) = if o < g.base_bytes {
                let within = o % group;
                (block(o / group).map(|b| &b[2 + within..]), group - within)
            } else if o < g.scale_offset {
                (None, g.scale_offset - o)
            } else {
                let s = o - g.scale_offset;
                (block(s / 2).map(|b| &b[s % 2..2]), 2 - s % 2)
            };
            let len = len.min(out.len() - at);
            match from {
                Some(bytes) => out[at..at + len].copy_from_slice(&bytes[..len]),
                None => out[at..at + len].fill(0),
            }
            at += len;
        }
        Ok(())
    }
}

/// [`Q8FromQ8_0`]'s payload made from blocks that come a few rows at a time, in order (a
/// streamed file): each row's codes are handed on at once (the code plane comes first), its
/// scales kept — 2 of every 34 bytes — and handed on after the last row.
pub struct Q8FromQ8_0Rows {
    geometry: row_split::Geometry,
    per_row: usize,
    rows: usize,
    scales: Vec<u8>,
    codes: Vec<u8>,
    checked: bool,
}

impl Q8FromQ8_0Rows {
    /// `checked`: the caller has checked every block with [`Q8FromQ8_0::new`] (a memory map's
    /// whole table), so the rows are not checked again.
    pub fn new(n: usize, k: usize, checked: bool) -> Result<Self> {
        if !k.is_multiple_of(32) {
            return Err(Error::Shape {
                layout: Layout::GgufBlocksV1.name(),
                rule: "K % block_values == 0 and blocks match the target's groups",
                detail: format!("gguf_q8_0 into q8_g32_fp16 with K = {k}"),
            });
        }
        let geometry = row_split::Geometry::new(Format::Q8G32Fp16, &[n, k])?;
        Ok(Q8FromQ8_0Rows { per_row: k / 32, rows: 0, scales: Vec::new(), codes: Vec::new(), geometry, checked })
    }

    pub fn desc(&self) -> TensorDesc {
        q8_desc(&self.geometry)
    }

    /// The payload's length in bytes.
    pub fn bytes(&self) -> usize {
        self.geometry.bytes
    }

    /// The next whole rows of blocks: checked against q8_g32_fp16's rules ([`Q8FromQ8_0::new`],
    /// unless the caller did) and their codes handed to `out`.
    pub fn rows(&mut self, blocks: &[u8], out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let g = &self.geometry;
        let row_bytes = self.per_row * Q8_0_BYTES;
        let n = blocks.len() / row_bytes.max(1);
        if n * row_bytes != blocks.len() || self.rows + n > g.n {
            return Err(Error::Unsupported(format!(
                "{} bytes of gguf_q8_0 rows of {row_bytes} bytes after row {} of {}",
                blocks.len(),
                self.rows,
                g.n
            )));
        }
        if !self.checked {
            Q8FromQ8_0::new(n, g.k, blocks)?;
        }
        self.codes.clear();
        for row in blocks.chunks_exact(row_bytes.max(1)) {
            for i in 0..g.gpr {
                match row.get(i * Q8_0_BYTES..(i + 1) * Q8_0_BYTES) {
                    Some(block) => {
                        self.codes.extend_from_slice(&block[2..]);
                        self.scales.extend_from_slice(&block[..2]);
                    }
                    // Padding groups: zero codes under a zero scale, as `fill` makes them.
                    None => {
                        self.codes.resize(self.codes.len() + g.spec.base_bytes, 0);
                        self.scales.extend_from_slice(&[0, 0]);
                    }
                }
            }
        }
        self.rows += n;
        out(&self.codes)
    }

    /// After the last row: the bytes between the planes, the scales, and any after them.
    pub fn finish(self, out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let g = &self.geometry;
        if self.rows != g.n {
            return Err(Error::Unsupported(format!("gguf_q8_0 rows ended after {} of {}", self.rows, g.n)));
        }
        out(&vec![0; g.scale_offset - g.base_bytes])?;
        out(&self.scales)?;
        out(&vec![0; g.bytes - g.scale_offset - self.scales.len()])
    }
}
