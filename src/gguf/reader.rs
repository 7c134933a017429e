//! GGUF file reader (versions 2 and 3, little-endian): header, metadata of every value type,
//! tensor infos, `general.alignment`, data offsets. Memory-mapped; a tensor of a registered type
//! becomes an `EncodedTensor` borrowing the mapped bytes — no copy, no block decoding.
//!
//! Every count, length, offset and size is checked against the bytes actually present before
//! anything is allocated, so a malformed file is an error, never a panic or a huge allocation.

use crate::error::{clip, short_list, Error, Result};
use crate::format::{Category, Format};
use crate::layout::Layout;
use crate::tensor::{EncodedTensor, TensorDesc};
use std::collections::HashMap;
#[cfg(not(target_arch = "wasm32"))]
use std::path::Path;

const MAGIC: &[u8; 4] = b"GGUF";
/// GGML_MAX_DIMS.
const MAX_DIMS: u32 = 4;
/// Default `general.alignment`.
const DEFAULT_ALIGNMENT: u64 = 32;
/// Arrays of arrays are legal; nesting deeper than this is refused.
const MAX_NESTING: usize = 8;
/// The most strings one metadata array holds: 2^22, sixteen times the largest vocabulary of the
/// families read (gemma3's 262144 tokens) and above every merge list. A string costs far more in
/// memory than its 8-byte length in the file, so without a bound a file's array of 20 million
/// tokens took gigabytes before any reader of it could refuse it.
pub const MAX_STRINGS: usize = 1 << 22;

/// A metadata value of any GGUF type.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Array),
    U64(u64),
    I64(i64),
    F64(f64),
}

/// A metadata array, kept by element type: numbers and bools packed (a 64 MB u8 array takes
/// 64 MB, not a 32-byte value per byte), strings as strings, nested arrays as arrays. Memory
/// stays within a small multiple of the bytes the file spends on the array.
#[derive(Debug, Clone, PartialEq)]
pub enum Array {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    String(Vec<String>),
    Array(Vec<Array>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl Array {
    pub fn len(&self) -> usize {
        match self {
            Array::U8(v) => v.len(),
            Array::I8(v) => v.len(),
            Array::U16(v) => v.len(),
            Array::I16(v) => v.len(),
            Array::U32(v) => v.len(),
            Array::I32(v) => v.len(),
            Array::F32(v) => v.len(),
            Array::Bool(v) => v.len(),
            Array::String(v) => v.len(),
            Array::Array(v) => v.len(),
            Array::U64(v) => v.len(),
            Array::I64(v) => v.len(),
            Array::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Fixed-size little-endian words of an array, converted in one pass over one bounds-checked run.
fn packed<const W: usize, T>(raw: &[u8], from: fn([u8; W]) -> T) -> Vec<T> {
    raw.chunks_exact(W).map(|c| from(c.try_into().unwrap_or([0; W]))).collect()
}

/// Where a tensor stands with the format registry.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorKind {
    /// A registered format: loadable as an `EncodedTensor` of [`TensorInfo::shape`].
    Registered { format: Format, layout: Layout },
    /// A ggml type the registry does not hold (f16, q4_1, …): listed, not loadable.
    NotRegistered { type_name: &'static str },
}

#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// ggml's dimensions, innermost first.
    pub dims: Dims,
    pub ggml_type: u32,
    /// Offset inside the data section.
    pub offset: u64,
    /// Byte size, where the type's block geometry is known.
    pub bytes: Option<u64>,
    pub kind: TensorKind,
}

/// A tensor's 1..=4 dimensions, kept inline: a file of many small tensors would otherwise
/// spend an allocation per tensor on them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    len: u8,
    dims: [u64; MAX_DIMS as usize],
}

impl Dims {
    fn new(dims: &[u64]) -> Dims {
        let mut out = Dims { len: dims.len() as u8, dims: [0; MAX_DIMS as usize] };
        out.dims[..dims.len()].copy_from_slice(dims);
        out
    }
}

impl std::ops::Deref for Dims {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        &self.dims[..self.len as usize]
    }
}

impl std::fmt::Debug for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl TensorInfo {
    /// The logical shape a registered tensor loads as: [N, K] for ggml blocks (rows of K, the
    /// first dimension), the dimensions outermost first otherwise. Sizes were checked to fit
    /// the address space when the file was opened.
    pub fn shape(&self) -> Vec<usize> {
        let blocks =
            matches!(self.kind, TensorKind::Registered { format, .. } if format.category() == Category::GgufBlock);
        if blocks {
            let k = self.dims[0];
            let n: u64 = self.dims[1..].iter().product();
            vec![n as usize, k as usize]
        } else {
            self.dims.iter().rev().map(|&d| d as usize).collect()
        }
    }
}

enum Bytes {
    #[cfg(not(target_arch = "wasm32"))]
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            #[cfg(not(target_arch = "wasm32"))]
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A GGUF file's header: version, metadata, tensor infos, alignment and where the data starts
/// — everything before the tensor data, parsed without it (a streamed model's first bytes).
pub struct GgufHeader {
    pub version: u32,
    pub metadata: Vec<(String, Value)>,
    keys: HashMap<String, usize>,
    pub tensors: Vec<TensorInfo>,
    /// Tensor indices sorted by name: 4 bytes a tensor, where a map of names would copy each
    /// name again (a file of many small tensors is mostly names).
    index: Vec<u32>,
    pub alignment: u64,
    pub data_offset: u64,
}

/// An open GGUF file: its header, and the bytes its tensors borrow.
pub struct GgufFile {
    header: GgufHeader,
    bytes: Bytes,
}

impl std::ops::Deref for GgufFile {
    type Target = GgufHeader;
    fn deref(&self) -> &GgufHeader {
        &self.header
    }
}

fn malformed(rule: &'static str, detail: String) -> Error {
    Error::Io(format!("malformed GGUF: {rule}: {detail}"))
}

/// Adds where an error happened (a key or tensor name) without nesting its prefix again.
fn context(e: Error, at: String) -> Error {
    match e {
        Error::Io(m) => Error::Io(format!("{m} ({at})")),
        other => other,
    }
}

/// A bounds-checked little-endian cursor.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
    /// `b` may be the first bytes of a longer file: running past its end then sets `short`
    /// (read more and parse again) rather than meaning the file is truncated.
    prefix: bool,
    short: bool,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let left = (self.b.len() - self.at) as u64;
        if n > left {
            self.short = self.prefix;
            return Err(malformed("truncated", format!("{what} needs {n} bytes at offset {}, {left} remain", self.at)));
        }
        let s = &self.b[self.at..self.at + n as usize];
        self.at += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64, what)?);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn remaining(&self) -> u64 {
        (self.b.len() - self.at) as u64
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let len = self.u64(what)?;
        let raw = self.take(len, what)?;
        String::from_utf8(raw.to_vec())
            .map_err(|_| malformed("strings are UTF-8", format!("{what} at offset {}", self.at - raw.len())))
    }

    /// A count of items each at least `min_bytes` long: refused when the bytes cannot hold it.
    fn count(&mut self, what: &str, min_bytes: u64) -> Result<u64> {
        let n = self.u64(what)?;
        if n.checked_mul(min_bytes).is_none_or(|need| need > self.remaining()) {
            self.short = self.prefix;
            return Err(malformed(
                "counts fit the file",
                format!("{what} = {n}, but only {} bytes remain", self.remaining()),
            ));
        }
        Ok(n)
    }

    /// An array value after its type tag: element type, count, elements.
    fn array_value(&mut self, depth: usize) -> Result<Array> {
        if depth >= MAX_NESTING {
            return Err(malformed("arrays nest at most 8 deep", String::new()));
        }
        let elem = self.u32("array element type")?;
        let min = match elem {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            8 | 10 | 11 | 12 => 8,
            9 => 12,
            t => return Err(malformed("value types are 0..=12", format!("array element type {t}"))),
        };
        let n = self.count("array length", min)?;
        if elem == 8 && n > MAX_STRINGS as u64 {
            return Err(malformed("an array holds at most 2^22 strings", format!("an array of {n}")));
        }
        // Fixed-size elements: `count` checked that n * min bytes remain.
        let run = |c: &mut Self| c.take(n * min, "array elements");
        Ok(match elem {
            0 => Array::U8(run(self)?.to_vec()),
            1 => Array::I8(run(self)?.iter().map(|&b| b as i8).collect()),
            2 => Array::U16(packed(run(self)?, u16::from_le_bytes)),
            3 => Array::I16(packed(run(self)?, i16::from_le_bytes)),
            4 => Array::U32(packed(run(self)?, u32::from_le_bytes)),
            5 => Array::I32(packed(run(self)?, i32::from_le_bytes)),
            6 => Array::F32(packed(run(self)?, f32::from_le_bytes)),
            7 => Array::Bool(
                run(self)?
                    .iter()
                    .map(|&b| match b {
                        0 => Ok(false),
                        1 => Ok(true),
                        b => Err(malformed("bools are 0 or 1", format!("found {b}"))),
                    })
                    .collect::<Result<_>>()?,
            ),
            8 => Array::String((0..n).map(|_| self.string("string element")).collect::<Result<_>>()?),
            10 => Array::U64(packed(run(self)?, u64::from_le_bytes)),
            11 => Array::I64(packed(run(self)?, i64::from_le_bytes)),
            12 => Array::F64(packed(run(self)?, f64::from_le_bytes)),
            _ => Array::Array((0..n).map(|_| self.array_value(depth + 1)).collect::<Result<_>>()?),
        })
    }

    fn value(&mut self, ty: u32, depth: usize) -> Result<Value> {
        Ok(match ty {
            0 => Value::U8(self.array::<1>("u8")?[0]),
            1 => Value::I8(self.array::<1>("i8")?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.array("u16")?)),
            3 => Value::I16(i16::from_le_bytes(self.array("i16")?)),
            4 => Value::U32(self.u32("u32")?),
            5 => Value::I32(i32::from_le_bytes(self.array("i32")?)),
            6 => Value::F32(f32::from_le_bytes(self.array("f32")?)),
            7 => match self.array::<1>("bool")?[0] {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(malformed("bools are 0 or 1", format!("found {b}"))),
            },
            8 => Value::String(self.string("string value")?),
            9 => Value::Array(self.array_value(depth)?),
            10 => Value::U64(self.u64("u64")?),
            11 => Value::I64(i64::from_le_bytes(self.array("i64")?)),
            12 => Value::F64(f64::from_le_bytes(self.array("f64")?)),
            t => return Err(malformed("value types are 0..=12", format!("type {t}"))),
        })
    }
}

/// ggml types the registry does not hold, with their (block values, block bytes) where known.
fn unregistered(ggml_type: u32) -> (&'static str, Option<(u64, u64)>) {
    match ggml_type {
        1 => ("f16", Some((1, 2))),
        3 => ("q4_1", Some((32, 20))),
        7 => ("q5_1", Some((32, 24))),
        9 => ("q8_1", Some((32, 36))),
        15 => ("q8_k", Some((256, 292))),
        24 => ("i8", Some((1, 1))),
        25 => ("i16", Some((1, 2))),
        27 => ("i64", Some((1, 8))),
        28 => ("f64", Some((1, 8))),
        40 => ("nvfp4 (ggml's)", Some((64, 36))),
        _ => ("unknown ggml type", None),
    }
}

/// The registered format of a ggml type: gguf_* block formats, and ggml's plain f32, f16, bf16
/// and i32 tensors, which are `contiguous_le_v1` words in C order once the dimensions are reversed.
fn registered(ggml_type: u32) -> Option<Format> {
    match ggml_type {
        0 => Some(Format::Fp32),
        1 => Some(Format::Fp16),
        26 => Some(Format::Int32),
        30 => Some(Format::Bf16),
        t => Format::from_ggml_type(t),
    }
}

fn describe(ggml_type: u32, dims: &[u64]) -> Result<(TensorKind, Option<u64>)> {
    let elements = dims
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| malformed("tensor sizes fit 64 bits", format!("dims {dims:?}")))?;
    let to_usize = |v: u64| {
        usize::try_from(v).map_err(|_| malformed("tensor sizes fit the address space", format!("dims {dims:?}")))
    };
    match registered(ggml_type) {
        Some(format) if format.category() == Category::GgufBlock => {
            let k = dims.first().copied().unwrap_or(1);
            let n = elements / k.max(1);
            let shape = vec![to_usize(n)?, to_usize(k)?];
            // A row of partial blocks has no size: refused here, so `inspect` never shows one.
            let bytes = TensorDesc::new(format, Layout::GgufBlocksV1, &shape).encoded_bytes().map_err(|e| {
                malformed("a block tensor's first dimension is a multiple of its block", format!("{format}: {e}"))
            })?;
            Ok((TensorKind::Registered { format, layout: Layout::GgufBlocksV1 }, Some(bytes as u64)))
        }
        Some(format) => {
            let shape = dims.iter().rev().map(|&d| to_usize(d)).collect::<Result<Vec<_>>>()?;
            let bytes = TensorDesc::new(format, Layout::ContiguousLeV1, &shape)
                .encoded_bytes()
                .map_err(|e| malformed("tensor sizes fit the address space", e.to_string()))?;
            Ok((TensorKind::Registered { format, layout: Layout::ContiguousLeV1 }, Some(bytes as u64)))
        }
        None => {
            let (type_name, geometry) = unregistered(ggml_type);
            let bytes = match geometry {
                Some((v, _)) if !dims[0].is_multiple_of(v) => {
                    return Err(malformed(
                        "a block tensor's first dimension is a multiple of its block",
                        format!("{type_name}: ne[0] = {} is not a multiple of {v}", dims[0]),
                    ))
                }
                Some((v, b)) => Some(
                    (elements / v)
                        .checked_mul(b)
                        .ok_or_else(|| malformed("tensor sizes fit 64 bits", format!("dims {dims:?}")))?,
                ),
                None => None,
            };
            Ok((TensorKind::NotRegistered { type_name }, bytes))
        }
    }
}

impl GgufFile {
    /// Maps and parses a file; only the header, metadata and tensor infos are read.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile> {
        let path = path.as_ref();
        GgufFile::parse(Bytes::Mapped(crate::files::map_regular(path)?))
    }

    /// Parses a GGUF image held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<GgufFile> {
        GgufFile::parse(Bytes::Owned(bytes))
    }

    fn parse(bytes: Bytes) -> Result<GgufFile> {
        let b = bytes.as_slice();
        let header = GgufHeader::parse(&mut Cursor { b, at: 0, prefix: false, short: false })?;
        let data_len = (b.len() as u64).saturating_sub(header.data_offset);
        for t in &header.tensors {
            if let Some(bytes) = t.bytes {
                if t.offset.checked_add(bytes).is_none_or(|end| end > data_len) {
                    return Err(malformed(
                        "tensor data lies inside the file",
                        format!(
                            "`{}`: {bytes} bytes at data offset {}, data section holds {data_len}",
                            t.name, t.offset
                        ),
                    ));
                }
            }
        }
        Ok(GgufFile { header, bytes })
    }
}

impl GgufHeader {
    /// The header of a GGUF file whose first bytes are `prefix`, or `None` where the header
    /// runs past them (read more and call again). The same rules as [`GgufFile`]'s, except
    /// that tensor data is not there to check.
    pub fn parse_prefix(prefix: &[u8]) -> Result<Option<GgufHeader>> {
        let mut c = Cursor { b: prefix, at: 0, prefix: true, short: false };
        match GgufHeader::parse(&mut c) {
            Ok(header) => Ok(Some(header)),
            Err(_) if c.short => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn parse(c: &mut Cursor<'_>) -> Result<GgufHeader> {
        let b = c.b;
        if c.take(4, "magic")? != MAGIC {
            return Err(malformed("magic is \"GGUF\"", format!("found {:02x?}", &b[..4])));
        }
        let version = c.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(malformed("version is 2 or 3", format!("version {version}")));
        }
        // Each tensor info takes at least 8 (name) + 4 + 4 + 8 bytes; each pair 8 + 4 + 1.
        let n_tensors = c.count("tensor count", 24)?;
        let n_kv = c.count("metadata count", 13)?;
        let mut metadata = Vec::with_capacity(n_kv as usize);
        let mut keys = HashMap::with_capacity(n_kv as usize);
        for _ in 0..n_kv {
            let key = c.string("metadata key")?;
            let ty = c.u32("metadata value type")?;
            let value = c.value(ty, 0).map_err(|e| context(e, format!("key `{}`", clip(&key))))?;
            if keys.insert(key.clone(), metadata.len()).is_some() {
                return Err(malformed("metadata keys are unique", format!("`{}` repeats", clip(&key))));
            }
            metadata.push((key, value));
        }
        let alignment = match keys.get("general.alignment").map(|&i| &metadata[i].1) {
            None => DEFAULT_ALIGNMENT,
            Some(Value::U32(a)) if *a > 0 && a.is_power_of_two() => *a as u64,
            Some(v) => return Err(malformed("general.alignment is a power-of-two u32", format!("{v:?}"))),
        };
        let mut tensors: Vec<TensorInfo> = Vec::with_capacity(n_tensors as usize);
        for _ in 0..n_tensors {
            let name = c.string("tensor name")?;
            let n_dims = c.u32("dimension count")?;
            if n_dims == 0 || n_dims > MAX_DIMS {
                return Err(malformed("a tensor has 1..=4 dimensions", format!("`{name}` has {n_dims}")));
            }
            let dims = (0..n_dims).map(|_| c.u64("dimension")).collect::<Result<Vec<u64>>>()?;
            if dims.contains(&0) {
                return Err(malformed("dimensions are positive", format!("`{name}`: {dims:?}")));
            }
            let ggml_type = c.u32("tensor type")?;
            let offset = c.u64("tensor offset")?;
            let (kind, bytes) =
                describe(ggml_type, &dims).map_err(|e| context(e, format!("tensor `{}`", clip(&name))))?;
            tensors.push(TensorInfo { name, dims: Dims::new(&dims), ggml_type, offset, bytes, kind });
        }
        let count = u32::try_from(tensors.len())
            .map_err(|_| malformed("tensor counts fit 32 bits", format!("{} tensors", tensors.len())))?;
        let mut index: Vec<u32> = (0..count).collect();
        index.sort_unstable_by(|&a, &b| tensors[a as usize].name.cmp(&tensors[b as usize].name));
        if let Some(w) = index.windows(2).find(|w| tensors[w[0] as usize].name == tensors[w[1] as usize].name) {
            let name = &tensors[w[0] as usize].name;
            return Err(malformed("tensor names are unique", format!("`{}` repeats", clip(name))));
        }
        let data_offset = (c.at as u64).div_ceil(alignment) * alignment;
        // Tensor data comes in the order of the infos and never overlaps (llama.cpp requires
        // the same); a tensor of unknown size ends where it starts, as far as this can tell.
        let mut end = 0u64;
        let mut previous = "";
        for t in &tensors {
            if t.offset < end {
                return Err(malformed(
                    "tensors lie in the order of their infos without overlapping",
                    format!(
                        "`{}` at data offset {} starts before `{}` ends at {end}",
                        clip(&t.name),
                        t.offset,
                        clip(previous)
                    ),
                ));
            }
            end = t.offset.saturating_add(t.bytes.unwrap_or(0));
            previous = &t.name;
        }
        for t in &tensors {
            if t.offset % alignment != 0 {
                return Err(malformed(
                    "tensor offsets are multiples of general.alignment",
                    format!("`{}` at {} (alignment {alignment})", t.name, t.offset),
                ));
            }
        }
        Ok(GgufHeader { version, metadata, keys, tensors, index, alignment, data_offset })
    }

    pub fn metadata(&self, key: &str) -> Option<&Value> {
        self.keys.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        let at = self.index.binary_search_by(|&i| self.tensors[i as usize].name.as_str().cmp(name)).ok()?;
        Some(&self.tensors[self.index[at] as usize])
    }

    /// The named tensor's description: refused where its type is not registered.
    pub fn desc(&self, name: &str) -> Result<TensorDesc> {
        let t = self.info(name).ok_or_else(|| Error::UnknownName {
            kind: "tensor",
            name: name.to_string(),
            valid: short_list(self.tensors.iter().map(|t| t.name.as_str())),
        })?;
        match &t.kind {
            TensorKind::Registered { format, layout } => Ok(TensorDesc::new(*format, *layout, &t.shape())),
            TensorKind::NotRegistered { type_name } => Err(Error::Unsupported(format!(
                "tensor `{name}` has ggml type {} ({type_name}): format not registered",
                t.ggml_type
            ))),
        }
    }
}

impl GgufFile {
    /// Every byte of the file, header included.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The named tensor as an `EncodedTensor` borrowing the file's bytes.
    pub fn tensor(&self, name: &str) -> Result<EncodedTensor<'_>> {
        let desc = self.desc(name)?;
        let bytes = desc.encoded_bytes()?;
        let start = (self.data_offset + self.info(name).map_or(0, |t| t.offset)) as usize;
        EncodedTensor::new(desc, &self.bytes.as_slice()[start..start + bytes])
    }
}
