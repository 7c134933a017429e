//! `block_scale_k16_m128x4_v1` (nvfp4): row-major E2M1 nibbles, then E4M3FN scale words in
//! 128×4 swizzled tiles (the tensor-core scale-factor layout), then the FP32 divisors.

use super::{align_up, matrix, scan, sized, Layout};
use crate::error::{Error, Result};
use crate::words::Nvfp4Words;

const LAYOUT: Layout = Layout::BlockScaleK16M128x4V1;
/// Values per E4M3FN scale word.
pub const GROUP: usize = 16;
/// Rows per scale tile: N is a multiple of it, and so is each divisor's row span.
pub const TILE_ROWS: usize = 128;
/// Scale words per tile row (4 groups of 16 values: K is a multiple of 64).
pub const TILE_GROUPS: usize = 4;
/// Bytes of one 128×4 scale tile.
pub const TILE_BYTES: usize = TILE_ROWS * TILE_GROUPS;
const PLANE_ALIGN: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub n: usize,
    pub k: usize,
    pub divisors: usize,
    pub code_bytes: usize,
    pub scale_offset: usize,
    pub scale_bytes: usize,
    pub divisor_offset: usize,
    pub bytes: usize,
}

impl Geometry {
    pub fn new(shape: &[usize], divisors: usize) -> Result<Self> {
        let (n, k) = matrix(LAYOUT, shape)?;
        let rule = |rule: &'static str, detail: String| Err(Error::Shape { layout: LAYOUT.name(), rule, detail });
        if n % TILE_ROWS != 0 {
            return rule("N % 128 == 0", format!("N = {n}"));
        }
        if k % (GROUP * TILE_GROUPS) != 0 {
            return rule("K % 64 == 0", format!("K = {k}"));
        }
        if divisors == 0 || n % divisors != 0 || !(n / divisors).is_multiple_of(TILE_ROWS) {
            return rule(
                "divisors >= 1 and N / divisors is a multiple of 128",
                format!("N = {n}, divisors = {divisors}"),
            );
        }
        let code_bytes = sized(LAYOUT, n.checked_mul(k).map(|c| c / 2))?;
        let scale_offset = sized(LAYOUT, align_up(code_bytes, PLANE_ALIGN))?;
        let scale_bytes = code_bytes / (GROUP / 2);
        let divisor_offset = sized(LAYOUT, scale_offset.checked_add(scale_bytes))?;
        let bytes = sized(LAYOUT, divisors.checked_mul(4).and_then(|d| d.checked_add(divisor_offset)))?;
        Ok(Geometry { n, k, divisors, code_bytes, scale_offset, scale_bytes, divisor_offset, bytes })
    }

    /// Byte offset of scale word (n, g): tiles of 128 rows × 4 groups, rows interleaved by 32.
    pub fn scale_index(&self, n: usize, g: usize) -> usize {
        let kt = self.k / (GROUP * TILE_GROUPS);
        let (rt, ri) = (n / TILE_ROWS, n % TILE_ROWS);
        let (st, lane) = (g / TILE_GROUPS, g % TILE_GROUPS);
        self.scale_offset + (rt * kt + st) * TILE_BYTES + (ri % 32) * 16 + (ri / 32) * 4 + lane
    }

    pub fn encode(&self, w: &Nvfp4Words) -> Vec<u8> {
        let mut out = vec![0u8; self.bytes];
        for (i, &c) in w.codes.iter().enumerate() {
            out[i / 2] |= (c & 0xF) << (4 * (i % 2));
        }
        let groups = self.k / GROUP;
        for n in 0..self.n {
            for g in 0..groups {
                out[self.scale_index(n, g)] = w.scales[n * groups + g];
            }
        }
        for (j, d) in w.divisors.iter().enumerate() {
            let at = self.divisor_offset + 4 * j;
            out[at..at + 4].copy_from_slice(&d.to_le_bytes());
        }
        out
    }

    /// The fast validity scan (see `layout::validate`): every E2M1 nibble is a word, every scale
    /// tile is full (N % 128 == 0, K % 64 == 0), so the rules are a zero gap, scale words that are
    /// neither NaN nor signed (below 0x7f), and divisors finite and strictly positive.
    pub fn scan(&self, payload: &[u8]) -> bool {
        let divisors = payload[self.divisor_offset..].chunks_exact(4);
        scan::all_zero(&payload[self.code_bytes..self.scale_offset])
            && scan::none(&payload[self.scale_offset..self.divisor_offset], |s| s >= 0x7F)
            && divisors.map(|d| u32::from_le_bytes([d[0], d[1], d[2], d[3]])).all(|d| d > 0 && d < 0x7F80_0000)
    }

    pub fn decode(&self, payload: &[u8]) -> Nvfp4Words {
        let codes = (0..self.n * self.k).map(|i| (payload[i / 2] >> (4 * (i % 2))) & 0xF).collect();
        let groups = self.k / GROUP;
        let mut scales = Vec::with_capacity(self.n * groups);
        for n in 0..self.n {
            for g in 0..groups {
                scales.push(payload[self.scale_index(n, g)]);
            }
        }
        let divisors = payload[self.divisor_offset..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Nvfp4Words { n: self.n, k: self.k, codes, scales, divisors }
    }

    pub fn describe(&self, offset: usize) -> String {
        if offset < self.code_bytes {
            format!("code byte {offset}")
        } else if offset < self.scale_offset {
            format!("gap byte {offset} between codes and scales")
        } else if offset < self.divisor_offset {
            format!("scale byte {offset}")
        } else {
            format!("divisor byte {offset}")
        }
    }

    /// Gathers rows: codes and scale words move to their new places, and the divisors are
    /// regrouped. The result needs N % 128 == 0 and one divisor per run of rows that came from the
    /// same source matrix; the fewest equal runs (each a multiple of 128 rows) are chosen.
    pub fn select_rows(&self, payload: &[u8], rows: &[usize]) -> Result<(Vec<usize>, usize, Vec<u8>)> {
        let words = self.decode(payload);
        let span = self.n / self.divisors;
        let row_divisor: Vec<u32> = rows.iter().map(|&r| words.divisors[r / span]).collect();
        let n = rows.len();
        let divisors = (1..=n / TILE_ROWS)
            .filter(|d| n.is_multiple_of(*d) && (n / d).is_multiple_of(TILE_ROWS))
            .find(|&d| row_divisor.chunks(n / d).all(|run| run.iter().all(|&v| v == run[0])))
            .ok_or_else(|| Error::Shape {
                layout: LAYOUT.name(),
                rule: "selected rows come in runs of a multiple of 128 rows that share one divisor",
                detail: format!("{n} rows selected"),
            })?;
        let target = Geometry::new(&[n, self.k], divisors)?;
        let groups = self.k / GROUP;
        let mut picked = Nvfp4Words {
            n,
            k: self.k,
            codes: Vec::with_capacity(n * self.k),
            scales: Vec::with_capacity(n * groups),
            divisors: Vec::new(),
        };
        for &r in rows {
            picked.codes.extend_from_slice(&words.codes[r * self.k..(r + 1) * self.k]);
            picked.scales.extend_from_slice(&words.scales[r * groups..(r + 1) * groups]);
        }
        picked.divisors = row_divisor.chunks(n / divisors).map(|run| run[0]).collect();
        Ok((vec![n, self.k], divisors, target.encode(&picked)))
    }
}
