//! A whole checkpoint opened for streaming conversion (native only: a browser has no files to
//! open): one safetensors or `.npy` file, or a safetensors index of shards, indexed up front and
//! read one tensor at a time.

use super::sources::{bad, index_npy, index_safetensors, FloatTensor, Stored, NPY_MAGIC};
use crate::error::{clip, Error, Result};
use std::path::Path;

/// A checkpoint opened for streaming: every file indexed (through a memory map dropped after)
/// and every tensor located and checked, none read. [`Checkpoint::read`] reads one tensor with
/// ordinary file reads, so converting a model holds one tensor's values, not the file's, and
/// the input's pages are the OS's cache rather than the process's memory.
pub struct Checkpoint {
    files: Vec<(String, std::fs::File)>,
    /// (file index, tensor), in the order they are converted.
    tensors: Vec<(usize, Stored)>,
}

impl Checkpoint {
    /// Opens `.npy`, a safetensors file, or a safetensors index (`*.json` whose `weight_map`
    /// names each tensor's shard, beside it). A tensor in two shards, or one the index lists
    /// but no shard holds, is an error.
    pub fn open(path: &Path) -> Result<Checkpoint> {
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.extension().is_none_or(|e| e != "json") {
            let (file, tensors) = open_indexed(path)?;
            return Ok(Checkpoint {
                files: vec![(name(path), file)],
                tensors: tensors.into_iter().map(|t| (0, t)).collect(),
            });
        }
        let shards = shard_names(path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut files = Vec::new();
        let mut tensors = Vec::new();
        let mut seen = std::collections::HashMap::new();
        for (i, shard) in shards.files.iter().enumerate() {
            let (file, indexed) = open_indexed(&dir.join(shard))?;
            for t in indexed {
                if let Some(other) = seen.insert(t.name.clone(), i) {
                    return Err(bad(
                        "safetensors index",
                        format!("{} is in {} and in {shard}", clip(&t.name), shards.files[other]),
                    ));
                }
                tensors.push((i, t));
            }
            files.push((shard.clone(), file));
        }
        if let Some(missing) = shards.listed.iter().find(|k| !seen.contains_key(k.as_str())) {
            return Err(bad("safetensors index", format!("{} is listed but no shard holds it", clip(missing))));
        }
        Ok(Checkpoint { files, tensors })
    }

    /// The tensors with the file each is in, in conversion order.
    pub fn tensors(&self) -> impl Iterator<Item = (&str, &Stored)> {
        self.tensors.iter().map(|(f, t)| (self.files[*f].0.as_str(), t))
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Bytes of stored tensor data over every file.
    pub fn data_bytes(&self) -> u64 {
        self.tensors.iter().map(|(_, t)| t.data_bytes() as u64).sum()
    }

    /// Reads tensor `i` (in [`Checkpoint::tensors`] order): its file's name and its values.
    pub fn read(&self, i: usize) -> Result<(&str, FloatTensor)> {
        let (f, t) = self.tensors.get(i).ok_or_else(|| bad("checkpoint", format!("no tensor {i}")))?;
        let (name, file) = &self.files[*f];
        Ok((name.as_str(), read_from(t, file, name)?))
    }
}

/// A regular file, opened, with its tensors indexed through a map that is dropped after.
fn open_indexed(path: &Path) -> Result<(std::fs::File, Vec<Stored>)> {
    let file = crate::files::open_regular(path)?;
    // SAFETY: read-only map of a file we hold open; see `files::map_regular`.
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::Io(format!("mapping {}: {e}", path.display())))?;
    let tensors = index(&map, path)?;
    Ok((file, tensors))
}

/// `.npy` or safetensors, recognised by content (npy's magic), not by extension.
fn index(bytes: &[u8], path: &Path) -> Result<Vec<Stored>> {
    if bytes.starts_with(NPY_MAGIC) {
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tensor".into());
        return Ok(vec![index_npy(bytes, &name)?]);
    }
    index_safetensors(bytes)
}

/// A safetensors index: its shard files (each once, in first-listed order) and listed tensors.
struct Shards {
    files: Vec<String>,
    listed: Vec<String>,
}

fn shard_names(path: &Path) -> Result<Shards> {
    let text = crate::files::read_at_most(path, 64 << 20, "a safetensors index")?;
    let index: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad("safetensors index", format!("{}: {e}", path.display())))?;
    let map = index
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| bad("safetensors index", format!("{}: no weight_map object", path.display())))?;
    let mut files: Vec<String> = Vec::new();
    for file in map.values() {
        let file = file.as_str().ok_or_else(|| bad("safetensors index", "weight_map values are file names"))?;
        if file.contains(['/', '\\']) || file == ".." {
            return Err(bad("safetensors index", format!("shard {} is not a sibling file name", clip(file))));
        }
        if !files.iter().any(|f| f == file) {
            files.push(file.to_string());
        }
    }
    Ok(Shards { files, listed: map.keys().cloned().collect() })
}

/// Reads the values from `file` (the one it was indexed from) at its offset.
fn read_from(t: &Stored, file: &std::fs::File, path: &str) -> Result<FloatTensor> {
    use std::io::{Read, Seek, SeekFrom};
    let mut data = Vec::new();
    data.try_reserve_exact(t.data.len())
        .map_err(|_| bad("checkpoint", format!("{}: no memory for {} bytes", clip(&t.name), t.data.len())))?;
    let mut f = file;
    f.seek(SeekFrom::Start(t.data.start as u64))
        .and_then(|_| f.take(t.data.len() as u64).read_to_end(&mut data))
        .map_err(|e| bad("checkpoint", format!("{path}: {e}")))?;
    t.values(&data)
}
