//! Row tiles: how a payload's rows are arranged on a device whose product kernels decode whole
//! rows per invocation (a CPU driver's one-column path and every tiled product). There a SIMD
//! program's lanes each take TILED_ROW_BLOCK rows and, at each chunk, read that chunk's record
//! of every one of its rows: row by row, 32 places a row apart. In row tiles the same bytes are
//! rearranged inside each run of [`ROW_TILE`] rows so that record b of the tile's rows lie side
//! by side (record-major), and a SIMD program reads one contiguous run per chunk. A tile keeps
//! the byte range its rows take row by row, so windows, buffer splits and plane offsets stay
//! those of the stored payload; rows past the last whole tile stay row by row. Why: on lavapipe
//! the same loads took half the time side by side (docs/performance.md#row-tiles).
//!
//! The kernels find a record with `record_at` (shaders/common.wgsl) and `Params::tiled_rows`;
//! the upload rearranges the stored bytes a piece of whole tiles at a time (`arrange`).

use crate::gpu::kernels::ROW_TILE;
use crate::layout::PayloadGeometry;

/// One plane of a tiled payload: rows `stride` bytes apart from `offset`, in records of `record`
/// bytes (a GGUF block, a chunk's base or high bits, a group's binary16 scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TiledPlane {
    offset: u64,
    stride: u64,
    record: u64,
}

/// The row tiles of one payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowTiles {
    rows: u64,
    planes: Vec<TiledPlane>,
}

impl RowTiles {
    /// The tiles of a payload of `geometry`, or `None` where its layout keeps rows as they are:
    /// layouts whose kernels read records through `record_at` (gguf_blocks_v1, row_split_k128_v1,
    /// contiguous_le_v1's matrices of whole chunks), and tensors of at least one whole tile.
    pub fn of(geometry: &PayloadGeometry) -> Option<RowTiles> {
        let plane = |offset: usize, stride: usize, record: usize| TiledPlane {
            offset: offset as u64,
            stride: stride as u64,
            record: record as u64,
        };
        let (rows, planes) = match geometry {
            PayloadGeometry::Gguf(g) => (g.n, vec![plane(0, g.row_bytes, g.block_bytes)]),
            PayloadGeometry::RowSplit(g) => {
                let s = g.spec;
                // Records per chunk of 32 values: the kernels' BASE_BITS and HIGH_BITS words.
                let per_chunk = |group_bytes: usize| group_bytes * 32 / s.group;
                let mut planes = vec![plane(0, g.gpr * s.base_bytes, per_chunk(s.base_bytes))];
                if s.high_bytes > 0 {
                    planes.push(plane(g.high_offset, g.gpr * s.high_bytes, per_chunk(s.high_bytes)));
                }
                planes.push(plane(g.scale_offset, g.gpr * 2, 2));
                (g.n, planes)
            }
            // A 32-value chunk is the record (shaders/codecs/contiguous.wgsl reads a chunk at
            // a time), so rows of whole chunks only.
            PayloadGeometry::Contiguous(g) => match g.shape[..] {
                [n, k] if k % 32 == 0 => (n, vec![plane(0, k * g.word_bytes, 32 * g.word_bytes)]),
                _ => return None,
            },
            PayloadGeometry::BlockScale(_) | PayloadGeometry::RowScale(_) | PayloadGeometry::RowInterleaved(_) => {
                return None
            }
        };
        let rows = rows as u64;
        (rows >= ROW_TILE as u64).then_some(RowTiles { rows, planes })
    }

    /// Rows in whole tiles (the rest lie row by row).
    pub fn tiled_rows(&self) -> u64 {
        self.rows / ROW_TILE as u64 * ROW_TILE as u64
    }

    /// The bytes of plane `p`'s whole tiles.
    fn tiled_span(&self, p: &TiledPlane) -> std::ops::Range<u64> {
        p.offset..p.offset + self.tiled_rows() * p.stride
    }

    /// The end of a piece of the payload that starts at `from` (a tile's start or outside every
    /// tile) and ends by `end`: at most `max` bytes later, never inside a tile, except that a
    /// piece holds at least one whole tile.
    pub fn piece_end(&self, from: u64, end: u64, max: u64) -> u64 {
        let mut to = end.min(from.saturating_add(max));
        for p in &self.planes {
            let span = self.tiled_span(p);
            let tile = ROW_TILE as u64 * p.stride;
            if span.contains(&from) {
                // Whole tiles of this plane, at least one.
                let whole = ((to.min(span.end) - from) / tile).max(1);
                return from + whole * tile;
            }
            if from < span.start && to > span.start {
                // Stop where this plane's tiles begin.
                to = span.start;
            }
        }
        to
    }

    /// Rearranges `bytes`, the stored (row by row) payload from byte `from` on, ending at a
    /// [`piece_end`](Self::piece_end), into the device's order. `scratch` is reused between calls.
    pub fn arrange(&self, from: u64, bytes: &mut [u8], scratch: &mut Vec<u8>) {
        let to = from + bytes.len() as u64;
        let t = ROW_TILE as u64;
        for p in &self.planes {
            let span = self.tiled_span(p);
            let (lo, hi) = (from.max(span.start), to.min(span.end));
            if lo >= hi {
                continue;
            }
            let records = p.stride / p.record;
            let tile_bytes = (t * p.stride) as usize;
            let mut at = (lo - from) as usize;
            while at < (hi - from) as usize {
                scratch.clear();
                scratch.extend_from_slice(&bytes[at..at + tile_bytes]);
                let rec = p.record as usize;
                for b in 0..records as usize {
                    for r in 0..t as usize {
                        let src = r * p.stride as usize + b * rec;
                        let dst = at + (b * t as usize + r) * rec;
                        bytes[dst..dst + rec].copy_from_slice(&scratch[src..src + rec]);
                    }
                }
                at += tile_bytes;
            }
        }
    }

    /// Where stored byte `at` lies on the device (what `record_at` computes, for tests).
    pub fn device_offset(&self, at: u64) -> u64 {
        let t = ROW_TILE as u64;
        for p in &self.planes {
            if self.tiled_span(p).contains(&at) {
                let local = at - p.offset;
                let (row, in_row) = (local / p.stride, local % p.stride);
                let (r, b, e) = (row % t, in_row / p.record, in_row % p.record);
                return p.offset + (row - r) * p.stride + (b * t + r) * p.record + e;
            }
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::layout::Layout;
    use crate::tensor::TensorDesc;

    fn tiles(format: Format, shape: &[usize]) -> (RowTiles, u64) {
        let g = TensorDesc::new(format, format.layout(), shape).geometry().unwrap();
        (RowTiles::of(&g).expect("tiled"), g.bytes() as u64)
    }

    /// Pieces of any size limit cover the payload, never cut a tile, and their arrangement puts
    /// every stored byte where `device_offset` (the kernels' `record_at`) looks for it.
    #[test]
    fn arranged_pieces_put_every_byte_where_the_kernels_read_it() {
        for (format, shape) in [
            (Format::GgufQ5_0, vec![70, 64]),
            (Format::GgufQ4K, vec![33, 512]),
            (Format::Q8G32Fp16, vec![64, 96]),
            (Format::Q5G64Fp16, vec![40, 200]),
            (Format::Q6G64Fp16, vec![32, 128]),
            (Format::Bf16, vec![40, 96]),
        ] {
            let (tiles, len) = tiles(format, &shape);
            // Distinct-ish bytes: a byte's stored position, folded.
            let stored: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            for max in [1, 100, 4096, u64::MAX] {
                let mut device = vec![0u8; len as usize];
                let (mut from, mut scratch) = (0u64, Vec::new());
                while from < len {
                    let to = tiles.piece_end(from, len, max);
                    assert!(to > from && to <= len, "{format} {max}: piece {from}..{to}");
                    let mut piece = stored[from as usize..to as usize].to_vec();
                    tiles.arrange(from, &mut piece, &mut scratch);
                    device[from as usize..to as usize].copy_from_slice(&piece);
                    from = to;
                }
                for (at, &b) in stored.iter().enumerate() {
                    let d = tiles.device_offset(at as u64);
                    assert_eq!(device[d as usize], b, "{format} {shape:?} max {max}: stored byte {at}");
                }
            }
        }
    }

    #[test]
    fn only_record_layouts_of_a_whole_tile_are_tiled() {
        let of = |format: Format, layout: Layout, shape: &[usize]| {
            RowTiles::of(&TensorDesc::new(format, layout, shape).geometry().unwrap()).map(|t| t.tiled_rows())
        };
        assert_eq!(of(Format::GgufQ5_0, Layout::GgufBlocksV1, &[31, 64]), None);
        assert_eq!(of(Format::GgufQ5_0, Layout::GgufBlocksV1, &[70, 64]), Some(64));
        assert_eq!(of(Format::Q4G64Fp16, Layout::RowSplitK128V1, &[32, 128]), Some(32));
        // Contiguous words: matrices of whole 32-value chunks only.
        assert_eq!(of(Format::Bf16, Layout::ContiguousLeV1, &[70, 64]), Some(64));
        assert_eq!(of(Format::Fp32, Layout::ContiguousLeV1, &[64, 96]), Some(64));
        assert_eq!(of(Format::Bf16, Layout::ContiguousLeV1, &[64, 48]), None);
        assert_eq!(of(Format::Bf16, Layout::ContiguousLeV1, &[2, 32, 64]), None);
        assert_eq!(of(Format::Bf16, Layout::ContiguousLeV1, &[4096]), None);
    }
}
