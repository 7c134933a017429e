//! Writing an artifact: objects laid out in the logical payload (every object 256-aligned), the payload
//! cut into parts at a size limit, the JSON padded with spaces to the 4096 boundary.
//!
//! Crash safety: every file is written under a temporary name, synced, and renamed into place,
//! parts first and the entry last. Until the entry's rename, no new entry exists; an older entry
//! of the same name then meets parts carrying a different artifact id and refuses to open. So a
//! crash never leaves a half-written artifact that opens.

use super::json::RawJson;
use super::root::{Binding, Component, FileEntry, ObjectEntry, ObjectKind, Root, Use};
use super::{align_up, hex, rule, violation, ENTRY_MAGIC, HEADER_BYTES, PART_MAGIC, PAYLOAD_ALIGN, TENSOR_ALIGN};
use crate::encode::Encoded;
use crate::error::{Error, Result};
use crate::tensor::EncodedTensor;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// An object's bytes: held (borrowed where the caller's are), or already in the spool file.
enum Payload<'a> {
    Held(Cow<'a, [u8]>),
    Spooled { at: u64, len: u64 },
}

impl Payload<'_> {
    fn len(&self) -> u64 {
        match self {
            Payload::Held(b) => b.len() as u64,
            Payload::Spooled { len, .. } => *len,
        }
    }
}

/// An object waiting to be written.
struct Pending<'a> {
    id: String,
    kind: ObjectKind,
    payload: Payload<'a>,
}

/// A temporary file beside the output that converted payloads go to as they are made, so a
/// writer converting a model holds one tensor at a time. Removed when the writer is dropped.
struct Spool {
    path: PathBuf,
    file: File,
    len: u64,
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Builds an artifact (payloads held in memory, or spooled to disk as they are added) and
/// writes it. The JSON comes first in the file and names every object's size and provenance,
/// so nothing can be written in place before the last object is known.
#[derive(Default)]
pub struct ArtifactWriter<'a> {
    objects: Vec<Pending<'a>>,
    spool: Option<Spool>,
    bindings: BTreeMap<String, Binding>,
    uses: Vec<Use>,
    components: BTreeMap<String, Component>,
    metadata: Option<Map<String, Value>>,
    provenance: Map<String, Value>,
    part_limit: Option<u64>,
}

/// What [`ArtifactWriter::write`] produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub artifact_id: [u8; 16],
    /// Entry first, then the parts.
    pub files: Vec<PathBuf>,
    pub payload_bytes: u64,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("{}: {e}", path.display()))
}

/// A random (version 4) UUID's bytes from the OS, as container.md asks writers to use.
fn random_id() -> Result<[u8; 16]> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| Error::Io(format!("no OS randomness for the artifact id: {e}")))?;
    // RFC 9562: version 4 in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
    id[6] = (id[6] & 0x0F) | 0x40;
    id[8] = (id[8] & 0x3F) | 0x80;
    Ok(id)
}

impl<'a> ArtifactWriter<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Caps every file's payload at `bytes` (> 0); the payload continues in parts
    /// `NAME.part-0001`, … and objects may straddle them. Without a limit there is one file.
    pub fn part_limit(mut self, bytes: u64) -> Self {
        self.part_limit = Some(bytes.max(1));
        self
    }

    /// Spools every payload added by [`ArtifactWriter::add_encoded`] to a temporary file in
    /// `dir` (the output's directory: same disk, and renamed outputs stay on one file system)
    /// instead of holding it; the file is removed when the writer is dropped.
    pub fn spool_in(mut self, dir: &Path) -> Result<Self> {
        let path = dir.join(format!(".ninfer-spool-{}", hex(&random_id()?)));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        self.spool = Some(Spool { path, file, len: 0 });
        Ok(self)
    }

    fn tensor_kind(desc: crate::tensor::TensorDesc) -> ObjectKind {
        ObjectKind::Tensor {
            format: desc.format.name().to_owned(),
            layout: desc.layout.name().to_owned(),
            shape: desc.shape,
            divisors: desc.divisors,
        }
    }

    /// Adds a tensor; its payload is written exactly as stored (held until [`Self::write`]).
    pub fn add_tensor(&mut self, id: impl Into<String>, tensor: EncodedTensor<'a>) {
        let (desc, payload) = tensor.into_parts();
        self.objects.push(Pending { id: id.into(), kind: Self::tensor_kind(desc), payload: Payload::Held(payload) });
    }

    /// Adds a conversion method's output and records its provenance under the object's id;
    /// with a spool the payload goes to disk now and is not held.
    pub fn add_encoded(&mut self, id: impl Into<String>, encoded: Encoded) -> Result<()> {
        let id = id.into();
        self.set_provenance(&id, &encoded.provenance)?;
        let Some(spool) = self.spool.as_mut() else {
            self.add_tensor(id, encoded.tensor);
            return Ok(());
        };
        let (desc, payload) = encoded.tensor.into_parts();
        (&spool.file).write_all(&payload).map_err(|e| io(&spool.path, e))?;
        let (at, len) = (spool.len, payload.len() as u64);
        spool.len += len;
        self.objects.push(Pending { id, kind: Self::tensor_kind(desc), payload: Payload::Spooled { at, len } });
        Ok(())
    }

    /// Adds raw bytes as a `raw_bytes_v1` resource.
    pub fn add_resource(&mut self, id: impl Into<String>, bytes: impl Into<Cow<'a, [u8]>>) {
        self.objects.push(Pending {
            id: id.into(),
            kind: ObjectKind::Resource { encoding: "raw_bytes_v1".into() },
            payload: Payload::Held(bytes.into()),
        });
    }

    /// Records how an object was derived: root `provenance[id]`.
    pub fn set_provenance(&mut self, id: &str, value: impl serde::Serialize) -> Result<()> {
        let v = serde_json::to_value(value).map_err(|e| Error::Io(format!("provenance of {id:?}: {e}")))?;
        self.provenance.insert(id.to_owned(), v);
        Ok(())
    }

    pub fn bind(&mut self, name: impl Into<String>, binding: Binding) {
        self.bindings.insert(name.into(), binding);
    }

    pub fn add_use(&mut self, u: Use) {
        self.uses.push(u);
    }

    pub fn add_component(&mut self, id: impl Into<String>, component: Component) {
        self.components.insert(id.into(), component);
    }

    pub fn set_metadata(&mut self, metadata: Map<String, Value>) {
        self.metadata = Some(metadata);
    }

    /// Adds members to the metadata (a member given again replaces the earlier one).
    pub fn extend_metadata(&mut self, members: Map<String, Value>) {
        self.metadata.get_or_insert_with(Map::new).extend(members);
    }

    /// Object entries with their logical offsets, and the logical payload's length.
    fn layout(&self) -> Result<(Vec<ObjectEntry>, u64)> {
        let mut at = 0u64;
        let mut entries = Vec::with_capacity(self.objects.len());
        for p in &self.objects {
            // Tensors must start on 256 bytes; resources may sit anywhere, but aligning them too
            // costs under 256 bytes each and lets a consumer bind any object directly.
            let offset = align_up(at, TENSOR_ALIGN).ok_or_else(|| Error::Io("payload size overflows u64".into()))?;
            let bytes = p.payload.len();
            at = offset.checked_add(bytes).ok_or_else(|| Error::Io("payload size overflows u64".into()))?;
            entries.push(ObjectEntry { id: p.id.clone(), offset, bytes, kind: p.kind.clone() });
        }
        Ok((entries, at))
    }

    /// Writes `path` (the entry) and its parts. The JSON is checked by the reader's own rules
    /// before any file is created, so what is written opens.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<Written> {
        self.write_with_progress(path, &mut |_, _| {})
    }

    /// [`Self::write`], calling `progress(bytes written, total)` as the payload goes out.
    pub fn write_with_progress(&self, path: impl AsRef<Path>, progress: &mut dyn FnMut(u64, u64)) -> Result<Written> {
        let path = path.as_ref();
        let entry_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| Error::Io(format!("{}: not a file path", path.display())))?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if self.objects.is_empty() {
            // Said here rather than as the zero-byte payload the reader would see first.
            return Err(violation(rule::MEMBER_TYPE, "`objects` is empty: an artifact holds at least one object"));
        }
        let (objects, total) = self.layout()?;
        let limit = self.part_limit.unwrap_or(total.max(1));
        let mut files = Vec::new();
        let mut start = 0u64;
        while start < total || files.is_empty() {
            let bytes = limit.min(total - start);
            let path = if files.is_empty() { None } else { Some(format!("{entry_name}.part-{:04}", files.len())) };
            files.push(FileEntry { path, payload_bytes: bytes });
            start += bytes;
        }
        let provenance = (!self.provenance.is_empty()).then(|| self.provenance.clone());
        let root = Root {
            components: self.components.clone(),
            objects,
            bindings: self.bindings.clone(),
            uses: self.uses.clone(),
            files,
            metadata: self.metadata.as_ref().map(RawJson::from_value).transpose()?,
            provenance: provenance.as_ref().map(RawJson::from_value).transpose()?,
        };
        let mut json = root.to_text()?;
        // The same checks a reader applies (including payload_bytes > 0, which an artifact with
        // only empty objects would break).
        Root::parse_bytes(&json, &entry_name)?;
        // Spaces are JSON whitespace: the padded text parses to the same root, and the payload
        // then starts exactly at the end of the JSON.
        let padded = align_up((HEADER_BYTES + json.len()) as u64, PAYLOAD_ALIGN as u64)
            .ok_or_else(|| Error::Io("JSON too large".into()))? as usize
            - HEADER_BYTES;
        json.resize(padded, b' ');

        let artifact_id = random_id()?;
        let starts = root.file_starts();
        let mut out = Progress { done: 0, total, report: progress };
        let mut staged = Staged { temps: Vec::new() };
        for (i, f) in root.files.iter().enumerate().skip(1) {
            let mut header = [0u8; PAYLOAD_ALIGN];
            header[..8].copy_from_slice(&PART_MAGIC);
            header[8..16].copy_from_slice(&(i as u64).to_le_bytes());
            header[16..32].copy_from_slice(&artifact_id);
            let final_path = dir.join(f.path.as_deref().unwrap_or_default());
            staged.write(&final_path, &artifact_id, &[&header], |w| {
                self.write_payload(w, &root.objects, starts[i], f.payload_bytes, &mut out)
            })?;
        }
        let mut header = [0u8; HEADER_BYTES];
        header[..8].copy_from_slice(&ENTRY_MAGIC);
        header[8..16].copy_from_slice(&(json.len() as u64).to_le_bytes());
        header[16..32].copy_from_slice(&artifact_id);
        staged.write(path, &artifact_id, &[&header, &json], |w| {
            self.write_payload(w, &root.objects, 0, root.files[0].payload_bytes, &mut out)
        })?;
        staged.commit()?;
        let mut written = vec![path.to_path_buf()];
        written.extend(root.files.iter().skip(1).map(|f| dir.join(f.path.as_deref().unwrap_or_default())));
        Ok(Written { artifact_id, files: written, payload_bytes: total })
    }

    /// Writes logical bytes `[from, from + len)`: object bytes, and zeros in the gaps.
    fn write_payload(
        &self,
        w: &mut impl Write,
        objects: &[ObjectEntry],
        from: u64,
        len: u64,
        out: &mut Progress,
    ) -> std::io::Result<()> {
        let end = from + len;
        let mut at = from;
        let zeros = [0u8; 4096];
        let fill = |w: &mut dyn Write, mut n: u64| -> std::io::Result<()> {
            while n > 0 {
                let k = n.min(zeros.len() as u64) as usize;
                w.write_all(&zeros[..k])?;
                n -= k as u64;
            }
            Ok(())
        };
        let first = objects.partition_point(|o| o.end() <= from);
        for (o, p) in objects[first..].iter().zip(&self.objects[first..]) {
            if o.offset >= end {
                break;
            }
            let a = o.offset.max(at);
            fill(w, a - at)?;
            let b = o.end().min(end);
            let (lo, hi) = (a - o.offset, b - o.offset);
            match &p.payload {
                Payload::Held(bytes) => w.write_all(&bytes[lo as usize..hi as usize])?,
                Payload::Spooled { at: spooled, .. } => {
                    let spool =
                        self.spool.as_ref().ok_or_else(|| std::io::Error::other("spooled object without a spool"))?;
                    copy_range(&spool.file, spooled + lo, hi - lo, w)?;
                }
            }
            out.advance(b - a);
            at = b;
        }
        fill(w, end - at)
    }
}

/// Copies `len` bytes of `file` from `offset` to `w`, a megabyte at a time.
fn copy_range(mut file: &File, offset: u64, len: u64, w: &mut impl Write) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0u8; (1 << 20).min(len as usize)];
    let mut left = len;
    while left > 0 {
        let k = left.min(buf.len() as u64) as usize;
        file.read_exact(&mut buf[..k])?;
        w.write_all(&buf[..k])?;
        left -= k as u64;
    }
    Ok(())
}

/// Payload bytes written so far, reported to the caller.
struct Progress<'p> {
    done: u64,
    total: u64,
    report: &'p mut dyn FnMut(u64, u64),
}

impl Progress<'_> {
    fn advance(&mut self, bytes: u64) {
        self.done += bytes;
        (self.report)(self.done, self.total);
    }
}

/// Files written under temporary names, renamed into place by `commit` in write order.
struct Staged {
    temps: Vec<(PathBuf, PathBuf)>,
}

impl Staged {
    fn write(
        &mut self,
        final_path: &Path,
        id: &[u8; 16],
        head: &[&[u8]],
        body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> Result<()> {
        let name = final_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = final_path.with_file_name(format!(".{name}.tmp-{}", hex(id)));
        self.temps.push((temp.clone(), final_path.to_path_buf()));
        let result = (|| {
            let mut w = BufWriter::with_capacity(1 << 20, File::create(&temp)?);
            for h in head {
                w.write_all(h)?;
            }
            body(&mut w)?;
            let file = w.into_inner().map_err(|e| e.into_error())?;
            // Durable before the rename makes it visible.
            file.sync_all()
        })();
        result.map_err(|e| io(&temp, e))
    }

    fn commit(mut self) -> Result<()> {
        let temps = std::mem::take(&mut self.temps);
        for (i, (temp, final_path)) in temps.iter().enumerate() {
            if let Err(e) = std::fs::rename(temp, final_path) {
                self.temps = temps[i..].to_vec();
                return Err(io(final_path, e));
            }
        }
        // Make the renames durable too; a directory that cannot be opened for sync (some
        // platforms) only loses that guarantee, not the artifact.
        if let Some(dir) = temps.last().and_then(|(_, f)| f.parent()) {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    /// An interrupted write leaves no temporary files behind (best effort).
    fn drop(&mut self) {
        for (temp, _) in &self.temps {
            let _ = std::fs::remove_file(temp);
        }
    }
}
