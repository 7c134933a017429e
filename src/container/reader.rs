//! Opening an artifact: headers, the JSON root and file sizes, over memory maps. No payload byte
//! is read until a tensor is asked for, so a multi-GB artifact opens in the time it takes to
//! parse its JSON.

use super::json::parse_root;
use super::root::{Binding, BindingPart, ObjectEntry, ObjectKind, Root};
use super::{align_up, hex, rule, violation, ENTRY_MAGIC, HEADER_BYTES, PART_MAGIC, PAYLOAD_ALIGN, TENSOR_ALIGN};
use crate::error::{short_list, Error, Result};
use crate::format::Format;
use crate::layout::Layout;
use crate::tensor::{EncodedTensor, TensorDesc};
#[cfg(not(target_arch = "wasm32"))]
use memmap2::Mmap;
use std::borrow::Cow;
use std::collections::HashMap;
#[cfg(not(target_arch = "wasm32"))]
use std::fs::File;
use std::path::{Path, PathBuf};

/// A file's bytes: memory-mapped (native files), or handed over in memory (a browser's
/// `ArrayBuffer`, a fuzzer's input).
enum Image {
    #[cfg(not(target_arch = "wasm32"))]
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for Image {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            #[cfg(not(target_arch = "wasm32"))]
            Image::Mapped(m) => m,
            Image::Owned(v) => v,
        }
    }
}

/// One file and where its payload sits in the logical payload.
struct Mapped {
    path: PathBuf,
    map: Image,
    /// Byte offset of the payload inside this file.
    payload_start: usize,
    /// `P_i`: where this file's payload begins in the logical payload.
    logical_start: u64,
    payload_bytes: u64,
}

impl Mapped {
    fn logical_end(&self) -> u64 {
        self.logical_start + self.payload_bytes
    }

    /// Logical bytes `[from, to)`, which the caller has placed inside this file's payload.
    fn slice(&self, from: u64, to: u64) -> Option<&[u8]> {
        let a = usize::try_from(from.checked_sub(self.logical_start)?).ok()?.checked_add(self.payload_start)?;
        let b = usize::try_from(to.checked_sub(self.logical_start)?).ok()?.checked_add(self.payload_start)?;
        self.map.get(a..b)
    }
}

/// An open `.ninfer` artifact.
pub struct Artifact {
    path: PathBuf,
    artifact_id: [u8; 16],
    root: Root,
    /// Object id → position in `root.objects`: lookups stay O(1) for artifacts of 10^5 tensors.
    index: HashMap<String, usize>,
    files: Vec<Mapped>,
}

impl std::fmt::Debug for Artifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Artifact")
            .field("path", &self.path)
            .field("artifact_id", &hex(&self.artifact_id))
            .field("files", &self.files.len())
            .field("objects", &self.root.objects.len())
            .finish()
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("{}: {e}", path.display()))
}

/// Maps a whole file read-only.
#[cfg(not(target_arch = "wasm32"))]
fn map(file: &File, path: &Path) -> Result<Mmap> {
    // SAFETY: the map is read-only and never outlives `Artifact`. Like every mmap reader, we rely
    // on the file not being truncated or rewritten while it is open (the writer replaces files by
    // rename, which leaves an open map on the old inode intact).
    unsafe { Mmap::map(file) }.map_err(|e| io(path, e))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The first nonzero byte of `bytes`, as an offset.
fn first_nonzero(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b != 0)
}

fn to_usize(v: u64, rule: &'static str, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| violation(rule, format!("{what} = {v} exceeds this machine's address space")))
}

impl Artifact {
    /// Opens the entry file and every part, checking every structural rule that needs no
    /// registry: headers, JSON, sizes, the artifact id in every part. Reads no payload.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn open(path: impl AsRef<Path>) -> Result<Artifact> {
        let path = path.as_ref();
        let file = crate::files::open_regular(path)?;
        let len = file.metadata().map_err(|e| io(path, e))?.len();
        if len < HEADER_BYTES as u64 {
            return Err(violation(rule::ENTRY_HEADER, format!("{} is {len} bytes", path.display())));
        }
        let entry = Image::Mapped(map(&file, path)?);
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        Artifact::assemble(path, entry, |name| {
            let part = dir.join(name);
            let file = crate::files::open_regular(&part).map_err(|e| violation(rule::PART_OPEN, e.to_string()))?;
            Ok((part.clone(), Image::Mapped(map(&file, &part)?)))
        })
    }

    /// An artifact held in memory: the entry's bytes, and each continuation part's bytes by
    /// its file name (`parts` is asked once per part the entry lists). Checks as [`Artifact::open`].
    pub fn from_bytes(
        entry_name: &str,
        entry: Vec<u8>,
        mut parts: impl FnMut(&str) -> Result<Vec<u8>>,
    ) -> Result<Artifact> {
        Artifact::assemble(Path::new(entry_name), Image::Owned(entry), |name| {
            Ok((PathBuf::from(name), Image::Owned(parts(name)?)))
        })
    }

    fn assemble(path: &Path, entry: Image, mut part: impl FnMut(&str) -> Result<(PathBuf, Image)>) -> Result<Artifact> {
        // Sizes below come from the bytes themselves, not file metadata read before mapping.
        let len = entry.len() as u64;
        if len < HEADER_BYTES as u64 {
            return Err(violation(rule::ENTRY_HEADER, format!("{} is {len} bytes", path.display())));
        }
        if entry[..8] != ENTRY_MAGIC {
            return Err(violation(rule::ENTRY_HEADER, format!("{} starts with {}", path.display(), hex(&entry[..8]))));
        }
        let json_bytes = u64_at(&entry, 8);
        let mut artifact_id = [0u8; 16];
        artifact_id.copy_from_slice(&entry[16..32]);
        let json_end =
            (HEADER_BYTES as u64).checked_add(json_bytes).filter(|&e| json_bytes > 0 && e <= len).ok_or_else(|| {
                violation(rule::ENTRY_JSON_BYTES, format!("json_bytes = {json_bytes} in a {len}-byte file"))
            })?;
        // json_end <= len, and the whole file is mapped, so these conversions cannot fail.
        let json_end = to_usize(json_end, rule::ENTRY_JSON_BYTES, "the JSON end")?;
        let parsed = parse_root(&entry[HEADER_BYTES..json_end])?;
        let payload_start = align_up(json_end as u64, PAYLOAD_ALIGN as u64)
            .ok_or_else(|| violation(rule::ENTRY_JSON_BYTES, "payload start overflows"))?;
        let gap_end = payload_start.min(len) as usize;
        if let Some(at) = first_nonzero(&entry[json_end..gap_end]) {
            return Err(violation(rule::ENTRY_GAP, format!("byte {} is {:#04x}", json_end + at, entry[json_end + at])));
        }
        let entry_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let root = Root::parse(&parsed, &entry_name)?;
        drop(parsed);
        let expected = payload_start.checked_add(root.files[0].payload_bytes);
        if expected != Some(len) {
            return Err(violation(
                rule::ENTRY_SIZE,
                format!(
                    "{} is {len} bytes; payload_start {payload_start} + payload_bytes {} = {}",
                    path.display(),
                    root.files[0].payload_bytes,
                    expected.map(|e| e.to_string()).unwrap_or("overflow".into())
                ),
            ));
        }
        let starts = root.file_starts();
        let mut files = vec![Mapped {
            path: path.to_path_buf(),
            map: entry,
            payload_start: payload_start as usize,
            logical_start: 0,
            payload_bytes: root.files[0].payload_bytes,
        }];
        for (i, f) in root.files.iter().enumerate().skip(1) {
            let name = f.path.as_deref().unwrap_or_default();
            let (part_path, image) = part(name)?;
            check_part(&image, &part_path, i, &artifact_id, f.payload_bytes)?;
            files.push(Mapped {
                path: part_path,
                map: image,
                payload_start: PAYLOAD_ALIGN,
                logical_start: starts[i],
                payload_bytes: f.payload_bytes,
            });
        }
        let index = root.objects.iter().enumerate().map(|(i, o)| (o.id.clone(), i)).collect();
        Ok(Artifact { path: path.to_path_buf(), artifact_id, root, index, files })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn artifact_id(&self) -> [u8; 16] {
        self.artifact_id
    }

    /// The parsed JSON root (components, objects, bindings, uses, files, metadata, provenance).
    pub fn root(&self) -> &Root {
        &self.root
    }

    pub fn objects(&self) -> &[ObjectEntry] {
        &self.root.objects
    }

    pub fn object(&self, id: &str) -> Option<&ObjectEntry> {
        self.index.get(id).map(|&i| &self.root.objects[i])
    }

    /// The paths of every file, entry first.
    pub fn file_paths(&self) -> Vec<&Path> {
        self.files.iter().map(|f| f.path.as_path()).collect()
    }

    fn entry(&self, id: &str) -> Result<&ObjectEntry> {
        self.object(id).ok_or_else(|| {
            let valid = short_list(self.root.objects.iter().map(|o| o.id.as_str()));
            Error::UnknownName { kind: "object", name: id.to_owned(), valid }
        })
    }

    /// The first-use checks of a tensor object: registered names, legal geometry, and `bytes`
    /// equal to the layout's encoded size.
    pub fn tensor_desc(&self, id: &str) -> Result<TensorDesc> {
        let o = self.entry(id)?;
        let ObjectKind::Tensor { format, layout, shape, divisors } = &o.kind else {
            return Err(Error::Unsupported(format!("object {id:?} is a resource, not a tensor")));
        };
        let at = format!("object {id:?}");
        // container.md: "encoded sizes, alignment and format/layout names are checked when an
        // object is first used" — so a misaligned tensor does not stop the artifact opening.
        if o.offset % TENSOR_ALIGN != 0 {
            return Err(violation(
                rule::TENSOR_OFFSET,
                format!("{at}: offset {} is not a multiple of {TENSOR_ALIGN}", o.offset),
            ));
        }
        let format: Format = format.parse().map_err(|e| violation(rule::TENSOR_NAMES, format!("{at}: {e}")))?;
        let layout: Layout = layout.parse().map_err(|e| violation(rule::TENSOR_NAMES, format!("{at}: {e}")))?;
        let desc = TensorDesc::new(format, layout, shape).with_divisors(*divisors);
        let bytes = desc.encoded_bytes().map_err(|e| violation(rule::TENSOR_GEOMETRY, format!("{at}: {e}")))?;
        if bytes as u64 != o.bytes {
            return Err(violation(
                rule::TENSOR_BYTES,
                format!(
                    "{at}: {format} in {layout} with shape {shape:?} is {bytes} bytes, the object says {}",
                    o.bytes
                ),
            ));
        }
        Ok(desc)
    }

    /// A tensor object, borrowed from the map (copied only when it straddles files).
    pub fn tensor(&self, id: &str) -> Result<EncodedTensor<'_>> {
        let desc = self.tensor_desc(id)?;
        let o = self.entry(id)?;
        EncodedTensor::new(desc, self.logical(o.offset, o.bytes)?)
    }

    /// A resource object's raw bytes.
    pub fn resource(&self, id: &str) -> Result<Cow<'_, [u8]>> {
        let o = self.entry(id)?;
        match o.kind {
            ObjectKind::Resource { .. } => self.logical(o.offset, o.bytes),
            ObjectKind::Tensor { .. } => Err(Error::Unsupported(format!("object {id:?} is a tensor, not a resource"))),
        }
    }

    /// Logical payload bytes `[offset, offset + len)`: a borrow of one file's map, or a copy
    /// assembled from consecutive files when the range straddles them.
    fn logical(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        let out_of_bounds =
            || violation(rule::OBJECT_BOUNDS, format!("[{offset}, {offset} + {len}) outside the logical payload"));
        let end = offset.checked_add(len).filter(|&e| e <= self.root.payload_bytes()).ok_or_else(out_of_bounds)?;
        let first = self.files.partition_point(|f| f.logical_end() <= offset);
        let f = self.files.get(first).ok_or_else(out_of_bounds)?;
        if end <= f.logical_end() {
            return Ok(Cow::Borrowed(f.slice(offset, end).ok_or_else(out_of_bounds)?));
        }
        // Sized by the object, which lies inside files that exist: bounded by their real sizes.
        let mut out = Vec::with_capacity(to_usize(len, rule::OBJECT_BOUNDS, "object bytes")?);
        for f in &self.files[first..] {
            if f.logical_start >= end {
                break;
            }
            out.extend_from_slice(
                f.slice(offset.max(f.logical_start), end.min(f.logical_end())).ok_or_else(out_of_bounds)?,
            );
        }
        Ok(Cow::Owned(out))
    }

    /// The binding's pieces, in order: the whole tensor, or one tensor per part (rows of an
    /// object). The parameter's logical tensor is their concatenation along the first axis.
    pub fn binding(&self, name: &str) -> Result<Vec<EncodedTensor<'_>>> {
        let b = self.root.bindings.get(name).ok_or_else(|| Error::UnknownName {
            kind: "binding",
            name: name.to_owned(),
            valid: short_list(self.root.bindings.keys().map(String::as_str)),
        })?;
        self.resolve_binding(b)
    }

    /// Resolves a binding value (a named one, or a use's auxiliary).
    pub fn resolve_binding(&self, b: &Binding) -> Result<Vec<EncodedTensor<'_>>> {
        let parts = match b {
            Binding::Object(id) => return Ok(vec![self.tensor(id)?]),
            Binding::Parts(parts) => parts,
        };
        // Each part costs its share of its object's bytes; repeating one object 10^5 times must
        // not expand to gigabytes.
        let expanded = parts.iter().try_fold(0u128, |sum, p| {
            let o = self.entry(&p.object)?;
            let elements = o.elements().unwrap_or(1).max(1) as u128;
            Ok::<_, Error>(sum + o.bytes as u128 * (p.range.end - p.range.start) as u128 / elements)
        })?;
        let payload = self.root.payload_bytes() as u128;
        if expanded > payload {
            return Err(violation(
                rule::BINDING_EXPANSION,
                format!("{} parts expand to {expanded} bytes; the logical payload is {payload}", parts.len()),
            ));
        }
        let pieces = self.binding_pieces(parts)?;
        // Pieces may differ in format (a mixed-precision stack is still one tensor), not in shape.
        if let Some((i, t)) = pieces.iter().enumerate().find(|(_, t)| t.shape().get(1..) != pieces[0].shape().get(1..))
        {
            return Err(violation(
                rule::BINDING_STACK,
                format!("part 0 has shape {:?}, part {i} has shape {:?}", pieces[0].shape(), t.shape()),
            ));
        }
        Ok(pieces)
    }

    fn binding_pieces(&self, parts: &[BindingPart]) -> Result<Vec<EncodedTensor<'_>>> {
        parts
            .iter()
            .map(|p| {
                let t = self.tensor(&p.object)?;
                let elements = t.desc().elements().unwrap_or(0) as u64;
                if p.range == (0..elements) {
                    return Ok(t);
                }
                // A row is every element after the first axis. Rank 0 has one element, so its
                // only legal range (checked at open) is the whole tensor, returned above.
                let row = match t.shape() {
                    [] => 1,
                    [first, ..] => elements / (*first as u64).max(1),
                };
                if p.range.start % row != 0 || p.range.end % row != 0 {
                    return Err(violation(
                        rule::BINDING_ROWS,
                        format!(
                            "range [{}, {}) of {:?} with shape {:?} (rows of {row} elements)",
                            p.range.start,
                            p.range.end,
                            p.object,
                            t.shape()
                        ),
                    ));
                }
                let rows = to_usize(p.range.start / row, rule::BINDING_ROWS, "row")?
                    ..to_usize(p.range.end / row, rule::BINDING_ROWS, "row")?;
                rows_of(t, rows)
            })
            .collect()
    }

    /// `name` as an object id or a binding name. A name that is both must mean the same tensor.
    pub fn resolve(&self, name: &str) -> Result<Vec<EncodedTensor<'_>>> {
        match (self.object(name).is_some(), self.root.bindings.get(name)) {
            (true, None) => Ok(vec![self.tensor(name)?]),
            (false, Some(_)) => self.binding(name),
            (true, Some(Binding::Object(id))) if id == name => Ok(vec![self.tensor(name)?]),
            (true, Some(_)) => Err(Error::Unsupported(format!("`{name}` is an object id and also a binding of something else; ask for the object's binding by another name"))),
            (false, None) => Err(Error::UnknownName { kind: "object or binding", name: name.to_owned(), valid: short_list(self.root.objects.iter().map(|o| o.id.as_str()).chain(self.root.bindings.keys().map(String::as_str))) }),
        }
    }
}

/// Rows `[start, end)` of a tensor. Contiguous tensors store rows as consecutive byte runs, so
/// their rows stay borrowed from the map; every other layout interleaves planes, so its rows are
/// gathered into a copy by `slice_rows`.
fn rows_of(t: EncodedTensor<'_>, rows: std::ops::Range<usize>) -> Result<EncodedTensor<'_>> {
    let (Layout::ContiguousLeV1, [total, ..]) = (t.layout(), t.shape()) else {
        return t.slice_rows(rows);
    };
    let row_bytes = t.payload().len() / (*total).max(1);
    let mut desc = t.desc().clone();
    desc.shape[0] = rows.len();
    let (_, payload) = t.into_parts();
    let span = rows.start * row_bytes..rows.end * row_bytes;
    let bad = || violation(rule::BINDING_ROWS, format!("rows {rows:?} outside the tensor"));
    match payload {
        Cow::Borrowed(b) => EncodedTensor::new(desc, b.get(span).ok_or_else(bad)?),
        Cow::Owned(v) => EncodedTensor::new(desc, v.get(span).ok_or_else(bad)?.to_vec()),
    }
}

/// Checks one continuation part: header, index, artifact id, size, zero gap.
fn check_part(part: &[u8], path: &Path, index: usize, artifact_id: &[u8; 16], payload_bytes: u64) -> Result<()> {
    let len = part.len() as u64;
    if len < HEADER_BYTES as u64 {
        return Err(violation(rule::PART_HEADER, format!("{} is {len} bytes", path.display())));
    }
    if part[..8] != PART_MAGIC {
        return Err(violation(rule::PART_HEADER, format!("{} starts with {}", path.display(), hex(&part[..8]))));
    }
    let found = u64_at(part, 8);
    if found != index as u64 {
        return Err(violation(
            rule::PART_INDEX,
            format!("{} says part_index {found}, listed as files[{index}]", path.display()),
        ));
    }
    if part[16..32] != artifact_id[..] {
        return Err(violation(
            rule::ARTIFACT_ID,
            format!("{} carries {}, the entry {}", path.display(), hex(&part[16..32]), hex(artifact_id)),
        ));
    }
    let expected = (PAYLOAD_ALIGN as u64).checked_add(payload_bytes);
    if expected != Some(len) {
        return Err(violation(
            rule::PART_SIZE,
            format!("{} is {len} bytes, files[{index}].payload_bytes is {payload_bytes}", path.display()),
        ));
    }
    if let Some(at) = first_nonzero(&part[HEADER_BYTES..PAYLOAD_ALIGN]) {
        return Err(violation(
            rule::PART_GAP,
            format!("{} byte {} is {:#04x}", path.display(), HEADER_BYTES + at, part[HEADER_BYTES + at]),
        ));
    }
    Ok(())
}
