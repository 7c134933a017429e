//! Opening files from users: only regular files, checked before `open` (a FIFO blocks in open()
//! forever, a directory maps as "No such device"), and reads bounded by what the caller needs.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Opens `path` for reading if it is a regular file (symbolic links followed).
pub fn open_regular(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() { "a directory" } else { "not a regular file (a device, FIFO or socket)" };
        return Err(Error::Io(format!("{}: {what}; only regular files are read", path.display())));
    }
    File::open(path).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// The whole of a regular file, refused without reading past `max` bytes when it is longer.
pub fn read_at_most(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut out = Vec::new();
    // One byte past the limit tells "too long" from "exactly the limit".
    file.take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| Error::Io(format!("{}: {e}", path.display())))?;
    if out.len() as u64 > max {
        return Err(Error::Io(format!("{}: longer than the {max} bytes {what} can use", path.display())));
    }
    Ok(out)
}

/// A read-only memory map of a regular file.
pub fn map_regular(path: &Path) -> Result<memmap2::Mmap> {
    let file = open_regular(path)?;
    // SAFETY: the map is read-only; a file truncated underneath by another process is the usual
    // memory-map caveat, which no reader of a mapped file can guard against.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::Io(format!("mapping {}: {e}", path.display())))
}
