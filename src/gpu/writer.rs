//! `PayloadWriter`: a tensor's device buffers filled from its stored payload as the bytes come,
//! in payload order — from a memory map a chunk at a time, or from a network stream whose
//! chunks end anywhere. Every upload goes through it, so a streamed model and a mapped one are
//! placed, arranged and written by the same code.
//!
//! The placement's segments are byte ranges of the payload (several when it is larger than one
//! buffer, not in payload order); each is written in order through its own word carry, so each
//! write stays 4-byte aligned whatever the chunks. Where the device wants row tiles, bytes wait
//! in a piece until it holds whole tiles, which are rearranged and then written.

use super::kernels::{Op, Profile, Variant};
use super::plan::{place, Placement};
use super::tensor::{GpuTensor, UPLOAD_CHUNK};
use super::{capability, Gpu};
use crate::error::{Error, Result};
use crate::layout::PayloadGeometry;
use crate::tensor::TensorDesc;

pub struct PayloadWriter {
    desc: TensorDesc,
    geometry: PayloadGeometry,
    placement: Placement,
    buffers: Vec<wgpu::Buffer>,
    /// Per segment: bytes written, and the tail (under 4 bytes) waiting for the next bytes.
    written: Vec<(u64, Vec<u8>)>,
    /// Payload bytes received so far, and the whole payload's length.
    received: u64,
    payload_bytes: u64,
    /// Where tiles rearrange: the bytes from `piece_from` on, not yet whole tiles.
    piece: Vec<u8>,
    piece_from: u64,
    scratch: Vec<u8>,
    /// Payload bytes the segments hold, and how many of them are written (progress).
    total: u64,
    done: u64,
}

impl PayloadWriter {
    /// Places a payload of `payload_bytes` bytes of `desc` for `profile`'s products
    /// ([`Gpu::arrangement`]) and allocates its buffers; refused before allocating anything
    /// where the device cannot run the format or its buffers exceed the memory allowed.
    pub async fn new(gpu: &Gpu, desc: TensorDesc, payload_bytes: u64, profile: Profile) -> Result<Self> {
        capability::check(desc.format, desc.layout, Op::Dequant, Variant::Workgroup, Some(gpu.platform()))?;
        let geometry = desc.geometry()?;
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
        for i in 0..placement.segments.len() {
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
            buffers.push(buffer);
        }
        let written = vec![(0, Vec::new()); buffers.len()];
        Ok(PayloadWriter {
            desc,
            geometry,
            placement,
            buffers,
            written,
            received: 0,
            payload_bytes,
            piece: Vec::new(),
            piece_from: 0,
            scratch: Vec::new(),
            total,
            done: 0,
        })
    }

    /// The next payload bytes, in order, in chunks of any size; `progress(done, total)` is
    /// called after each write.
    pub fn push(&mut self, gpu: &Gpu, bytes: &[u8], progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let left = self.payload_bytes - self.received;
        if bytes.len() as u64 > left {
            return Err(Error::Unsupported(format!(
                "{} more bytes for a {}-byte {} payload with {left} left",
                bytes.len(),
                self.payload_bytes,
                self.desc.format
            )));
        }
        let mut from = self.received;
        self.received += bytes.len() as u64;
        if self.placement.tiles.is_none() {
            for chunk in bytes.chunks(UPLOAD_CHUNK) {
                self.route(gpu, from, chunk, progress)?;
                from += chunk.len() as u64;
            }
            return Ok(());
        }
        self.piece.extend_from_slice(bytes);
        // Whole pieces (whole tiles, never across a segment's edge) are rearranged and written.
        loop {
            let from = self.piece_from;
            let end = self.edge_after(from);
            let Some(tiles) = &self.placement.tiles else { unreachable!("checked above") };
            let to = tiles.piece_end(from, end, UPLOAD_CHUNK as u64);
            let len = (to - from) as usize;
            if self.piece.len() < len || len == 0 {
                return Ok(());
            }
            let mut piece = std::mem::take(&mut self.piece);
            tiles.arrange(from, &mut piece[..len], &mut self.scratch);
            self.route(gpu, from, &piece[..len], progress)?;
            piece.drain(..len);
            self.piece = piece;
            self.piece_from = to;
        }
    }

    /// The first segment edge (or the payload's end) after payload byte `from`.
    fn edge_after(&self, from: u64) -> u64 {
        let edges = self.placement.segments.iter().flat_map(|r| [r.start, r.end]);
        edges.filter(|&e| e > from).fold(self.payload_bytes, u64::min)
    }

    /// Writes payload bytes `from..from + bytes.len()` (device order) into each segment they
    /// meet.
    fn route(&mut self, gpu: &Gpu, from: u64, bytes: &[u8], progress: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let to = from + bytes.len() as u64;
        for (i, range) in self.placement.segments.iter().enumerate() {
            let (lo, hi) = (range.start.max(from), range.end.min(to));
            if lo >= hi {
                continue;
            }
            let part = &bytes[(lo - from) as usize..(hi - from) as usize];
            let (at, carry) = &mut self.written[i];
            debug_assert_eq!(*at + carry.len() as u64, lo - range.start, "segment bytes come in order");
            let mut part = part;
            if !carry.is_empty() {
                let take = (4 - carry.len()).min(part.len());
                carry.extend_from_slice(&part[..take]);
                part = &part[take..];
                if carry.len() < 4 {
                    continue;
                }
                let word = std::mem::take(carry);
                write(gpu, &self.buffers[i], at, &word)?;
            }
            let whole = part.len() / 4 * 4;
            if whole > 0 {
                write(gpu, &self.buffers[i], at, &part[..whole])?;
            }
            carry.extend_from_slice(&part[whole..]);
            self.done += hi - lo;
            progress(self.done, self.total);
        }
        Ok(())
    }

    /// The uploaded tensor, once every payload byte has come: each segment's last word padded
    /// with zero bytes to the 4-byte copy granularity.
    pub fn finish(mut self, gpu: &Gpu) -> Result<GpuTensor> {
        if self.received != self.payload_bytes || !self.piece.is_empty() {
            return Err(Error::Unsupported(format!(
                "a {}-byte {} payload ended after {} bytes",
                self.payload_bytes, self.desc.format, self.received
            )));
        }
        for (i, (at, carry)) in self.written.iter_mut().enumerate() {
            if !carry.is_empty() {
                carry.resize(4, 0);
                write(gpu, &self.buffers[i], at, carry)?;
            }
        }
        gpu.scoped_now("uploading a payload", || gpu.queue().submit([]))?;
        Ok(GpuTensor::from_parts(self.desc, self.geometry, self.placement, self.buffers, self.payload_bytes))
    }
}

/// One write at `at`, which moves on. Submitting hands the staged bytes to the device, so the
/// staging wgpu keeps stays a chunk or two.
fn write(gpu: &Gpu, buffer: &wgpu::Buffer, at: &mut u64, bytes: &[u8]) -> Result<()> {
    gpu.scoped_now("uploading a payload", || gpu.queue().write_buffer(buffer, *at, bytes))?;
    *at += bytes.len() as u64;
    gpu.queue().submit([]);
    gpu.drive()
}
