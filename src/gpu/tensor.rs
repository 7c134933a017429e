//! `GpuTensor`: a payload uploaded with its stored bytes — no requantizing or host-side
//! decoding — in one device buffer, or in several byte ranges of it when it is larger than one
//! buffer (`plan::place`). At most three zero bytes are appended to each, to reach the 4-byte
//! copy granularity. Where the device wants row tiles (`plan::tiles`), the bytes of each run of
//! 32 rows are reordered record by record inside the range those rows take; elsewhere they are
//! written as stored, straight from where they lie. The one payload made on the way is an exact
//! import ([`GpuTensor::upload_q8_from_q8_0`]: GGUF q8_0 blocks as q8_g32_fp16, byte copies of
//! the same codes and scales), made a piece at a time.

use super::kernels::{Op, Profile, Variant};
use super::plan::{place, Placement};
use super::{capability, Gpu};
use crate::encode::import::Q8FromQ8_0;
use crate::error::{Error, Result};
use crate::layout::{Layout, PayloadGeometry};
use crate::tensor::{TensorDesc, Validated};

pub struct GpuTensor {
    desc: TensorDesc,
    geometry: PayloadGeometry,
    placement: Placement,
    /// One buffer per segment of the placement.
    buffers: Vec<wgpu::Buffer>,
    payload_bytes: u64,
}

/// Bytes written per `write_buffer` call: the staging wgpu keeps for an upload stays this small,
/// and a memory-mapped payload is read once, in order, never copied whole.
pub const UPLOAD_CHUNK: usize = 4 << 20;

impl GpuTensor {
    /// Uploads the payload, placed as [`place`] decides and arranged for `profile`'s products
    /// ([`Gpu::arrangement`]), reporting `(bytes done, total)` after every chunk.
    pub(super) async fn upload(
        gpu: &Gpu,
        tensor: &Validated<'_, '_>,
        profile: Profile,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        let parts = [tensor.payload()];
        let (desc, geometry) = (tensor.desc().clone(), tensor.geometry().clone());
        Self::upload_from(gpu, desc, geometry, Source::Parts(&parts), profile, progress).await
    }

    /// Uploads GGUF q8_0 blocks as the q8_g32_fp16 tensor [`Q8FromQ8_0`] checked they make,
    /// written a chunk at a time as it is made (the blocks, a memory map say, are never copied
    /// whole).
    pub(super) async fn upload_q8_from_q8_0(
        gpu: &Gpu,
        view: &Q8FromQ8_0<'_>,
        profile: Profile,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        let desc = view.desc();
        let geometry = desc.geometry()?;
        Self::upload_from(gpu, desc, geometry, Source::Made(view), profile, progress).await
    }

    /// Uploads matrices of one format, layout and K as one tensor of their rows in order (a
    /// model's q, k and v products as one product, say). Only layouts whose payload is the rows
    /// back to back stack: the stacked payload is then the parts' bytes in order, each written
    /// from where it lies (a memory map) straight into the device buffer.
    pub(super) async fn upload_stacked(
        gpu: &Gpu,
        parts: &[&Validated<'_, '_>],
        profile: Profile,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        let Some(first) = parts.first() else {
            return Err(Error::Unsupported("stacking no tensors".into()));
        };
        let d = first.desc();
        let k = match d.shape[..] {
            [_, k] => k,
            _ => return Err(Error::Unsupported(format!("stacking a tensor of shape {:?}: matrices only", d.shape))),
        };
        let rows_back_to_back = match d.layout {
            Layout::GgufBlocksV1 | Layout::ContiguousLeV1 => true,
            Layout::RowSplitK128V1 | Layout::BlockScaleK16M128x4V1 | Layout::RowScaleV1 | Layout::RowInterleavedV1 => {
                false
            }
        };
        if !rows_back_to_back {
            return Err(Error::Unsupported(format!("stacking {} tensors: their rows are not back to back", d.layout)));
        }
        let mut n = 0usize;
        for p in parts {
            let pd = p.desc();
            if pd.format != d.format || pd.layout != d.layout || pd.shape.len() != 2 || pd.shape[1] != k {
                return Err(Error::Unsupported(format!(
                    "stacking {} {:?} onto {} {:?}: one format, layout and K only",
                    pd.format, pd.shape, d.format, d.shape
                )));
            }
            n = n
                .checked_add(pd.shape[0])
                .ok_or_else(|| Error::Unsupported("stacked rows overflow the address space".into()))?;
        }
        let desc = TensorDesc::new(d.format, d.layout, &[n, k]);
        let geometry = desc.geometry()?;
        let payloads: Vec<&[u8]> = parts.iter().map(|p| p.payload()).collect();
        let bytes: usize = payloads.iter().map(|p| p.len()).sum();
        if geometry.bytes() != bytes {
            // Unreachable for the two layouts above; refused rather than trusted.
            return Err(Error::Unsupported(format!(
                "stacked {} [{n}, {k}] is {} bytes, its parts {bytes}",
                d.format,
                geometry.bytes()
            )));
        }
        Self::upload_from(gpu, desc, geometry, Source::Parts(&payloads), profile, progress).await
    }

    /// Uploads the payload `source` holds or makes.
    async fn upload_from(
        gpu: &Gpu,
        desc: TensorDesc,
        geometry: PayloadGeometry,
        source: Source<'_, '_>,
        profile: Profile,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        // Refuse before allocating anything: an unsupported (format, layout) is not uploaded.
        capability::check(desc.format, desc.layout, Op::Dequant, Variant::Workgroup, Some(gpu.platform()))?;
        let payload_bytes = source.len();
        let placement = place(&geometry, payload_bytes, &gpu.plan_limits(), gpu.arrangement(desc.format, profile))?;
        let total: u64 = placement.segments.iter().map(|r| r.end - r.start).sum();
        let needed: u64 = (0..placement.segments.len()).map(|i| placement.buffer_len(i)).sum();
        if let Some(max) = gpu.max_memory().filter(|&m| needed > m) {
            return Err(Error::Unsupported(format!(
                "{} {:?} needs {needed} bytes of device buffers, more than the {max} bytes allowed",
                desc.format, desc.shape
            )));
        }
        let mut buffers = Vec::with_capacity(placement.segments.len());
        let mut done = 0u64;
        let mut piece = Vec::new();
        let mut scratch = Vec::new();
        for (i, range) in placement.segments.iter().enumerate() {
            let buffer = gpu
                .scoped("allocating a payload buffer", || {
                    gpu.device().create_buffer(&wgpu::BufferDescriptor {
                        label: Some(&format!("{} payload {i}", desc.format)),
                        size: placement.buffer_len(i),
                        usage: wgpu::BufferUsages::STORAGE
                            | wgpu::BufferUsages::COPY_DST
                            | wgpu::BufferUsages::COPY_SRC,
                        mapped_at_creation: false,
                    })
                })
                .await?;
            let mut out = WordWriter { gpu, buffer: &buffer, at: 0, carry: Vec::new(), total };
            match (source, &placement.tiles) {
                // As stored: each part's bytes straight from where they lie (a memory map).
                (Source::Parts(parts), None) => {
                    for bytes in segment_pieces(parts, range.start, range.end) {
                        for chunk in bytes.chunks(UPLOAD_CHUNK) {
                            out.push(chunk, &mut done, progress)?;
                        }
                    }
                }
                // Made, or rearranged into row tiles: a piece at a time (whole tiles), so
                // host memory stays a piece or two whatever the payload.
                (Source::Parts(_) | Source::Made(_), tiles) => {
                    let mut from = range.start;
                    while from < range.end {
                        let to = match tiles {
                            Some(t) => t.piece_end(from, range.end, UPLOAD_CHUNK as u64),
                            None => range.end.min(from + UPLOAD_CHUNK as u64),
                        };
                        piece.clear();
                        piece.resize((to - from) as usize, 0);
                        source.fill(from, &mut piece)?;
                        if let Some(t) = tiles {
                            t.arrange(from, &mut piece, &mut scratch);
                        }
                        out.push(&piece, &mut done, progress)?;
                        from = to;
                    }
                }
            }
            out.finish(&mut done, progress)?;
            buffers.push(buffer);
        }
        gpu.scoped_now("uploading a payload", || gpu.queue().submit([]))?;
        Ok(GpuTensor { desc, geometry, placement, buffers, payload_bytes })
    }

    pub fn desc(&self) -> &TensorDesc {
        &self.desc
    }

    pub fn geometry(&self) -> &PayloadGeometry {
        &self.geometry
    }

    /// Where the payload lives: one segment, or several when it is larger than one buffer.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The device buffer of segment `i`.
    pub fn buffer(&self, i: usize) -> &wgpu::Buffer {
        &self.buffers[i]
    }

    /// The stored payload's length (buffers may add up to 3 bytes each).
    pub fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }
}

/// Where an upload's payload comes from.
#[derive(Clone, Copy)]
enum Source<'s, 'p> {
    /// Slices back to back, written from where they lie.
    Parts(&'s [&'p [u8]]),
    /// Made a chunk at a time.
    Made(&'s Q8FromQ8_0<'p>),
}

impl Source<'_, '_> {
    fn len(&self) -> u64 {
        match self {
            Source::Parts(parts) => parts.iter().map(|p| p.len() as u64).sum(),
            Source::Made(view) => view.len() as u64,
        }
    }

    /// Bytes `from..from + out.len()` of the payload.
    fn fill(&self, from: u64, out: &mut [u8]) -> Result<()> {
        match self {
            Source::Parts(parts) => {
                let mut at = 0;
                for bytes in segment_pieces(parts, from, from + out.len() as u64) {
                    out[at..at + bytes.len()].copy_from_slice(bytes);
                    at += bytes.len();
                }
                Ok(())
            }
            Source::Made(view) => view.fill(from as usize, out),
        }
    }
}

/// Writes a segment's bytes into its buffer in order, whole words at a time: a piece's odd tail
/// bytes wait in `carry` for the next piece's head, so every write stays 4-byte aligned.
struct WordWriter<'a> {
    gpu: &'a Gpu,
    buffer: &'a wgpu::Buffer,
    at: u64,
    carry: Vec<u8>,
    total: u64,
}

impl WordWriter<'_> {
    fn push(&mut self, mut bytes: &[u8], done: &mut u64, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        if !self.carry.is_empty() {
            let take = (4 - self.carry.len()).min(bytes.len());
            self.carry.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.carry.len() < 4 {
                return Ok(());
            }
            let word = std::mem::take(&mut self.carry);
            self.write(&word, done, progress)?;
        }
        let whole = bytes.len() / 4 * 4;
        if whole > 0 {
            self.write(&bytes[..whole], done, progress)?;
        }
        self.carry.extend_from_slice(&bytes[whole..]);
        Ok(())
    }

    fn write(&mut self, bytes: &[u8], done: &mut u64, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        self.gpu.scoped_now("uploading a payload", || self.gpu.queue().write_buffer(self.buffer, self.at, bytes))?;
        self.at += bytes.len() as u64;
        *done += bytes.len() as u64;
        // Submitting hands the staged chunk to the device, so staging memory stays bounded by a
        // chunk or two.
        self.gpu.queue().submit([]);
        self.gpu.drive()?;
        progress(*done, self.total);
        Ok(())
    }

    /// The buffer's last word: zero bytes reach the 4-byte copy granularity.
    fn finish(mut self, done: &mut u64, progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        if !self.carry.is_empty() {
            let real = self.carry.len();
            self.carry.resize(4, 0);
            self.gpu.scoped_now("uploading a payload", || {
                self.gpu.queue().write_buffer(self.buffer, self.at, &self.carry)
            })?;
            *done += real as u64;
            progress(*done, self.total);
        }
        Ok(())
    }
}

/// The pieces of `parts` (back to back) that lie in bytes `start..end` of their concatenation.
fn segment_pieces<'p>(parts: &[&'p [u8]], start: u64, end: u64) -> Vec<&'p [u8]> {
    let mut pieces = Vec::new();
    let mut base = 0u64;
    for p in parts {
        let (lo, hi) = (base.max(start), (base + p.len() as u64).min(end));
        if lo < hi {
            pieces.push(&p[(lo - base) as usize..(hi - base) as usize]);
        }
        base += p.len() as u64;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::segment_pieces;

    #[test]
    fn segment_pieces_cover_exactly_the_range() {
        let (a, b, c) = ([1u8, 2, 3], [4u8, 5], [6u8, 7, 8, 9]);
        let parts: [&[u8]; 3] = [&a, &b, &c];
        let flat: Vec<u8> = parts.concat();
        for start in 0..=flat.len() as u64 {
            for end in start..=flat.len() as u64 {
                let got: Vec<u8> = segment_pieces(&parts, start, end).concat();
                assert_eq!(got, flat[start as usize..end as usize], "{start}..{end}");
            }
        }
    }
}
