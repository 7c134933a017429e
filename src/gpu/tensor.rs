//! `GpuTensor`: a payload uploaded exactly as stored — no repacking, requantizing or host-side
//! decoding. At most three zero bytes are appended, to reach the 4-byte copy granularity.

use super::kernels::{Op, Variant};
use super::{capability, Gpu};
use crate::error::{Error, Result};
use crate::layout::PayloadGeometry;
use crate::tensor::{TensorDesc, Validated};

pub struct GpuTensor {
    desc: TensorDesc,
    geometry: PayloadGeometry,
    buffer: wgpu::Buffer,
    payload_bytes: u64,
}

impl GpuTensor {
    pub(super) async fn upload(gpu: &Gpu, tensor: &Validated<'_, '_>) -> Result<GpuTensor> {
        let desc = tensor.desc().clone();
        // Refuse before allocating anything: an unsupported (format, layout) is not uploaded.
        capability::check(desc.format, desc.layout, Op::Dequant, Variant::Workgroup, Some(gpu.platform()))?;
        let payload = tensor.payload();
        let padded = (payload.len() as u64).div_ceil(4) * 4;
        let max = gpu.platform().limits.max_buffer_size;
        if padded > max {
            return Err(Error::Unsupported(format!(
                "{} payload needs a {padded}-byte buffer but this adapter's max_buffer_size is {max}; the payload is not split",
                desc.format
            )));
        }
        let buffer = gpu
            .scoped("allocating the payload buffer", || {
                gpu.device().create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("{} payload", desc.format)),
                    size: padded.max(4),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            })
            .await?;
        let whole = payload.len() / 4 * 4;
        if whole > 0 {
            gpu.queue().write_buffer(&buffer, 0, &payload[..whole]);
        }
        if whole < payload.len() {
            let mut tail = [0u8; 4];
            tail[..payload.len() - whole].copy_from_slice(&payload[whole..]);
            gpu.queue().write_buffer(&buffer, whole as u64, &tail);
        }
        Ok(GpuTensor { desc, geometry: tensor.geometry().clone(), buffer, payload_bytes: payload.len() as u64 })
    }

    pub fn desc(&self) -> &TensorDesc {
        &self.desc
    }

    pub fn geometry(&self) -> &PayloadGeometry {
        &self.geometry
    }

    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// The stored payload's length (the buffer may be up to 3 bytes longer).
    pub fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }
}
