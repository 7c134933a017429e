//! `row_split_k128_v1`: grouped signed-integer formats in three planes — base (low code bits),
//! high (q5/q6's extra bits) and scale (one binary16 per group) — each starting on a 256-byte
//! boundary, K padded to a multiple of 128.

use super::{align_up, matrix, scan, sized, Layout, RowPlane};
use crate::error::{Error, Result};
use crate::format::{CodeMapping, Format};
use crate::numeric::f16_is_finite;
use crate::words::GroupedWords;

const LAYOUT: Layout = Layout::RowSplitK128V1;
/// K is padded to this multiple, so every row holds whole 128-lane chunks.
pub const K_ALIGN: usize = 128;
/// Planes start on this boundary (it matches the usual storage-binding offset alignment).
pub const PLANE_ALIGN: usize = 256;

/// How one format's codes are split between the planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// 2-bit words, four per byte, lowest lane in the lowest bits (q2, t2).
    Crumbs,
    /// Low 4 bits as nibbles (even lane low), plus `high_bits` (0, 1 or 2) in the high plane.
    Nibbles { high_bits: u32 },
    /// One byte per code (q8).
    Bytes,
}

/// Per-format constants of the layouts.md table: group size G, base and high bytes per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaneSpec {
    pub group: usize,
    pub base_bytes: usize,
    pub high_bytes: usize,
    pub packing: Packing,
    pub code_bits: u32,
    pub mapping: CodeMapping,
}

/// The plane table of layouts.md, keyed by format; `None` for formats this layout does not hold.
pub fn plane_spec(format: Format) -> Option<PlaneSpec> {
    let (group, _, _, mapping) = format.grouped()?;
    let code_bits = format.spec().code_bits?;
    // The widths layouts.md packs; any other width has no packing (and no plane spec, which
    // `every_grouped_format_has_a_packing` catches) rather than a guessed one.
    let packing = match code_bits {
        2 => Packing::Crumbs,
        4..=6 => Packing::Nibbles { high_bits: code_bits - 4 },
        8 => Packing::Bytes,
        _ => return None,
    };
    let (base_bytes, high_bytes) = match packing {
        Packing::Crumbs => (group / 4, 0),
        Packing::Bytes => (group, 0),
        Packing::Nibbles { high_bits } => (group / 2, group * high_bits as usize / 8),
    };
    Some(PlaneSpec { group, base_bytes, high_bytes, packing, code_bits, mapping })
}

impl PlaneSpec {
    /// The stored unsigned word of a signed code.
    fn word(&self, q: i8) -> u32 {
        match self.mapping {
            CodeMapping::OffsetOne => (q as i32 + 1) as u32 & 3,
            CodeMapping::TwosComplement => (q as i32 as u32) & ((1u32 << self.code_bits) - 1),
        }
    }

    /// The signed code of a stored word.
    fn code(&self, u: u32) -> i8 {
        match self.mapping {
            CodeMapping::OffsetOne => u as i8 - 1,
            CodeMapping::TwosComplement => {
                let half = 1u32 << (self.code_bits - 1);
                (if u < half { u as i32 } else { u as i32 - (1 << self.code_bits) }) as i8
            }
        }
    }
}

/// Base-plane bytes that hold an illegal code word (q8's 0x80, t2's 0b10).
enum IllegalWords {
    None,
    Bytes(Box<[bool; 256]>),
    NotBytewise,
}

/// The padding of one plane row: bytes `start..` of each row, with the bits that hold logical
/// lanes (`mask`) and the canonical value of every other bit.
struct PaddingTail {
    offset: usize,
    row_bytes: usize,
    start: usize,
    mask: Vec<u8>,
    canonical: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub format: Format,
    pub spec: PlaneSpec,
    pub n: usize,
    pub k: usize,
    pub k_pad: usize,
    /// Physical groups per row, `K_pad / G`.
    pub gpr: usize,
    /// Logical groups per row, `ceil(K / G)`.
    pub logical_groups: usize,
    pub base_bytes: usize,
    pub high_offset: usize,
    pub high_bytes: usize,
    pub scale_offset: usize,
    pub bytes: usize,
}

impl Geometry {
    pub fn new(format: Format, shape: &[usize]) -> Result<Self> {
        let spec = plane_spec(format).ok_or_else(|| Error::Shape {
            layout: LAYOUT.name(),
            rule: "grouped formats only",
            detail: format.to_string(),
        })?;
        let (n, k) = matrix(LAYOUT, shape)?;
        let k_pad = sized(LAYOUT, align_up(k, K_ALIGN))?;
        let gpr = k_pad / spec.group;
        let records = sized(LAYOUT, n.checked_mul(gpr))?;
        let base_bytes = sized(LAYOUT, records.checked_mul(spec.base_bytes))?;
        let high_bytes = sized(LAYOUT, records.checked_mul(spec.high_bytes))?;
        let high_offset = sized(LAYOUT, align_up(base_bytes, PLANE_ALIGN))?;
        let scale_offset = sized(LAYOUT, align_up(high_bytes, PLANE_ALIGN).and_then(|h| h.checked_add(high_offset)))?;
        let bytes = sized(LAYOUT, records.checked_mul(2).and_then(|s| s.checked_add(scale_offset)))?;
        Ok(Geometry {
            format,
            spec,
            n,
            k,
            k_pad,
            gpr,
            logical_groups: k.div_ceil(spec.group),
            base_bytes,
            high_offset,
            high_bytes,
            scale_offset,
            bytes,
        })
    }

    /// Writes the codes and scales; padding lanes and groups get code 0 (q2: word 1) and scale 0.
    pub fn encode(&self, w: &GroupedWords) -> Vec<u8> {
        let s = self.spec;
        let mut out = vec![0u8; self.bytes];
        if s.mapping == CodeMapping::OffsetOne {
            // q2's code 0 is word 1: every lane not written below is 0b01, four to a byte.
            out[..self.base_bytes].fill(0x55);
        }
        for n in 0..self.n {
            for k in 0..self.k {
                let (g, i) = (k / s.group, k % s.group);
                let rec = n * self.gpr + g;
                let u = s.word(w.codes[n * self.k + k]);
                match s.packing {
                    Packing::Crumbs => {
                        let byte = &mut out[rec * s.base_bytes + i / 4];
                        let shift = 2 * (i % 4);
                        *byte = (*byte & !(3 << shift)) | ((u as u8) << shift);
                    }
                    Packing::Bytes => out[rec * s.base_bytes + i] = u as u8,
                    Packing::Nibbles { high_bits } => {
                        out[rec * s.base_bytes + i / 2] |= ((u & 0xF) as u8) << (4 * (i % 2));
                        let high = (u >> 4) as u8;
                        match high_bits {
                            1 => out[self.high_offset + rec * s.high_bytes + i / 8] |= high << (i % 8),
                            2 => out[self.high_offset + rec * s.high_bytes + i / 4] |= high << (2 * (i % 4)),
                            _ => {}
                        }
                    }
                }
            }
            for g in 0..self.logical_groups {
                let at = self.scale_offset + 2 * (n * self.gpr + g);
                out[at..at + 2].copy_from_slice(&w.scales[n * self.logical_groups + g].to_le_bytes());
            }
        }
        out
    }

    /// Reads every logical code and scale; padding is not read (the validator re-encodes).
    pub fn decode(&self, payload: &[u8]) -> GroupedWords {
        let s = self.spec;
        let mut codes = Vec::with_capacity(self.n * self.k);
        let mut scales = Vec::with_capacity(self.n * self.logical_groups);
        for n in 0..self.n {
            for k in 0..self.k {
                let (g, i) = (k / s.group, k % s.group);
                let rec = n * self.gpr + g;
                let u = match s.packing {
                    Packing::Crumbs => (payload[rec * s.base_bytes + i / 4] >> (2 * (i % 4))) as u32 & 3,
                    Packing::Bytes => payload[rec * s.base_bytes + i] as u32,
                    Packing::Nibbles { high_bits } => {
                        let low = (payload[rec * s.base_bytes + i / 2] >> (4 * (i % 2))) as u32 & 0xF;
                        let high = match high_bits {
                            1 => (payload[self.high_offset + rec * s.high_bytes + i / 8] >> (i % 8)) as u32 & 1,
                            2 => (payload[self.high_offset + rec * s.high_bytes + i / 4] >> (2 * (i % 4))) as u32 & 3,
                            _ => 0,
                        };
                        low | (high << 4)
                    }
                };
                codes.push(s.code(u));
            }
            for g in 0..self.logical_groups {
                let at = self.scale_offset + 2 * (n * self.gpr + g);
                scales.push(u16::from_le_bytes([payload[at], payload[at + 1]]));
            }
        }
        GroupedWords { format: self.format, n: self.n, k: self.k, codes, scales }
    }

    /// The fast validity scan (see `layout::validate`): zero gaps, no illegal code word, canonical
    /// padding lanes and groups, finite scales (never -0 outside q2) and zero scales only over
    /// zero codes.
    pub fn scan(&self, payload: &[u8]) -> bool {
        let s = self.spec;
        let high_end = self.high_offset + self.high_bytes;
        if !scan::all_zero(&payload[self.base_bytes..self.high_offset])
            || !scan::all_zero(&payload[high_end..self.scale_offset])
        {
            return false;
        }
        match self.illegal_base_bytes() {
            IllegalWords::None => {}
            IllegalWords::Bytes(bad) => {
                if !scan::none(&payload[..self.base_bytes], |b| bad[b as usize]) {
                    return false;
                }
            }
            // No registered format has both a partial code interval and a high plane; such a
            // payload always takes the reference path.
            IllegalWords::NotBytewise => return false,
        }
        let tails = self.padding_tails();
        for r in 0..self.n {
            for t in &tails {
                let row = &payload[t.offset + r * t.row_bytes..t.offset + (r + 1) * t.row_bytes];
                let found = row[t.start..].iter().zip(&t.mask).zip(&t.canonical);
                if found.into_iter().any(|((&b, &m), &c)| b & !m != c) {
                    return false;
                }
            }
            for g in 0..self.logical_groups {
                let rec = r * self.gpr + g;
                let at = self.scale_offset + 2 * rec;
                let scale = u16::from_le_bytes([payload[at], payload[at + 1]]);
                if !f16_is_finite(scale) {
                    return false;
                }
                if s.mapping == CodeMapping::OffsetOne {
                    continue;
                }
                // Two's complement code 0 is word 0: a zero-scale group is all zero bits.
                let zero_codes = || {
                    scan::all_zero(&payload[rec * s.base_bytes..(rec + 1) * s.base_bytes])
                        && scan::all_zero(&payload[self.high_offset + rec * s.high_bytes..][..s.high_bytes])
                };
                if scale == 0x8000 || (scale == 0 && !zero_codes()) {
                    return false;
                }
            }
        }
        true
    }

    /// Which base-plane bytes hold a word outside the format's code interval.
    fn illegal_base_bytes(&self) -> IllegalWords {
        let s = self.spec;
        let (_, qmin, qmax, _) = self.format.grouped().unwrap_or((0, 0, 0, s.mapping));
        if (qmax - qmin + 1) as u64 == 1u64 << s.code_bits {
            return IllegalWords::None;
        }
        let lane_bits = match s.packing {
            Packing::Crumbs => 2,
            Packing::Bytes => 8,
            Packing::Nibbles { high_bits: 0 } => 4,
            Packing::Nibbles { .. } => return IllegalWords::NotBytewise,
        };
        let mask = (1u32 << lane_bits) - 1;
        let mut bad = Box::new([false; 256]);
        for (b, slot) in bad.iter_mut().enumerate() {
            *slot = (0..8 / lane_bits).any(|lane| {
                let q = s.code((b as u32 >> (lane * lane_bits)) & mask) as i32;
                q < qmin || q > qmax
            });
        }
        IllegalWords::Bytes(bad)
    }

    /// Where each plane row holds padding, and what it must hold: derived from the encoder by
    /// writing one row twice, once with every logical bit set and once with none, so the padding
    /// rules stay written once (in `encode`).
    fn padding_tails(&self) -> Vec<PaddingTail> {
        let s = self.spec;
        let Ok(one) = Geometry::new(self.format, &[1, self.k]) else { return Vec::new() };
        let words = |word: u32, scale: u16| GroupedWords {
            format: self.format,
            n: 1,
            k: self.k,
            codes: vec![s.code(word); self.k],
            scales: vec![scale; self.logical_groups],
        };
        let (set, clear) = (one.encode(&words((1 << s.code_bits) - 1, 0xFFFF)), one.encode(&words(0, 0)));
        let mine = self.row_planes();
        one.row_planes()
            .iter()
            .zip(mine)
            .filter_map(|(p, full)| {
                let (a, b) = (&set[p.offset..p.offset + p.row_bytes], &clear[p.offset..p.offset + p.row_bytes]);
                let start = a.iter().zip(b).position(|(x, y)| x ^ y != 0xFF)?;
                let mask: Vec<u8> = a[start..].iter().zip(&b[start..]).map(|(x, y)| x ^ y).collect();
                let canonical = b[start..].iter().zip(&mask).map(|(v, m)| v & !m).collect();
                Some(PaddingTail { offset: full.offset, row_bytes: full.row_bytes, start, mask, canonical })
            })
            .collect()
    }

    /// Names the plane, row and group of a payload byte.
    pub fn describe(&self, offset: usize) -> String {
        let s = self.spec;
        let record = |rel: usize, per: usize| {
            let rec = rel / per;
            let (n, g) = (rec / self.gpr, rec % self.gpr);
            let kind = if g >= self.logical_groups { "padding group" } else { "group" };
            format!("row {n}, {kind} {g}, byte {} of the record", rel % per)
        };
        if offset < self.base_bytes {
            format!("base plane byte {offset} ({})", record(offset, s.base_bytes))
        } else if offset < self.high_offset {
            format!("gap byte {offset} after the base plane")
        } else if offset < self.high_offset + self.high_bytes {
            format!("high plane byte {offset} ({})", record(offset - self.high_offset, s.high_bytes))
        } else if offset < self.scale_offset {
            format!("gap byte {offset} after the high plane")
        } else {
            format!("scale plane byte {offset} ({})", record(offset - self.scale_offset, 2))
        }
    }

    pub fn row_planes(&self) -> Vec<RowPlane> {
        let s = self.spec;
        vec![
            RowPlane { name: "base", offset: 0, row_bytes: self.gpr * s.base_bytes },
            RowPlane { name: "high", offset: self.high_offset, row_bytes: self.gpr * s.high_bytes },
            RowPlane { name: "scale", offset: self.scale_offset, row_bytes: self.gpr * 2 },
        ]
    }
}
