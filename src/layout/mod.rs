//! Storage layouts, byte-exact to `layouts.md`: one file per layout, one enum to name them.
//!
//! Each layout module knows its geometry, how to write logical words into bytes and how to read
//! them back. Validity rules live on the logical words ([`crate::words`]); canonical padding is
//! checked by re-encoding the decoded words and comparing bytes, so the padding rules are written
//! once — in the encoder — and the validator cannot drift from them.

pub mod block_scale;
pub mod contiguous;
pub mod gguf_blocks;
pub mod row_interleaved;
pub mod row_scale;
pub mod row_split;
mod scan;

use crate::error::{Error, Result};
use crate::format::{Format, Geometry, ScaleWord};
use crate::words::{BlockWords, LogicalWords};
use std::fmt;
use std::str::FromStr;

/// A registered storage layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    ContiguousLeV1,
    RowSplitK128V1,
    BlockScaleK16M128x4V1,
    RowScaleV1,
    RowInterleavedV1,
    GgufBlocksV1,
}

impl Layout {
    pub const ALL: [Layout; 6] = [
        Layout::ContiguousLeV1,
        Layout::RowSplitK128V1,
        Layout::BlockScaleK16M128x4V1,
        Layout::RowScaleV1,
        Layout::RowInterleavedV1,
        Layout::GgufBlocksV1,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Layout::ContiguousLeV1 => "contiguous_le_v1",
            Layout::RowSplitK128V1 => "row_split_k128_v1",
            Layout::BlockScaleK16M128x4V1 => "block_scale_k16_m128x4_v1",
            Layout::RowScaleV1 => "row_scale_v1",
            Layout::RowInterleavedV1 => "row_interleaved_v1",
            Layout::GgufBlocksV1 => "gguf_blocks_v1",
        }
    }

    /// The formats that may use this layout.
    pub fn formats(self) -> Vec<Format> {
        Format::ALL.into_iter().filter(|f| f.allows(self)).collect()
    }
}

/// The layout registry: which layouts each format may be stored in (layouts.md's closed pair
/// table). Format facts do not depend on layouts; this table maps the one to the other.
impl Format {
    /// The layouts this format may be stored in, the one its encoders write first.
    pub const fn layouts(self) -> &'static [Layout] {
        // Derived from the registry's geometry, so a new format of a known kind (a ggml type, a
        // grouped width) needs no row here; tests/foundation/registry.rs holds the result to
        // layouts.md's table.
        match self.spec().geometry {
            Geometry::Direct { .. } => &[Layout::ContiguousLeV1],
            Geometry::Grouped { .. } => &[Layout::RowSplitK128V1],
            Geometry::BlockScaled { .. } => &[Layout::BlockScaleK16M128x4V1],
            Geometry::RowScaled { scale: ScaleWord::Bf16 } => &[Layout::RowScaleV1],
            Geometry::RowScaled { scale: ScaleWord::Binary16 } => &[Layout::RowInterleavedV1],
            Geometry::Block { .. } => &[Layout::GgufBlocksV1],
        }
    }

    /// The layout this crate's encoders write the format in.
    pub const fn layout(self) -> Layout {
        self.layouts()[0]
    }

    /// Whether `layout` is one this format may be stored in.
    pub fn allows(self, layout: Layout) -> bool {
        self.layouts().contains(&layout)
    }

    /// Checks that this format may use `layout`, naming the allowed layout otherwise.
    pub fn check_layout(self, layout: Layout) -> Result<()> {
        if self.allows(layout) {
            return Ok(());
        }
        Err(Error::FormatLayout { format: self.name(), layout: layout.name(), allowed: self.layout().name() })
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layout {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Layout::ALL.into_iter().find(|l| l.name() == s).ok_or_else(|| Error::UnknownName {
            kind: "layout",
            name: s.to_string(),
            valid: Layout::ALL.map(|l| l.name()).join(", "),
        })
    }
}

/// `ceil(x / a) * a`, the only rounding-up of the layouts.
pub(crate) fn align_up(x: usize, a: usize) -> Option<usize> {
    x.checked_add(a - 1).map(|v| v / a * a)
}

/// Turns an overflowing size computation into a shape error instead of a wrap or a panic.
pub(crate) fn sized(layout: Layout, v: Option<usize>) -> Result<usize> {
    v.ok_or_else(|| Error::Shape {
        layout: layout.name(),
        rule: "encoded size fits in the address space",
        detail: "size computation overflows".into(),
    })
}

/// Rank-two shapes with positive dimensions, as every matrix layout requires.
pub(crate) fn matrix(layout: Layout, shape: &[usize]) -> Result<(usize, usize)> {
    match shape {
        [n, k] if *n > 0 && *k > 0 => Ok((*n, *k)),
        [_, _] => Err(Error::Shape {
            layout: layout.name(),
            rule: "dimensions are positive",
            detail: format!("shape {shape:?}"),
        }),
        _ => Err(Error::Shape {
            layout: layout.name(),
            rule: "rank is 2 ([N, K])",
            detail: format!("shape {shape:?} has rank {}", shape.len()),
        }),
    }
}

/// One region of a payload in which each row owns `row_bytes` consecutive bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowPlane {
    pub name: &'static str,
    pub offset: usize,
    pub row_bytes: usize,
}

/// The geometry of one payload, typed per layout. Derived from (format, shape, divisors) in one
/// place per layout; the GPU host reads its plane offsets from here too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadGeometry {
    Contiguous(contiguous::Geometry),
    RowSplit(row_split::Geometry),
    BlockScale(block_scale::Geometry),
    RowScale(row_scale::Geometry),
    RowInterleaved(row_interleaved::Geometry),
    Gguf(gguf_blocks::Geometry),
}

impl PayloadGeometry {
    /// Checks the (format, layout) pair, the rank and shape rules and `divisors`, then derives the
    /// geometry. Errors name the rule and the expected value.
    pub fn new(format: Format, layout: Layout, shape: &[usize], divisors: usize) -> Result<Self> {
        format.check_layout(layout)?;
        if divisors != 1 && format != Format::Nvfp4 {
            return Err(Error::Shape {
                layout: layout.name(),
                rule: "divisors is 1 except for nvfp4",
                detail: format!("{format} with divisors = {divisors}"),
            });
        }
        Ok(match layout {
            Layout::ContiguousLeV1 => PayloadGeometry::Contiguous(contiguous::Geometry::new(format, shape)?),
            Layout::RowSplitK128V1 => PayloadGeometry::RowSplit(row_split::Geometry::new(format, shape)?),
            Layout::BlockScaleK16M128x4V1 => PayloadGeometry::BlockScale(block_scale::Geometry::new(shape, divisors)?),
            Layout::RowScaleV1 => PayloadGeometry::RowScale(row_scale::Geometry::new(format, shape)?),
            Layout::RowInterleavedV1 => PayloadGeometry::RowInterleaved(row_interleaved::Geometry::new(format, shape)?),
            Layout::GgufBlocksV1 => PayloadGeometry::Gguf(gguf_blocks::Geometry::new(format, shape)?),
        })
    }

    pub fn layout(&self) -> Layout {
        match self {
            PayloadGeometry::Contiguous(_) => Layout::ContiguousLeV1,
            PayloadGeometry::RowSplit(_) => Layout::RowSplitK128V1,
            PayloadGeometry::BlockScale(_) => Layout::BlockScaleK16M128x4V1,
            PayloadGeometry::RowScale(_) => Layout::RowScaleV1,
            PayloadGeometry::RowInterleaved(_) => Layout::RowInterleavedV1,
            PayloadGeometry::Gguf(_) => Layout::GgufBlocksV1,
        }
    }

    /// The exact encoded payload size.
    pub fn bytes(&self) -> usize {
        match self {
            PayloadGeometry::Contiguous(g) => g.bytes,
            PayloadGeometry::RowSplit(g) => g.bytes,
            PayloadGeometry::BlockScale(g) => g.bytes,
            PayloadGeometry::RowScale(g) => g.bytes,
            PayloadGeometry::RowInterleaved(g) => g.bytes,
            PayloadGeometry::Gguf(g) => g.bytes,
        }
    }

    /// Rows along the leading axis (N for matrices); `None` for a rank-0 direct tensor.
    pub fn rows(&self) -> Option<usize> {
        match self {
            PayloadGeometry::Contiguous(g) => g.shape.first().copied(),
            PayloadGeometry::RowSplit(g) => Some(g.n),
            PayloadGeometry::BlockScale(g) => Some(g.n),
            PayloadGeometry::RowScale(g) => Some(g.n),
            PayloadGeometry::RowInterleaved(g) => Some(g.n),
            PayloadGeometry::Gguf(g) => Some(g.n),
        }
    }

    /// Writes already validated logical words. Padding gets its canonical contents.
    fn write(&self, words: &LogicalWords) -> Result<Vec<u8>> {
        let mismatch = || Error::Words(format!("{} words cannot be written to {}", words.format(), self.layout()));
        match (self, words) {
            (PayloadGeometry::Contiguous(g), LogicalWords::Direct(w)) => Ok(g.encode(w)),
            (PayloadGeometry::RowSplit(g), LogicalWords::Grouped(w)) => Ok(g.encode(w)),
            (PayloadGeometry::BlockScale(g), LogicalWords::Nvfp4(w)) => Ok(g.encode(w)),
            (PayloadGeometry::RowScale(g), LogicalWords::Fp8Row(w)) => Ok(g.encode(w)),
            (PayloadGeometry::RowInterleaved(g), LogicalWords::Fp8Row(w)) => Ok(g.encode(w)),
            (PayloadGeometry::Gguf(_), LogicalWords::Blocks(w)) => Ok(w.bytes.clone()),
            _ => Err(mismatch()),
        }
    }

    /// Reads every logical word without judging it (a Q8 -128 reads as -128).
    /// The caller has checked the payload size.
    fn read(&self, payload: &[u8]) -> Result<LogicalWords> {
        Ok(match self {
            PayloadGeometry::Contiguous(g) => LogicalWords::Direct(g.decode(payload)),
            PayloadGeometry::RowSplit(g) => LogicalWords::Grouped(g.decode(payload)),
            PayloadGeometry::BlockScale(g) => LogicalWords::Nvfp4(g.decode(payload)),
            PayloadGeometry::RowScale(g) => LogicalWords::Fp8Row(g.decode(payload)),
            PayloadGeometry::RowInterleaved(g) => LogicalWords::Fp8Row(g.decode(payload)),
            PayloadGeometry::Gguf(g) => {
                LogicalWords::Blocks(BlockWords { format: g.format, n: g.n, k: g.k, bytes: payload.to_vec() })
            }
        })
    }

    /// Names the region of the payload that holds byte `offset`, for padding errors.
    fn describe(&self, offset: usize) -> String {
        match self {
            PayloadGeometry::RowSplit(g) => g.describe(offset),
            PayloadGeometry::BlockScale(g) => g.describe(offset),
            PayloadGeometry::RowScale(g) => g.describe(offset),
            PayloadGeometry::Contiguous(_) | PayloadGeometry::RowInterleaved(_) | PayloadGeometry::Gguf(_) => {
                format!("byte {offset}")
            }
        }
    }

    fn padding_rule(&self) -> &'static str {
        match self {
            PayloadGeometry::RowSplit(_) => "padding lanes hold code 0 (q2: word 1), padding groups scale 0x0000 and code 0, gaps between planes are zero",
            PayloadGeometry::BlockScale(_) => "the gap between the code and scale planes is zero",
            PayloadGeometry::RowScale(_) => "the gap between the code plane and the row scales is zero",
            PayloadGeometry::Contiguous(_) | PayloadGeometry::RowInterleaved(_) | PayloadGeometry::Gguf(_) => "this layout has no padding",
        }
    }

    /// Row-major planes for row selection; `None` for layouts whose rows are not plain byte runs.
    fn row_planes(&self) -> Option<Vec<RowPlane>> {
        match self {
            PayloadGeometry::Contiguous(g) => g.row_planes(),
            PayloadGeometry::RowSplit(g) => Some(g.row_planes()),
            PayloadGeometry::BlockScale(_) => None,
            PayloadGeometry::RowScale(g) => Some(g.row_planes()),
            PayloadGeometry::RowInterleaved(g) => Some(g.row_planes()),
            PayloadGeometry::Gguf(g) => Some(g.row_planes()),
        }
    }

    /// The fast validity scan over a payload of the right size: `true` exactly when every word
    /// rule and padding byte holds (the same verdict as [`validate_reference`]).
    pub fn scan(&self, payload: &[u8]) -> bool {
        match self {
            // Direct words have no illegal bit pattern (a bf16 word read from two bytes has 16
            // bits) and the layout no padding; gguf blocks are ggml's to define.
            PayloadGeometry::Contiguous(_) | PayloadGeometry::Gguf(_) => true,
            PayloadGeometry::RowSplit(g) => g.scan(payload),
            PayloadGeometry::BlockScale(g) => g.scan(payload),
            PayloadGeometry::RowScale(g) => g.scan(payload),
            PayloadGeometry::RowInterleaved(g) => g.scan(payload),
        }
    }

    fn check_size(&self, shape: &[usize], payload: &[u8]) -> Result<()> {
        if payload.len() == self.bytes() {
            return Ok(());
        }
        Err(Error::PayloadSize {
            layout: self.layout().name(),
            shape: shape.to_vec(),
            expected: self.bytes() as u64,
            actual: payload.len() as u64,
        })
    }
}

/// Encodes valid logical words into `layout`. Invalid words are refused, never stored.
pub fn encode(words: &LogicalWords, layout: Layout) -> Result<(PayloadGeometry, Vec<u8>)> {
    let geometry = PayloadGeometry::new(words.format(), layout, &words.shape(), words.divisors())?;
    words.validate()?;
    let payload = geometry.write(words)?;
    Ok((geometry, payload))
}

/// Checks the exact size, every word rule and every padding byte, and returns the logical words.
pub fn decode(geometry: &PayloadGeometry, shape: &[usize], payload: &[u8]) -> Result<LogicalWords> {
    geometry.check_size(shape, payload)?;
    let words = geometry.read(payload)?;
    words.validate()?;
    // Re-encoding valid words writes canonical padding; any other byte difference is padding
    // that a producer filled differently.
    let canonical = geometry.write(&words)?;
    if let Some(at) = canonical.iter().zip(payload).position(|(a, b)| a != b) {
        return Err(Error::Padding {
            layout: geometry.layout().name(),
            rule: geometry.padding_rule(),
            location: format!(
                "{}: found {:#04x}, canonical {:#04x}",
                geometry.describe(at),
                payload[at],
                canonical[at]
            ),
        });
    }
    Ok(words)
}

/// Checks size, words and padding without keeping the words: the layout's fast scan decides,
/// and only a payload it finds fault with goes through [`validate_reference`], which names the
/// rule and the place. The reference is the scan's oracle (tests and the fuzz target compare
/// them on mutated payloads), so a scan that disagrees is a bug, never a second opinion.
pub fn validate(geometry: &PayloadGeometry, shape: &[usize], payload: &[u8]) -> Result<()> {
    geometry.check_size(shape, payload)?;
    if geometry.scan(payload) {
        return Ok(());
    }
    validate_reference(geometry, shape, payload)
}

/// The word-by-word validator: decode every logical word, check it, re-encode and compare.
pub fn validate_reference(geometry: &PayloadGeometry, shape: &[usize], payload: &[u8]) -> Result<()> {
    if let PayloadGeometry::Gguf(_) = geometry {
        // Any bytes of the right size are gguf blocks; their values are ggml's to define
        // (layouts.md names no word rule for gguf_blocks_v1), so there is nothing to decode.
        return geometry.check_size(shape, payload);
    }
    decode(geometry, shape, payload).map(|_| ())
}

/// Copies the chosen rows (any order, repeats allowed) into a new standalone payload, plane by
/// plane, without touching a word. Returns the new shape, divisor count and payload.
pub fn select_rows(
    geometry: &PayloadGeometry,
    shape: &[usize],
    payload: &[u8],
    rows: &[usize],
) -> Result<(Vec<usize>, usize, Vec<u8>)> {
    geometry.check_size(shape, payload)?;
    let layout = geometry.layout();
    let total = geometry.rows().ok_or_else(|| Error::Shape {
        layout: layout.name(),
        rule: "row selection needs rank >= 1",
        detail: "a rank-0 tensor has no rows".into(),
    })?;
    if rows.is_empty() {
        return Err(Error::Shape {
            layout: layout.name(),
            rule: "a selection keeps at least one row",
            detail: "no rows selected".into(),
        });
    }
    if let Some(&bad) = rows.iter().find(|&&r| r >= total) {
        return Err(Error::Shape {
            layout: layout.name(),
            rule: "selected rows exist",
            detail: format!("row {bad} of a tensor with {total} rows"),
        });
    }
    if let PayloadGeometry::BlockScale(g) = geometry {
        return g.select_rows(payload, rows);
    }
    let mut new_shape = shape.to_vec();
    new_shape[0] = rows.len();
    let format = match geometry {
        PayloadGeometry::Contiguous(g) => g.format,
        PayloadGeometry::RowSplit(g) => g.format,
        PayloadGeometry::RowScale(g) => g.format,
        PayloadGeometry::RowInterleaved(g) => g.format,
        PayloadGeometry::Gguf(g) => g.format,
        PayloadGeometry::BlockScale(_) => Format::Nvfp4,
    };
    let target = PayloadGeometry::new(format, layout, &new_shape, 1)?;
    let (src, dst) = match (geometry.row_planes(), target.row_planes()) {
        (Some(s), Some(d)) => (s, d),
        _ => return Err(Error::Unsupported(format!("{layout} rows are not byte runs"))),
    };
    let mut out = vec![0u8; target.bytes()];
    for (s, d) in src.iter().zip(&dst) {
        for (i, &r) in rows.iter().enumerate() {
            let from = s.offset + r * s.row_bytes;
            let to = d.offset + i * d.row_bytes;
            out[to..to + d.row_bytes].copy_from_slice(&payload[from..from + s.row_bytes]);
        }
    }
    // Gaps between planes are zero in `out` as the layouts require; q2's 0x55 padding records
    // travel inside the copied rows.
    Ok((new_shape, 1, out))
}
