//! Pass planning as pure functions: which rows each pass covers, which byte window of the payload
//! each plane binds, the parameter block and the dispatch size. Nothing here touches wgpu, so
//! every rule is tested on the CPU without an adapter; `dispatch` turns a [`Plan`] into objects.
//!
//! A payload larger than one storage binding still runs: the rows are split into passes, and
//! each pass binds a window of the unchanged buffer per plane (windows start on the adapter's
//! storage offset alignment; the in-window offset travels in the parameters).
//!
//! A payload larger than one *buffer* is [placed](place) in several: the rows are cut into
//! blocks, and each plane's bytes for a block become one device buffer (a byte range of the
//! unchanged payload; row_split's base, high and scale planes cut on the same rows, nvfp4 on
//! 128-row tiles). Passes never straddle a block, and outputs larger than one buffer are cut the
//! same way, so every kernel reads and writes exactly as it does over one buffer.

pub mod bound;
mod dequant;
mod gather;
mod matmul;
pub mod tiles;

pub use bound::{ColumnCounts, DequantPlan, Kernel, Operand, OperandBinding, ProductPlan, Record};
pub use gather::GatherPlan;
pub use tiles::RowTiles;

use super::kernels::{self, Op, Profile, CHUNK, ROW_TILE};
use super::params::Params;
use crate::error::{Error, Result};
use crate::format::Format;
use crate::layout::PayloadGeometry;

/// Where a codec's plane lives in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlaneRef {
    /// Row `r` starts at `offset + r * stride`; windowed per pass.
    Rows { offset: u64, stride: u64 },
    /// The same binding as plane `index`, `extra` bytes further (fp8 interleaved multipliers),
    /// or an unused plane.
    Same { index: usize, extra: u64 },
    /// A small table every pass binds whole (nvfp4 divisors).
    Fixed { offset: u64 },
    /// The format's lookup grid (i-quants), a device buffer of its own bound whole.
    Grid,
}

/// The kernel's view of a tensor: rows of K values, its planes and codec parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct View {
    rows: u64,
    k: u64,
    planes: [PlaneRef; 3],
    aux: [u32; 2],
    /// Passes start on multiples of this many rows (nvfp4's 128-row scale tiles).
    row_quantum: u64,
}

impl View {
    fn of(geometry: &PayloadGeometry) -> View {
        use PlaneRef::*;
        let unused = Same { index: 0, extra: 0 };
        let rows = |offset: usize, stride: usize| Rows { offset: offset as u64, stride: stride as u64 };
        let plain = |rows: usize, k: usize, planes| View {
            rows: rows as u64,
            k: k as u64,
            planes,
            aux: [0, 0],
            row_quantum: 1,
        };
        match geometry {
            PayloadGeometry::Contiguous(g) => {
                // Rows of the last axis; a scalar is one row of one value.
                let k = g.shape.last().copied().unwrap_or(1);
                let n = g.elements.checked_div(k).unwrap_or(0);
                plain(n, k, [rows(0, k * g.word_bytes), unused, unused])
            }
            PayloadGeometry::RowSplit(g) => {
                let s = g.spec;
                let high = if s.high_bytes > 0 { rows(g.high_offset, g.gpr * s.high_bytes) } else { unused };
                plain(g.n, g.k, [rows(0, g.gpr * s.base_bytes), high, rows(g.scale_offset, g.gpr * 2)])
            }
            PayloadGeometry::BlockScale(g) => View {
                rows: g.n as u64,
                k: g.k as u64,
                planes: [rows(0, g.k / 2), rows(g.scale_offset, g.k / 16), Fixed { offset: g.divisor_offset as u64 }],
                aux: [(g.k / 64) as u32, (g.n / g.divisors.max(1)) as u32],
                row_quantum: crate::layout::block_scale::TILE_ROWS as u64,
            },
            PayloadGeometry::RowScale(g) => plain(g.n, g.k, [rows(0, g.k), rows(g.scale_offset, 2), unused]),
            PayloadGeometry::RowInterleaved(g) => {
                plain(g.n, g.k, [rows(0, g.row_bytes), Same { index: 0, extra: g.k as u64 }, unused])
            }
            PayloadGeometry::Gguf(g) => {
                let grid = if kernels::has_grid(g.format) { Grid } else { unused };
                plain(g.n, g.k, [rows(0, g.row_bytes), grid, unused])
            }
        }
    }
}

impl View {
    /// The view of a payload arranged in `tiles`: passes and buffer splits start on whole tiles.
    fn arranged(mut self, tiles: Option<&RowTiles>) -> View {
        if tiles.is_some() {
            // Only layouts without a quantum of their own are tiled.
            self.row_quantum = self.row_quantum.max(ROW_TILE as u64);
        }
        self
    }
}

/// The device limits a plan respects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// Largest storage binding (kernels address bytes in u32, so at most 4 GiB - 4).
    pub max_binding: u64,
    pub max_buffer: u64,
    /// `min_storage_buffer_offset_alignment`.
    pub align: u64,
    pub max_workgroups_per_dimension: u32,
    /// Whether kernels may read plane 0 through its vec4 view (binding 6) where windows allow;
    /// off only to test the word path everywhere.
    pub vec4_loads: bool,
}

/// What to plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    Dequant,
    /// `columns` activation columns of K values each (A32).
    Matmul {
        columns: usize,
    },
    /// The same product in the A8 profile: the columns are quantized to q8_1 on the device first.
    MatmulA8 {
        columns: usize,
    },
    /// Row indices in request order (repeats allowed).
    Gather {
        rows: &'a [u32],
    },
}

impl Request<'_> {
    pub fn op(&self) -> Op {
        match self {
            Request::Dequant => Op::Dequant,
            Request::Matmul { .. } => Op::Matmul,
            Request::MatmulA8 { .. } => Op::MatmulA8,
            Request::Gather { .. } => Op::Gather,
        }
    }
}

/// Where a tensor's payload lives on the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// One device buffer each: byte ranges of the payload, uploaded unchanged.
    pub segments: Vec<std::ops::Range<u64>>,
    /// Consecutive row blocks covering every row.
    pub blocks: Vec<Block>,
    /// The payload's rows in row tiles on the device ([`tiles`]), or row by row (`None`).
    pub tiles: Option<RowTiles>,
}

/// How a payload's rows are arranged on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrangement {
    /// As stored.
    RowByRow,
    /// In row tiles where the layout has records ([`RowTiles::of`]), else as stored.
    RowTiles,
}

/// Rows whose planes each lie in one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub rows: std::ops::Range<u64>,
    /// Per plane with bytes of its own (row planes, the divisor table): its segment and the
    /// byte offset there of the block's first row (of the table).
    pub planes: [Option<(usize, u64)>; 3],
}

impl Placement {
    /// Bytes of segment `i` on the device: its range, padded to the 4-byte copy granularity.
    pub fn buffer_len(&self, i: usize) -> u64 {
        let r = &self.segments[i];
        ((r.end - r.start).div_ceil(4) * 4).max(4)
    }
}

/// Places a `payload_len`-byte payload of `geometry`, its rows arranged as `arrangement` asks:
/// one buffer when it fits `max_buffer`, else row blocks as large as fit (whole row tiles), one
/// buffer per block and plane. Refused, naming the sizes, when one row (nvfp4: one 128-row
/// tile; a row tile) of a plane is larger than a buffer.
pub fn place(
    geometry: &PayloadGeometry,
    payload_len: u64,
    limits: &PlanLimits,
    arrangement: Arrangement,
) -> Result<Placement> {
    let plain = View::of(geometry);
    let widest_row = plain
        .planes
        .iter()
        .filter_map(|p| match *p {
            PlaneRef::Rows { stride, .. } => Some(stride),
            PlaneRef::Same { .. } | PlaneRef::Fixed { .. } | PlaneRef::Grid => None,
        })
        .max()
        .unwrap_or(1);
    // Passes start on whole tiles, so a tile and its rows of dequantized output must fit a
    // buffer and a binding (with the alignment slack); rows too long for that stay as stored.
    // So must a tile's dequant dispatch (an invocation per chunk).
    let tile_bytes = ROW_TILE as u64 * widest_row.max(plain.k * 4);
    let max_dim = limits.max_workgroups_per_dimension.max(1) as u64;
    let tile_invocations = ROW_TILE as u64 * plain.k.div_ceil(CHUNK as u64);
    let tile_fits = tile_bytes + limits.align + 3 <= limits.max_buffer.min(limits.max_binding)
        && tile_invocations <= (max_dim * max_dim * kernels::WORDS_WG as u64).min(u32::MAX as u64);
    let tiles = match arrangement {
        Arrangement::RowTiles if tile_fits => RowTiles::of(geometry),
        Arrangement::RowTiles | Arrangement::RowByRow => None,
    };
    let v = plain.arranged(tiles.as_ref());
    let own = |p: &PlaneRef| match *p {
        PlaneRef::Rows { offset, .. } | PlaneRef::Fixed { offset } => Some(offset),
        PlaneRef::Same { .. } | PlaneRef::Grid => None,
    };
    if payload_len.div_ceil(4) * 4 <= limits.max_buffer {
        let planes = v.planes.map(|p| own(&p).map(|offset| (0, offset)));
        // One segment: the whole payload (a one-element Vec of a Range, as clippy suspects).
        #[allow(clippy::single_range_in_vec_init)]
        let segments = vec![0..payload_len];
        return Ok(Placement { segments, blocks: vec![Block { rows: 0..v.rows, planes }], tiles });
    }
    let widest = widest_row;
    // Each segment is padded to 4 bytes on the device.
    let per_block = (limits.max_buffer.saturating_sub(3) / widest.max(1)) / v.row_quantum * v.row_quantum;
    if per_block == 0 {
        return Err(Error::Unsupported(format!(
            "{} cannot be split: {} row(s) of one plane take {} bytes, over this adapter's {}-byte max_buffer_size",
            geometry.layout(),
            v.row_quantum,
            widest * v.row_quantum,
            limits.max_buffer
        )));
    }
    let mut segments = Vec::new();
    let mut fixed = [None; 3];
    for (i, p) in v.planes.iter().enumerate() {
        if let PlaneRef::Fixed { offset } = *p {
            if (payload_len - offset).div_ceil(4) * 4 > limits.max_buffer {
                return Err(Error::Unsupported(format!(
                    "the {}-byte divisor table is over this adapter's {}-byte max_buffer_size",
                    payload_len - offset,
                    limits.max_buffer
                )));
            }
            fixed[i] = Some((segments.len(), 0));
            segments.push(offset..payload_len);
        }
    }
    let mut blocks = Vec::new();
    let mut r0 = 0;
    while r0 < v.rows {
        let r1 = (r0 + per_block).min(v.rows);
        let mut planes = fixed;
        for (i, p) in v.planes.iter().enumerate() {
            if let PlaneRef::Rows { offset, stride } = *p {
                planes[i] = Some((segments.len(), 0));
                segments.push(offset + r0 * stride..offset + r1 * stride);
            }
        }
        blocks.push(Block { rows: r0..r1, planes });
        r0 = r1;
    }
    Ok(Placement { segments, blocks, tiles })
}

/// A byte range of a buffer bound as one binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: u64,
    pub size: u64,
}

/// What a plane binding shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaneBinding {
    /// A window of payload segment `segment`.
    Payload { segment: usize, window: Window },
    /// The i-quant grid buffer, whole.
    Grid,
}

/// What a pass binds for its three planes.
pub type PlaneBindings = [PlaneBinding; 3];

/// One dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    pub params: Params,
    pub planes: [PlaneBinding; 3],
    /// The output buffer and the window bound of it (dequant: this pass's rows; matmul, gather:
    /// the whole buffer).
    pub out: (usize, Window),
    /// Workgroups along x and y.
    pub groups: [u32; 2],
}

/// A planned op over one tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub passes: Vec<Pass>,
    /// Output words (dequant: N·K, matmul: J·N, gather: R·K).
    pub out_words: u64,
    /// Words of each output buffer, in output order (more than one where the output is larger
    /// than a buffer: dequant by rows, gather by requests).
    pub outputs: Vec<u64>,
    /// Activation words the kernel reads: J columns of K padded to whole chunks (matmul), or
    /// their q8_1 form (A8: [`kernels::Q8_1_CHUNK_WORDS`] per chunk).
    pub x_words: u64,
    /// A8: the dispatch that quantizes the f32 columns into the words the kernel reads.
    pub quantize: Option<QuantizePass>,
    /// Gather's ids, as the kernel reads them (binding 4).
    pub index: Vec<u32>,
}

impl Plan {
    /// The plan of an op with nothing to compute: its outputs, no passes.
    fn empty(out_words: u64, outputs: Vec<u64>, x_words: u64) -> Plan {
        Plan { passes: Vec::new(), out_words, outputs, x_words, quantize: None, index: Vec::new() }
    }
}

fn align_down(x: u64, a: u64) -> u64 {
    x / a * a
}

fn to_u32(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v)
        .map_err(|_| Error::Unsupported(format!("{what} ({v}) exceeds the 32-bit range of the kernel parameters")))
}

/// Workgroups (x, y) for `groups` in total, each at most `max_dim`.
fn dispatch_size(groups: u64, max_dim: u64) -> [u32; 2] {
    let gx = groups.clamp(1, max_dim);
    [gx as u32, groups.div_ceil(gx).max(1) as u32]
}

/// One plane's binding for a pass: (segment, window start, window size, in-window offset,
/// stride).
type PlaneWindow = (usize, u64, u64, u64, u64);

/// The window of each plane for rows `r0..r1` of `block`, in its segment's coordinates.
fn plane_windows(v: &View, block: &Block, r0: u64, r1: u64, align: u64, place: &Placement) -> [PlaneWindow; 3] {
    let mut windows = [(0usize, 0u64, 0u64, 0u64, 0u64); 3];
    let (a, b) = (r0 - block.rows.start, r1 - block.rows.start);
    for (i, p) in v.planes.iter().enumerate() {
        let (segment, offset) = block.planes[i].unwrap_or((0, 0));
        let len = place.buffer_len(segment);
        windows[i] = match *p {
            PlaneRef::Rows { stride, .. } => {
                let start = offset + a * stride;
                let ws = align_down(start, align);
                let we = (offset + b * stride).div_ceil(4).saturating_mul(4).min(len).max(ws + 4);
                (segment, ws, we - ws, start - ws, stride)
            }
            PlaneRef::Same { index, extra } => {
                let (segment, ws, size, off, stride) = windows[index];
                (segment, ws, size, off + extra, stride)
            }
            PlaneRef::Fixed { .. } => {
                let ws = align_down(offset, align);
                (segment, ws, len - ws, offset - ws, 0)
            }
            // Bound from the grid buffer; nothing of the payload.
            PlaneRef::Grid => (0, 0, 0, 0, 0),
        };
    }
    windows
}

/// Plans `request` over a `format` tensor of `geometry` whose payload is placed as `place`: the
/// frame every op shares, then the op's own planner (`dequant.rs`, `matmul.rs`, `gather.rs`).
pub fn plan(
    format: Format,
    geometry: &PayloadGeometry,
    request: Request,
    limits: &PlanLimits,
    place: &Placement,
) -> Result<Plan> {
    let frame = Frame::new(format, geometry, limits, place)?;
    match request {
        Request::Dequant => dequant::plan(&frame),
        Request::Matmul { columns } => matmul::plan(&frame, Profile::A32, columns),
        Request::MatmulA8 { columns } => matmul::plan(&frame, Profile::A8, columns),
        Request::Gather { rows } => gather::plan(&frame, rows),
    }
}

/// Plans a bound product (see [`bound`]).
pub fn bound_product(
    format: Format,
    geometry: &PayloadGeometry,
    limits: &PlanLimits,
    place: &Placement,
    profile: Profile,
    io: [&Operand; 2],
    counts: ColumnCounts,
) -> Result<ProductPlan> {
    bound::product(&Frame::new(format, geometry, limits, place)?, profile, io, counts)
}

/// Plans a bound gather of up to `max_rows` ids.
pub fn bound_gather(
    format: Format,
    geometry: &PayloadGeometry,
    limits: &PlanLimits,
    place: &Placement,
    io: [&Operand; 2],
    max_rows: u64,
) -> Result<GatherPlan> {
    gather::bound(&Frame::new(format, geometry, limits, place)?, io[0], io[1], max_rows)
}

/// Plans a bound dequant into `y` (one run of N·K words).
pub fn bound_dequant(
    format: Format,
    geometry: &PayloadGeometry,
    limits: &PlanLimits,
    place: &Placement,
    y: &Operand,
) -> Result<DequantPlan> {
    bound::dequant(&Frame::new(format, geometry, limits, place)?, y)
}

/// What every op's plan shares: the payload's planes, the binding and dispatch limits, and the
/// parameters every pass starts from.
struct Frame<'a> {
    format: Format,
    v: View,
    layout: &'static str,
    place: &'a Placement,
    align: u64,
    /// The largest window one storage binding takes.
    limit: u64,
    max_buffer: u64,
    vec4_loads: bool,
    chunks: u64,
    max_dim: u64,
    max_groups: u64,
    base: Params,
}

impl<'a> Frame<'a> {
    fn new(format: Format, geometry: &PayloadGeometry, limits: &PlanLimits, place: &'a Placement) -> Result<Frame<'a>> {
        let v = View::of(geometry).arranged(place.tiles.as_ref());
        let chunks = v.k.div_ceil(CHUNK as u64);
        let max_dim = limits.max_workgroups_per_dimension.max(1) as u64;
        let base = Params {
            k: to_u32(v.k, "K")?,
            chunks: to_u32(chunks, "chunks per row")?,
            aux0: v.aux[0],
            aux1: v.aux[1],
            ..Params::default()
        };
        Ok(Frame {
            format,
            layout: geometry.layout().name(),
            place,
            align: limits.align.max(4),
            // Kernels address bytes inside a binding with u32 arithmetic, so no window may reach
            // 4 GiB even where an adapter (Metal) allows larger bindings.
            limit: limits.max_binding.min(u32::MAX as u64 & !3),
            max_buffer: limits.max_buffer,
            vec4_loads: limits.vec4_loads,
            chunks,
            max_dim,
            max_groups: max_dim * max_dim,
            base,
            v,
        })
    }

    /// Whether there is nothing to compute (no rows, or rows of no values).
    fn is_empty(&self) -> bool {
        self.v.rows == 0 || self.chunks == 0
    }

    /// Rows per pass: every window (alignment slack + rows + end rounding) fits one binding,
    /// counting `out_per_row` bytes of a windowed output, at most `cap`, in whole row quanta.
    /// Call only when the frame is not empty.
    fn rows_per_pass(&self, out_per_row: u64, cap: u64) -> Result<u64> {
        let v = &self.v;
        let mut widest = out_per_row;
        for p in v.planes {
            if let PlaneRef::Rows { stride, .. } = p {
                widest = widest.max(stride);
            }
        }
        let room = self.limit.saturating_sub(self.align + 3);
        let per_pass = v.rows.min(room / widest.max(1)).min(cap) / v.row_quantum * v.row_quantum;
        if per_pass == 0 {
            return Err(Error::Unsupported(format!(
                "{}: one pass of {} row(s) needs a {}-byte window, but this adapter binds at most {} bytes per storage binding",
                self.format,
                v.row_quantum,
                widest * v.row_quantum + self.align + 3,
                self.limit
            )));
        }
        for (i, p) in v.planes.iter().enumerate() {
            if let (PlaneRef::Fixed { .. }, Some((segment, offset))) = (p, self.place.blocks[0].planes[i]) {
                if self.place.buffer_len(segment) - align_down(offset, self.align) > self.limit {
                    return Err(Error::Unsupported(format!(
                        "{}: the divisor table does not fit one binding of {} bytes",
                        self.format, self.limit
                    )));
                }
            }
        }
        Ok(per_pass)
    }

    /// Pass row ranges (block, first row, end row): per block, runs of at most `per_pass` rows,
    /// also cut every `cut` rows (where a dequant output buffer ends).
    fn ranges(&self, per_pass: u64, cut: Option<u64>) -> Vec<(usize, u64, u64)> {
        let mut ranges = Vec::new();
        for (b, block) in self.place.blocks.iter().enumerate() {
            let mut r0 = block.rows.start;
            while r0 < block.rows.end {
                let mut r1 = (r0 + per_pass).min(block.rows.end);
                if let Some(cut) = cut {
                    r1 = r1.min((r0 / cut + 1) * cut);
                }
                ranges.push((b, r0, r1));
                r0 = r1;
            }
        }
        ranges
    }

    /// The planes' bindings and the parameters of a pass over rows `r0..r1` of block `b`.
    fn windows(&self, b: usize, r0: u64, r1: u64) -> Result<([PlaneBinding; 3], Params)> {
        let v = &self.v;
        let w = plane_windows(v, &self.place.blocks[b], r0, r1, self.align, self.place);
        let mut p = self.base;
        p.row0 = to_u32(r0, "row index")?;
        // Passes start on whole tiles (the row quantum), so the window's tiles are the payload's.
        let tiled = self.place.tiles.as_ref().map_or(0, |t| t.tiled_rows().min(r1).saturating_sub(r0));
        p.tiled_rows = to_u32(tiled, "tiled rows")?;
        (p.off0, p.stride0) = (to_u32(w[0].3, "plane offset")?, to_u32(w[0].4, "row stride")?);
        // Binding 6 views plane 0's window as vec4<u32>: only where it starts and ends on whole
        // vec4s (a shorter tail would be past the array's end). Kernels test the rows'
        // alignment (off0, stride0) themselves.
        let on_vec4 = w[0].1.is_multiple_of(16) && w[0].2 >= 16 && w[0].2.is_multiple_of(16);
        p.vec0 = u32::from(self.vec4_loads && matches!(v.planes[0], PlaneRef::Rows { .. }) && on_vec4);
        (p.off1, p.stride1) = (to_u32(w[1].3, "plane offset")?, to_u32(w[1].4, "row stride")?);
        (p.off2, p.stride2) = (to_u32(w[2].3, "plane offset")?, to_u32(w[2].4, "row stride")?);
        let binding = |i: usize| match v.planes[i] {
            PlaneRef::Grid => PlaneBinding::Grid,
            PlaneRef::Rows { .. } | PlaneRef::Same { .. } | PlaneRef::Fixed { .. } => {
                PlaneBinding::Payload { segment: w[i].0, window: Window { start: w[i].1, size: w[i].2 } }
            }
        };
        Ok(([binding(0), binding(1), binding(2)], p))
    }

    /// Output buffers of `units` units of `unit_words` each, `per_output` units a buffer.
    fn outputs(units: u64, unit_words: u64, per_output: u64) -> Vec<u64> {
        match per_output {
            u64::MAX => vec![units * unit_words],
            per => (0..units.div_ceil(per)).map(|i| (units - i * per).min(per) * unit_words).collect(),
        }
    }

    /// Output units (rows or requests of K values) per output buffer, `u64::MAX` where the whole
    /// output fits one; `windowed` outputs are bound a pass's window at a time (dequant), the
    /// others whole (gather).
    fn units_per_output(&self, op: Op, units: u64, windowed: bool) -> Result<u64> {
        let v = &self.v;
        let row_out = v.k * 4;
        let per_output = if units * row_out <= self.max_buffer.min(self.limit) {
            u64::MAX
        } else if windowed {
            // Passes keep the row quantum.
            self.max_buffer / row_out.max(1) / v.row_quantum * v.row_quantum
        } else {
            self.max_buffer.min(self.limit) / row_out.max(1)
        };
        if per_output == 0 {
            return Err(Error::Unsupported(format!(
                "{} {}: {} row(s) of output take {} bytes, over this adapter's {}-byte max_buffer_size",
                self.format,
                op.name(),
                v.row_quantum,
                row_out * v.row_quantum,
                self.max_buffer
            )));
        }
        Ok(per_output)
    }
}

/// The A8 activation quantization: one invocation per (column, chunk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantizePass {
    pub params: Params,
    pub groups: [u32; 2],
    /// The f32 columns it reads, zero-padded to whole chunks.
    pub f32_words: u64,
}

#[cfg(test)]
mod tests;
