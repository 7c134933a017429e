//! Device operands: an engine's activations, outputs and row ids as typed slices of its own
//! buffers, and helpers for engines without buffers of their own.

use super::plan::Operand;
use super::Gpu;
use crate::error::{Error, Result};
use std::marker::PhantomData;

/// A 4-byte element a device slice holds: `f32` (activations, products' outputs) or `u32` (row
/// ids, gathered and dequantized words, which are exact binary32 or int32 words).
pub trait Word: bytemuck::Pod {
    const NAME: &'static str;
}

impl Word for f32 {
    const NAME: &'static str = "f32";
}

impl Word for u32 {
    const NAME: &'static str = "u32";
}

/// A typed view of a device buffer: runs (columns of a product, rows of a gather) of `len`
/// elements, `stride` elements apart, the first at element `offset`. How many runs an op
/// touches is its count (the bound op's maximum), so one slice describes a whole batch.
#[derive(Debug, Clone, Copy)]
pub struct DeviceSlice<'a, T: Word> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub len: u64,
    pub stride: u64,
    element: PhantomData<T>,
}

impl<'a, T: Word> DeviceSlice<'a, T> {
    /// Runs of `len` elements back to back from element `offset`.
    pub fn new(buffer: &'a wgpu::Buffer, offset: u64, len: u64) -> Self {
        DeviceSlice { buffer, offset, len, stride: len, element: PhantomData }
    }

    /// The same runs `stride` elements apart (a column of a larger matrix, a KV cache's rows).
    pub fn with_stride(self, stride: u64) -> Self {
        DeviceSlice { stride, ..self }
    }

    /// The planner's view: words, and the buffer's length in words.
    pub(super) fn operand(&self) -> Operand {
        Operand { offset: self.offset, len: self.len, stride: self.stride, buffer_words: self.buffer.size() / 4 }
    }

    /// Refused unless a kernel may bind the buffer as storage.
    pub(super) fn check_usage(&self, what: &str) -> Result<()> {
        if !self.buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
            return Err(Error::Unsupported(format!(
                "{what}: the buffer lacks STORAGE usage ({:?}), so no kernel can bind it",
                self.buffer.usage()
            )));
        }
        Ok(())
    }
}

/// The usage [`Gpu::create_buffer`] gives: kernels bind it, and it copies both ways.
pub const OPERAND_USAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

impl Gpu {
    /// A buffer of `elements` 4-byte elements for operands (contents unspecified until written).
    pub async fn create_buffer(&self, elements: u64, label: &str) -> Result<wgpu::Buffer> {
        let size = elements.checked_mul(4).filter(|&b| b <= self.platform.limits.max_buffer_size).ok_or_else(|| {
            Error::Unsupported(format!(
                "a buffer of {elements} elements is over this adapter's {}-byte max_buffer_size",
                self.platform.limits.max_buffer_size
            ))
        })?;
        self.scoped(&format!("allocating {label}"), || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(4),
                usage: OPERAND_USAGE,
                mapped_at_creation: false,
            })
        })
        .await
    }

    /// A buffer holding `data` (see [`Gpu::create_buffer`]).
    pub async fn create_buffer_with<T: Word>(&self, data: &[T], label: &str) -> Result<wgpu::Buffer> {
        let buffer = self.create_buffer(data.len() as u64, label).await?;
        self.write(&buffer, 0, data)?;
        Ok(buffer)
    }

    /// Writes `data` from element `offset` of `buffer` (staged; lands before the next submit).
    pub fn write<T: Word>(&self, buffer: &wgpu::Buffer, offset: u64, data: &[T]) -> Result<()> {
        self.check_alive()?;
        let end = offset.checked_add(data.len() as u64).filter(|&e| e * 4 <= buffer.size());
        if end.is_none() {
            return Err(Error::Unsupported(format!(
                "writing {} {} elements from element {offset} passes the buffer's {} bytes",
                data.len(),
                T::NAME,
                buffer.size()
            )));
        }
        self.scoped_now("writing a buffer", || self.queue.write_buffer(buffer, offset * 4, bytemuck::cast_slice(data)))
    }

    /// Reads `runs` runs of `slice` back to the host, back to back (the gaps between runs are
    /// skipped). The buffer needs COPY_SRC usage.
    pub async fn read<T: Word>(&self, slice: DeviceSlice<'_, T>, runs: u64) -> Result<Vec<T>> {
        if !slice.buffer.usage().contains(wgpu::BufferUsages::COPY_SRC) {
            return Err(Error::Unsupported("reading back a buffer without COPY_SRC usage".into()));
        }
        let op = slice.operand();
        let end = runs
            .checked_sub(1)
            .map(|r| op.offset + r * op.stride + op.len)
            .ok_or_else(|| Error::Unsupported("reading 0 runs".into()))?;
        if end > op.buffer_words {
            return Err(Error::Unsupported(format!(
                "reading {runs} run(s) of {} elements, {} apart, from element {} passes the buffer's {} elements",
                op.len, op.stride, op.offset, op.buffer_words
            )));
        }
        let bytes = self.read_back(slice.buffer, op.offset * 4, (end - op.offset) * 4).await?;
        let words: Vec<T> = bytemuck::pod_collect_to_vec(&bytes);
        if op.stride == op.len {
            return Ok(words);
        }
        let mut out = Vec::with_capacity((runs * op.len) as usize);
        for r in 0..runs {
            let at = (r * op.stride) as usize;
            out.extend_from_slice(&words[at..at + op.len as usize]);
        }
        Ok(out)
    }
}
