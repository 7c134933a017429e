//! `GpuTensor`: a payload uploaded with its stored bytes — no requantizing or host-side
//! decoding — in one device buffer, or in several byte ranges of it when it is larger than one
//! buffer (`plan::place`). At most three zero bytes are appended to each, to reach the 4-byte
//! copy granularity. Where the device wants row tiles (`plan::tiles`), the bytes of each run of
//! 32 rows are reordered record by record inside the range those rows take; elsewhere they are
//! written as stored, straight from where they lie. The one payload made on the way is an exact
//! import ([`GpuTensor::upload_q8_from_q8_0`]: GGUF q8_0 blocks as q8_g32_fp16, byte copies of
//! the same codes and scales), made a piece at a time.

use super::kernels::Profile;
use super::plan::Placement;
use super::writer::PayloadWriter;
use super::Gpu;
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

    /// Uploads the payload `source` holds or makes, a chunk at a time through a
    /// [`PayloadWriter`]: parts as they lie (a memory map), a made payload a piece at a time.
    async fn upload_from(
        gpu: &Gpu,
        desc: TensorDesc,
        geometry: PayloadGeometry,
        source: Source<'_, '_>,
        profile: Profile,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        debug_assert_eq!(geometry, desc.geometry()?);
        let mut out = PayloadWriter::new(gpu, desc, source.len(), profile).await?;
        match source {
            Source::Parts(parts) => {
                for part in parts {
                    out.push(gpu, part, progress)?;
                }
            }
            Source::Made(view) => {
                let mut piece = vec![0u8; UPLOAD_CHUNK.min(view.len())];
                let mut from = 0;
                while from < view.len() {
                    let n = UPLOAD_CHUNK.min(view.len() - from);
                    view.fill(from, &mut piece[..n])?;
                    out.push(gpu, &piece[..n], progress)?;
                    from += n;
                }
            }
        }
        out.finish(gpu)
    }

    /// A tensor [`PayloadWriter`] has filled.
    pub(super) fn from_parts(
        desc: TensorDesc,
        geometry: PayloadGeometry,
        placement: Placement,
        buffers: Vec<wgpu::Buffer>,
        payload_bytes: u64,
    ) -> GpuTensor {
        GpuTensor { desc, geometry, placement, buffers, payload_bytes }
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
}
