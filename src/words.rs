//! Logical words: what a layout decodes to and encodes from, before any reconstruction.
//!
//! The validity rules of the format reference are checked here, once, on logical words; layouts
//! only move bits. A payload is valid when its decoded words pass these checks and re-encoding
//! them reproduces every padding byte.

use crate::error::{Error, Result};
use crate::format::{CodeMapping, Format, Geometry, ScaleWord};
use crate::numeric::{bf16_is_finite, e4m3fn_is_nan, f16_is_finite};

/// Logical words of one tensor, by format family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogicalWords {
    Direct(DirectWords),
    Grouped(GroupedWords),
    Nvfp4(Nvfp4Words),
    Fp8Row(Fp8RowWords),
    Blocks(BlockWords),
}

/// gguf_* blocks `[N, K / block_values]`, ggml's bytes unchanged: their logical words are the
/// blocks themselves (every byte pattern is a block; ggml defines its value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockWords {
    pub format: Format,
    pub n: usize,
    pub k: usize,
    pub bytes: Vec<u8>,
}

/// bf16, fp32 or int32 words in C order. bf16 words occupy the low 16 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectWords {
    pub format: Format,
    pub shape: Vec<usize>,
    pub words: Vec<u32>,
}

/// Signed codes `[N, K]` (row-major, K fastest) and binary16 scale words `[N, ceil(K/G)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupedWords {
    pub format: Format,
    pub n: usize,
    pub k: usize,
    /// Signed codes: q2 in [-1, 2], t2 in [-1, 1], the others two's complement of their width.
    pub codes: Vec<i8>,
    pub scales: Vec<u16>,
}

/// nvfp4: E2M1 words `[N, K]` (one per byte, low nibble), E4M3FN scale words `[N, K/16]`, and
/// the binary32 bits of each source matrix's divisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nvfp4Words {
    pub n: usize,
    pub k: usize,
    pub codes: Vec<u8>,
    pub scales: Vec<u8>,
    pub divisors: Vec<u32>,
}

/// fp8 rows: E4M3FN words `[N, K]` and one multiplier word per row (bf16 or binary16 bits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fp8RowWords {
    pub format: Format,
    pub n: usize,
    pub k: usize,
    pub codes: Vec<u8>,
    pub scales: Vec<u16>,
}

fn invalid(format: Format, rule: &'static str, location: String) -> Error {
    Error::InvalidWord { format: format.name(), rule, location }
}

fn count(what: &str, expected: usize, actual: usize) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::Words(format!("{what}: expected {expected} words, got {actual}")))
    }
}

impl LogicalWords {
    pub fn format(&self) -> Format {
        match self {
            LogicalWords::Direct(w) => w.format,
            LogicalWords::Grouped(w) => w.format,
            LogicalWords::Nvfp4(_) => Format::Nvfp4,
            LogicalWords::Fp8Row(w) => w.format,
            LogicalWords::Blocks(w) => w.format,
        }
    }

    /// The logical shape the words describe.
    pub fn shape(&self) -> Vec<usize> {
        match self {
            LogicalWords::Direct(w) => w.shape.clone(),
            LogicalWords::Grouped(w) => vec![w.n, w.k],
            LogicalWords::Nvfp4(w) => vec![w.n, w.k],
            LogicalWords::Fp8Row(w) => vec![w.n, w.k],
            LogicalWords::Blocks(w) => vec![w.n, w.k],
        }
    }

    /// Divisor count (nvfp4), 1 for every other format.
    pub fn divisors(&self) -> usize {
        match self {
            LogicalWords::Nvfp4(w) => w.divisors.len(),
            LogicalWords::Direct(_) | LogicalWords::Grouped(_) | LogicalWords::Fp8Row(_) | LogicalWords::Blocks(_) => 1,
        }
    }

    /// Checks word counts against the shape and every validity rule of the format reference.
    pub fn validate(&self) -> Result<()> {
        match self {
            LogicalWords::Direct(w) => w.validate(),
            LogicalWords::Grouped(w) => w.validate(),
            LogicalWords::Nvfp4(w) => w.validate(),
            LogicalWords::Fp8Row(w) => w.validate(),
            LogicalWords::Blocks(w) => w.validate(),
        }
    }
}

impl BlockWords {
    pub fn validate(&self) -> Result<()> {
        let Geometry::Block { values, bytes } = self.format.spec().geometry else {
            return Err(Error::Words(format!("{} is not a GGUF block format", self.format)));
        };
        if !self.k.is_multiple_of(values) {
            return Err(Error::Words(format!("{}: K = {} is not a multiple of {values}", self.format, self.k)));
        }
        count("gguf block bytes", self.n.saturating_mul(self.k / values).saturating_mul(bytes), self.bytes.len())
    }
}

impl DirectWords {
    pub fn validate(&self) -> Result<()> {
        let elements = self.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        count("direct words", elements.unwrap_or(usize::MAX), self.words.len())?;
        match self.format.spec().geometry {
            Geometry::Direct { bytes: 2, .. } => match self.words.iter().position(|&w| w > 0xFFFF) {
                Some(i) => Err(invalid(
                    self.format,
                    "a 16-bit word has 16 bits",
                    format!("element {i} is {:#x}", self.words[i]),
                )),
                None => Ok(()),
            },
            Geometry::Direct { .. } => Ok(()),
            Geometry::Grouped { .. }
            | Geometry::BlockScaled { .. }
            | Geometry::RowScaled { .. }
            | Geometry::Block { .. } => Err(Error::Words(format!("{} is not a direct format", self.format))),
        }
    }
}

impl GroupedWords {
    /// `(group size, groups per row)` for this tensor's format and K.
    pub fn groups(&self) -> Result<(usize, usize)> {
        let (group, ..) =
            self.format.grouped().ok_or_else(|| Error::Words(format!("{} is not a grouped format", self.format)))?;
        Ok((group, self.k.div_ceil(group)))
    }

    pub fn validate(&self) -> Result<()> {
        let f = self.format;
        let (group, qmin, qmax, mapping) =
            f.grouped().ok_or_else(|| Error::Words(format!("{f} is not a grouped format")))?;
        let groups = self.k.div_ceil(group);
        count("grouped codes", self.n.saturating_mul(self.k), self.codes.len())?;
        count("grouped scales", self.n.saturating_mul(groups), self.scales.len())?;
        for (i, &q) in self.codes.iter().enumerate() {
            let q = q as i32;
            if q < qmin || q > qmax {
                let rule = match f {
                    Format::Q8G32Fp16 if q == -128 => "Q8 code -128 (byte 0x80) is outside the format",
                    Format::T2G128Fp16 if q == -2 => "T2 word 0b10 (-2) is outside the format",
                    _ => "code outside the format's legal interval",
                };
                return Err(invalid(
                    f,
                    rule,
                    format!("row {}, column {}, code {q}", i / self.k.max(1), i % self.k.max(1)),
                ));
            }
        }
        for (r, &s) in self.scales.iter().enumerate() {
            let (n, g) = (r / groups.max(1), r % groups.max(1));
            let at = || format!("row {n}, group {g}, scale {s:#06x}");
            if !f16_is_finite(s) {
                return Err(invalid(f, "a grouped scale is finite (no inf, no NaN)", at()));
            }
            if mapping == CodeMapping::OffsetOne {
                // Q2 keeps every finite scale, both zeros included, with any codes (section 5.4).
                continue;
            }
            if s == 0x8000 {
                return Err(invalid(f, "a grouped scale is never -0", at()));
            }
            if s == 0x0000 {
                let start = n * self.k + g * group;
                let end = (start + group).min((n + 1) * self.k);
                if let Some(j) = self.codes[start..end].iter().position(|&q| q != 0) {
                    return Err(invalid(
                        f,
                        "a +0 scale requires every code of its group to be 0",
                        format!("{}, column {}", at(), g * group + j),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Nvfp4Words {
    pub fn validate(&self) -> Result<()> {
        let f = Format::Nvfp4;
        count("nvfp4 codes", self.n.saturating_mul(self.k), self.codes.len())?;
        count("nvfp4 scales", self.n.saturating_mul(self.k / 16), self.scales.len())?;
        if self.divisors.is_empty() || !self.n.is_multiple_of(self.divisors.len()) {
            return Err(Error::Words(format!(
                "nvfp4: {} divisors cannot split {} rows into equal sources",
                self.divisors.len(),
                self.n
            )));
        }
        if let Some(i) = self.codes.iter().position(|&c| c > 0xF) {
            return Err(invalid(f, "an E2M1 word has 4 bits", format!("code {i} is {:#x}", self.codes[i])));
        }
        let groups = (self.k / 16).max(1);
        for (i, &s) in self.scales.iter().enumerate() {
            let at = || format!("row {}, group {}, scale {s:#04x}", i / groups, i % groups);
            if e4m3fn_is_nan(s) {
                return Err(invalid(f, "an NVFP4 block scale is never NaN", at()));
            }
            if s & 0x80 != 0 {
                return Err(invalid(f, "an NVFP4 block scale has sign bit zero (no negative values, no -0)", at()));
            }
        }
        for (j, &d) in self.divisors.iter().enumerate() {
            let v = f32::from_bits(d);
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(
                    f,
                    "every weight divisor d_w is finite and strictly positive",
                    format!("divisor {j} is {d:#010x} ({v})"),
                ));
            }
        }
        Ok(())
    }
}

impl Fp8RowWords {
    pub fn validate(&self) -> Result<()> {
        let f = self.format;
        let scale = match f.spec().geometry {
            Geometry::RowScaled { scale } => scale,
            Geometry::Direct { .. }
            | Geometry::Grouped { .. }
            | Geometry::BlockScaled { .. }
            | Geometry::Block { .. } => return Err(Error::Words(format!("{f} is not a row-scaled fp8 format"))),
        };
        count("fp8 codes", self.n.saturating_mul(self.k), self.codes.len())?;
        count("fp8 row scales", self.n, self.scales.len())?;
        if let Some(i) = self.codes.iter().position(|&c| e4m3fn_is_nan(c)) {
            return Err(invalid(
                f,
                "E4M3FN weight codes are finite (0x7f and 0xff are NaN)",
                format!("row {}, column {}, code {:#04x}", i / self.k, i % self.k, self.codes[i]),
            ));
        }
        for (n, &s) in self.scales.iter().enumerate() {
            let at = || format!("row {n}, scale {s:#06x}");
            let finite = match scale {
                ScaleWord::Bf16 => bf16_is_finite(s),
                ScaleWord::Binary16 => f16_is_finite(s),
            };
            if !finite {
                return Err(invalid(f, "a row scale is finite (no inf, no NaN)", at()));
            }
            if s & 0x8000 != 0 {
                return Err(invalid(f, "a row scale has sign bit zero (no negative values, no -0)", at()));
            }
            if s == 0 {
                let row = &self.codes[n * self.k..(n + 1) * self.k];
                if let Some(j) = row.iter().position(|&c| c & 0x7F != 0) {
                    return Err(invalid(
                        f,
                        "a +0 row scale allows only signed-zero codes (0x00, 0x80)",
                        format!("{}, column {j}, code {:#04x}", at(), row[j]),
                    ));
                }
            }
        }
        Ok(())
    }
}
