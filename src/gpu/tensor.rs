//! `GpuTensor`: a payload uploaded exactly as stored — no repacking, requantizing or host-side
//! decoding — in one device buffer, or in several byte ranges of it when it is larger than one
//! buffer (`plan::place`). At most three zero bytes are appended to each, to reach the 4-byte
//! copy granularity.

use super::kernels::{Op, Variant};
use super::plan::{place, Placement};
use super::{capability, Gpu};
use crate::error::{Error, Result};
use crate::layout::PayloadGeometry;
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
    /// Uploads the payload, placed as [`place`] decides, reporting `(bytes done, total)` after
    /// every chunk.
    pub(super) async fn upload(
        gpu: &Gpu,
        tensor: &Validated<'_, '_>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<GpuTensor> {
        let desc = tensor.desc().clone();
        // Refuse before allocating anything: an unsupported (format, layout) is not uploaded.
        capability::check(desc.format, desc.layout, Op::Dequant, Variant::Workgroup, Some(gpu.platform()))?;
        let payload = tensor.payload();
        let placement = place(tensor.geometry(), payload.len() as u64, &gpu.plan_limits())?;
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
            let bytes = &payload[range.start as usize..range.end as usize];
            let whole = bytes.len() / 4 * 4;
            for (c, chunk) in bytes[..whole].chunks(UPLOAD_CHUNK).enumerate() {
                gpu.queue().write_buffer(&buffer, (c * UPLOAD_CHUNK) as u64, chunk);
                done += chunk.len() as u64;
                // Submitting hands the staged chunk to the device, so staging memory stays
                // bounded by a chunk or two.
                gpu.queue().submit([]);
                gpu.drive()?;
                progress(done, total);
            }
            if whole < bytes.len() {
                let mut tail = [0u8; 4];
                tail[..bytes.len() - whole].copy_from_slice(&bytes[whole..]);
                gpu.queue().write_buffer(&buffer, whole as u64, &tail);
                done += (bytes.len() - whole) as u64;
                progress(done, total);
            }
            buffers.push(buffer);
        }
        gpu.queue().submit([]);
        Ok(GpuTensor {
            desc,
            geometry: tensor.geometry().clone(),
            placement,
            buffers,
            payload_bytes: payload.len() as u64,
        })
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
