//! Float tensors in: the two plain formats `ninfer-wgpu quantize` reads.
//!
//! - `.npy` (NumPy's format, versions 1–3): `\x93NUMPY`, a version, a header length, a Python
//!   dict literal `{'descr': '<f4', 'fortran_order': False, 'shape': (N, K), }`, then the data.
//!   Little-endian f32, f16, i32 and i64 (`<f4`, `<f2`, `<i4`, `<i8`), C order.
//! - safetensors: a u64 LE header length, a JSON header `{name: {dtype, shape, data_offsets}}`,
//!   then the data. F32, F16, BF16, I32 and I64.
//!
//! npy headers are parsed by hand (they are tiny), safetensors by its crate, with every length
//! checked against the file, so a bad input is an error, never a panic or an oversized
//! allocation. A whole checkpoint (one file or an index of shards) opens as a
//! `checkpoint::Checkpoint`, indexed up front, each tensor read only when it is converted.

use crate::encode::Source;
use crate::error::{clip, Error, Result};
use crate::numeric::{bf16_to_f32, f16_to_f32};

/// Source values by their stored type; converted to f32 only when a method needs it. Real
/// checkpoints mix float matrices with integer buffers (`position_ids`), so integers are read
/// too; they are never quantized.
#[derive(Debug, Clone, PartialEq)]
pub enum FloatData {
    F32(Vec<f32>),
    F16(Vec<u16>),
    Bf16(Vec<u16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// One named input tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct FloatTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub data: FloatData,
}

impl FloatTensor {
    /// The values as an encoder source (no conversion).
    /// The float values as an encoder source; `None` for integer tensors.
    pub fn source(&self) -> Option<Source<'_>> {
        match &self.data {
            FloatData::F32(v) => Some(Source::F32(v)),
            FloatData::F16(v) => Some(Source::F16(v)),
            FloatData::Bf16(v) => Some(Source::Bf16(v)),
            FloatData::I32(_) | FloatData::I64(_) => None,
        }
    }

    pub fn is_float(&self) -> bool {
        self.source().is_some()
    }

    /// Integer values as int32 words; an int64 value outside int32 is an error naming the
    /// tensor, the element and the value (nothing is clipped).
    pub fn to_i32(&self) -> Result<Vec<i32>> {
        match &self.data {
            FloatData::I32(v) => Ok(v.clone()),
            FloatData::I64(v) => v
                .iter()
                .enumerate()
                .map(|(i, &x)| {
                    i32::try_from(x).map_err(|_| {
                        Error::Numeric { target: "int32", value: x as f64, rule: "an int64 value must fit int32" }
                            .context(&self.name, i)
                    })
                })
                .collect(),
            FloatData::F32(_) | FloatData::F16(_) | FloatData::Bf16(_) => {
                Err(Error::Unsupported(format!("{}: a float tensor has no integer words", self.name)))
            }
        }
    }

    pub fn dtype(&self) -> &'static str {
        match self.data {
            FloatData::F32(_) => "f32",
            FloatData::F16(_) => "f16",
            FloatData::Bf16(_) => "bf16",
            FloatData::I32(_) => "i32",
            FloatData::I64(_) => "i64",
        }
    }

    /// Every float value widened to binary32 (exact for f16 and bf16). An integer tensor is an
    /// error, not an empty or converted vector: integers are not floats.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        match &self.data {
            FloatData::F32(v) => Ok(v.clone()),
            FloatData::F16(v) => Ok(v.iter().map(|&w| f16_to_f32(w)).collect()),
            FloatData::Bf16(v) => Ok(v.iter().map(|&w| bf16_to_f32(w)).collect()),
            FloatData::I32(_) | FloatData::I64(_) => {
                Err(Error::Unsupported(format!("{}: an integer tensor has no float values", self.name)))
            }
        }
    }
}

pub(super) fn bad(kind: &str, detail: impl std::fmt::Display) -> Error {
    Error::Io(format!("{kind}: {detail}"))
}

pub(super) const NPY_MAGIC: &[u8] = b"\x93NUMPY";

fn elements(kind: &str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(kind, format!("shape {shape:?} overflows")))
}

/// Splits `data` into little-endian words of `W` bytes, after checking the exact length.
fn words<const W: usize>(kind: &str, data: &[u8], count: usize) -> Result<Vec<[u8; W]>> {
    if Some(data.len()) != count.checked_mul(W) {
        return Err(bad(
            kind,
            format!("{count} elements of {W} bytes need {} data bytes, found {}", count.saturating_mul(W), data.len()),
        ));
    }
    Ok(data.chunks_exact(W).map(|c| c.try_into().unwrap_or([0; W])).collect())
}

fn typed(kind: &str, dtype: &str, data: &[u8], count: usize) -> Result<FloatData> {
    Ok(match dtype {
        "f32" => FloatData::F32(words::<4>(kind, data, count)?.into_iter().map(f32::from_le_bytes).collect()),
        "f16" => FloatData::F16(words::<2>(kind, data, count)?.into_iter().map(u16::from_le_bytes).collect()),
        "bf16" => FloatData::Bf16(words::<2>(kind, data, count)?.into_iter().map(u16::from_le_bytes).collect()),
        "i32" => FloatData::I32(words::<4>(kind, data, count)?.into_iter().map(i32::from_le_bytes).collect()),
        "i64" => FloatData::I64(words::<8>(kind, data, count)?.into_iter().map(i64::from_le_bytes).collect()),
        other => return Err(bad(kind, format!("dtype {other} is not f32, f16, bf16, i32 or i64"))),
    })
}

/// Parses a `.npy` file.
pub fn parse_npy(bytes: &[u8], name: &str) -> Result<FloatTensor> {
    index_npy(bytes, name)?.read(bytes)
}

/// Where a `.npy` file's one tensor lies, its header checked and its data length exact.
pub(super) fn index_npy(bytes: &[u8], name: &str) -> Result<Stored> {
    const KIND: &str = "npy";
    if !bytes.starts_with(NPY_MAGIC) {
        return Err(bad(KIND, "no \\x93NUMPY magic"));
    }
    let (len_at, len_bytes) = match bytes.get(6) {
        Some(1) => (8, 2),
        Some(2) | Some(3) => (8, 4),
        v => return Err(bad(KIND, format!("unsupported version {v:?}"))),
    };
    let header_start = len_at + len_bytes;
    let len_field = bytes.get(len_at..header_start).ok_or_else(|| bad(KIND, "truncated preamble"))?;
    let header_len = len_field.iter().rev().fold(0usize, |a, &b| (a << 8) | b as usize);
    let header_end = header_start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad(KIND, "header runs past the end of the file"))?;
    let header = std::str::from_utf8(&bytes[header_start..header_end]).map_err(|_| bad(KIND, "header is not text"))?;
    let dict = PyDict::parse(header).map_err(|e| bad(KIND, format!("header {}: {e}", clip(&format!("{header:?}")))))?;
    let dtype = match dict.descr.as_str() {
        "<f4" => "f32",
        "<f2" => "f16",
        "<i4" => "i32",
        "<i8" => "i64",
        d => {
            return Err(bad(
                KIND,
                format!(
                    "descr {}: only little-endian f32, f16, i32 and i64 ('<f4', '<f2', '<i4', '<i8') are read",
                    clip(d)
                ),
            ))
        }
    };
    if dict.fortran_order {
        return Err(bad(KIND, "fortran_order is True: only C order is read"));
    }
    let stored = Stored::new(KIND, name.to_owned(), dtype, dict.shape, header_end..bytes.len())?;
    Ok(stored)
}

/// The three keys of an npy header.
struct PyDict {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// The subset of Python literal syntax npy headers use: strings, True/False, int tuples.
impl PyDict {
    fn parse(text: &str) -> std::result::Result<PyDict, String> {
        let mut p = Cursor { s: text.as_bytes(), at: 0 };
        p.expect(b'{')?;
        let (mut descr, mut fortran, mut shape) = (None, None, None);
        loop {
            p.ws();
            if p.eat(b'}') {
                break;
            }
            let key = p.string()?;
            p.ws();
            p.expect(b':')?;
            p.ws();
            match key.as_str() {
                "descr" => descr = Some(p.string()?),
                "fortran_order" => fortran = Some(p.boolean()?),
                "shape" => shape = Some(p.tuple()?),
                k => return Err(format!("unknown key {k:?}")),
            }
            p.ws();
            if !p.eat(b',') {
                p.ws();
                p.expect(b'}')?;
                break;
            }
        }
        match (descr, fortran, shape) {
            (Some(descr), Some(fortran_order), Some(shape)) => Ok(PyDict { descr, fortran_order, shape }),
            _ => Err("descr, fortran_order and shape are all required".into()),
        }
    }
}

struct Cursor<'s> {
    s: &'s [u8],
    at: usize,
}

impl Cursor<'_> {
    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.s.get(self.at) == Some(&c);
        self.at += hit as usize;
        hit
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) {
            return Ok(());
        }
        Err(format!("expected {:?} at byte {}", c as char, self.at))
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        let quote = *self
            .s
            .get(self.at)
            .filter(|&&q| q == b'\'' || q == b'"')
            .ok_or_else(|| format!("expected a string at byte {}", self.at))?;
        let start = self.at + 1;
        let len = self.s[start..].iter().position(|&c| c == quote).ok_or("unterminated string")?;
        self.at = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn boolean(&mut self) -> std::result::Result<bool, String> {
        for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(v);
            }
        }
        Err(format!("expected True or False at byte {}", self.at))
    }

    /// `()`, `(3,)`, `(2, 3)`.
    fn tuple(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            let start = self.at;
            while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
            let digits = std::str::from_utf8(&self.s[start..self.at]).unwrap_or_default();
            dims.push(digits.parse::<usize>().map_err(|_| format!("expected a dimension at byte {start}"))?);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

/// Parses a safetensors file with the `safetensors` crate (which refuses overlapping, gapped or
/// out-of-bounds data offsets and sizes that disagree with the shape): every tensor, sorted by
/// name. The header is first read as strict JSON, because a map deserializer keeps the last of
/// two equal keys and the crate's would too.
pub fn parse_safetensors(bytes: &[u8]) -> Result<Vec<FloatTensor>> {
    index_safetensors(bytes)?.iter().map(|t| t.read(bytes)).collect()
}

/// Where each tensor of a safetensors file lies (checked as [`parse_safetensors`] says), sorted
/// by name, without reading any data.
pub(super) fn index_safetensors(bytes: &[u8]) -> Result<Vec<Stored>> {
    const KIND: &str = "safetensors";
    let n = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0xFF; 8])))
        .ok_or_else(|| bad(KIND, "shorter than the 8-byte header length"))?;
    let header = usize::try_from(n)
        .ok()
        .and_then(|n| n.checked_add(8))
        .and_then(|end| bytes.get(8..end))
        .ok_or_else(|| bad(KIND, format!("header length {n} runs past the end of the file (not .npy either)")))?;
    super::json::check_strict(header).map_err(|e| bad(KIND, format!("header: {e}")))?;
    let file = safetensors::SafeTensors::deserialize(bytes).map_err(|e| bad(KIND, clip(&e.to_string())))?;
    let mut views = file.tensors();
    views.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(views.len());
    for (name, view) in views {
        let dtype = match view.dtype() {
            safetensors::Dtype::F32 => "f32",
            safetensors::Dtype::F16 => "f16",
            safetensors::Dtype::BF16 => "bf16",
            safetensors::Dtype::I32 => "i32",
            safetensors::Dtype::I64 => "i64",
            d => {
                return Err(bad(KIND, format!("{}: dtype {d}: only F32, F16, BF16, I32 and I64 are read", clip(&name))))
            }
        };
        // The view borrows `bytes`; its place in them is what is kept.
        let start = view.data().as_ptr() as usize - bytes.as_ptr() as usize;
        let range = start..start + view.data().len();
        let kind = format!("{KIND}: {}", clip(&name));
        out.push(Stored::new(&kind, name, dtype, view.shape().to_vec(), range)?);
    }
    if out.is_empty() {
        return Err(bad(KIND, "no tensors"));
    }
    Ok(out)
}

/// One tensor of a checkpoint file, located but not read: its data length already checked
/// against the shape, so reading it cannot fail on size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub name: String,
    pub dtype: &'static str,
    pub shape: Vec<usize>,
    pub(super) data: std::ops::Range<usize>,
}

impl Stored {
    fn new(
        kind: &str,
        name: String,
        dtype: &'static str,
        shape: Vec<usize>,
        data: std::ops::Range<usize>,
    ) -> Result<Stored> {
        let count = elements(kind, &shape)?;
        let width = match dtype {
            "f16" | "bf16" => 2,
            "f32" | "i32" => 4,
            "i64" => 8,
            other => return Err(bad(kind, format!("dtype {other} is not f32, f16, bf16, i32 or i64"))),
        };
        if Some(data.len()) != count.checked_mul(width) {
            return Err(bad(
                kind,
                format!(
                    "{count} elements of {width} bytes need {} data bytes, found {}",
                    count.saturating_mul(width),
                    data.len()
                ),
            ));
        }
        Ok(Stored { name, dtype, shape, data })
    }

    /// Float values (converted by the target's method), not integers (kept as int32).
    pub fn is_float(&self) -> bool {
        matches!(self.dtype, "f32" | "f16" | "bf16")
    }

    /// Bytes of stored data.
    pub fn data_bytes(&self) -> usize {
        self.data.len()
    }

    /// Reads the values out of the file's `bytes` (the ones it was indexed from).
    pub fn read(&self, bytes: &[u8]) -> Result<FloatTensor> {
        let data = bytes
            .get(self.data.clone())
            .ok_or_else(|| bad("checkpoint", format!("{}: data outside the file", clip(&self.name))))?;
        self.values(data)
    }

    pub(super) fn values(&self, data: &[u8]) -> Result<FloatTensor> {
        let count = elements("checkpoint", &self.shape)?;
        // A file shortened since it was indexed reads short; `typed` then refuses the length.
        let data = typed(&clip(&self.name), self.dtype, data, count)?;
        Ok(FloatTensor { name: self.name.clone(), shape: self.shape.clone(), data })
    }
}
