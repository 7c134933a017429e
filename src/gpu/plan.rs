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

use super::kernels::{self, Op, CHUNK, MAX_COLUMNS, WORDS_WG};
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

/// Places a `payload_len`-byte payload of `geometry`: one buffer when it fits `max_buffer`,
/// else row blocks as large as fit, one buffer per block and plane. Refused, naming the sizes,
/// when one row (nvfp4: one 128-row tile) of a plane is larger than a buffer.
pub fn place(geometry: &PayloadGeometry, payload_len: u64, limits: &PlanLimits) -> Result<Placement> {
    let v = View::of(geometry);
    let own = |p: &PlaneRef| match *p {
        PlaneRef::Rows { offset, .. } | PlaneRef::Fixed { offset } => Some(offset),
        PlaneRef::Same { .. } | PlaneRef::Grid => None,
    };
    if payload_len.div_ceil(4) * 4 <= limits.max_buffer {
        let planes = v.planes.map(|p| own(&p).map(|offset| (0, offset)));
        // One segment: the whole payload (a one-element Vec of a Range, as clippy suspects).
        #[allow(clippy::single_range_in_vec_init)]
        let segments = vec![0..payload_len];
        return Ok(Placement { segments, blocks: vec![Block { rows: 0..v.rows, planes }] });
    }
    let widest = v
        .planes
        .iter()
        .filter_map(|p| match *p {
            PlaneRef::Rows { stride, .. } => Some(stride),
            PlaneRef::Same { .. } | PlaneRef::Fixed { .. } | PlaneRef::Grid => None,
        })
        .max()
        .unwrap_or(1);
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
    Ok(Placement { segments, blocks })
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
    /// Gather's (output row, pass-local source row) pairs, grouped by pass.
    pub index: Vec<u32>,
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

/// Plans `request` over a `format` tensor of `geometry` whose payload is placed as `place`.
pub fn plan(
    format: Format,
    geometry: &PayloadGeometry,
    request: Request,
    limits: &PlanLimits,
    place: &Placement,
) -> Result<Plan> {
    let v = View::of(geometry);
    let op = request.op();
    let align = limits.align.max(4);
    // Kernels address bytes inside a binding with u32 arithmetic, so no window may reach 4 GiB
    // even where an adapter (Metal) allows larger bindings.
    let limit = limits.max_binding.min(u32::MAX as u64 & !3);
    let chunks = v.k.div_ceil(CHUNK as u64);
    let max_dim = limits.max_workgroups_per_dimension.max(1) as u64;
    let max_groups = max_dim * max_dim;
    let k32 = to_u32(v.k, "K")?;
    let chunks32 = to_u32(chunks, "chunks per row")?;

    // What the op reads and writes besides the payload, checked before anything else.
    let (columns, requests) = match request {
        Request::Dequant => (1, &[][..]),
        Request::Matmul { columns } | Request::MatmulA8 { columns } => {
            if columns == 0 || columns > MAX_COLUMNS {
                return Err(Error::Unsupported(format!(
                    "matmul takes 1..={MAX_COLUMNS} activation columns, got {columns}"
                )));
            }
            (columns as u64, &[][..])
        }
        Request::Gather { rows } => {
            if let Some(&bad) = rows.iter().find(|&&r| r as u64 >= v.rows) {
                return Err(Error::Shape {
                    layout: geometry.layout().name(),
                    rule: "gather rows are < N",
                    detail: format!("row index {bad} but N = {}", v.rows),
                });
            }
            (1, rows)
        }
    };
    let out_words = match op {
        Op::Dequant => v.rows * v.k,
        Op::Matmul | Op::MatmulA8 => columns * v.rows,
        Op::Gather => requests.len() as u64 * v.k,
    };
    let out_bytes = out_words * 4;
    let row_out = v.k * 4;
    // Output units (dequant: rows, gather: requests, matmul: everything) per output buffer.
    let per_output = match op {
        Op::Matmul | Op::MatmulA8 if out_bytes > limit => {
            return Err(Error::Unsupported(format!(
                "{format} matmul: the output needs {out_bytes} bytes, over the {limit}-byte storage binding limit"
            )))
        }
        Op::Matmul | Op::MatmulA8 => v.rows.max(1),
        Op::Dequant | Op::Gather if out_bytes <= limits.max_buffer.min(limit) => u64::MAX,
        // Dequant binds a window per pass (passes keep the row quantum); gather binds its
        // output buffer whole.
        Op::Dequant => limits.max_buffer / row_out.max(1) / v.row_quantum * v.row_quantum,
        Op::Gather => limits.max_buffer.min(limit) / row_out.max(1),
    };
    if per_output == 0 {
        return Err(Error::Unsupported(format!(
            "{format} {}: {} row(s) of output take {} bytes, over this adapter's {}-byte max_buffer_size",
            op.name(),
            v.row_quantum,
            row_out * v.row_quantum,
            limits.max_buffer
        )));
    }
    let units = match op {
        Op::Dequant => v.rows,
        Op::Gather => requests.len() as u64,
        Op::Matmul | Op::MatmulA8 => v.rows.max(1),
    };
    let outputs: Vec<u64> = match op {
        Op::Dequant | Op::Gather if per_output < units => {
            (0..units.div_ceil(per_output)).map(|i| (units - i * per_output).min(per_output) * v.k).collect()
        }
        Op::Dequant | Op::Gather | Op::Matmul | Op::MatmulA8 => vec![out_words],
    };
    let f32_words = columns * chunks * CHUNK as u64;
    let x_words = match op {
        Op::Matmul => f32_words,
        Op::MatmulA8 => columns * chunks * kernels::Q8_1_CHUNK_WORDS as u64,
        Op::Dequant | Op::Gather => 0,
    };
    // A8 with a K of partial chunks (grouped formats; ggml's blocks are whole chunks): the
    // quantize pass reads the columns zero-padded to whole chunks, so the last q8_1 block has
    // zeros after K, where every weight code is zero (canonical padding, checked on the CPU).
    if x_words.max(f32_words * u64::from(op == Op::MatmulA8)) * 4 > limit {
        return Err(Error::Unsupported(format!(
            "{columns} activation column(s) of K = {} need {} bytes, over the {limit}-byte binding limit",
            v.k,
            x_words * 4
        )));
    }

    // Rows per pass: every window (alignment slack + rows + end rounding) fits one binding.
    let out_per_row = match op {
        Op::Dequant => row_out,
        Op::Matmul | Op::MatmulA8 | Op::Gather => 0,
    };
    let mut widest = out_per_row;
    for p in v.planes {
        if let PlaneRef::Rows { stride, .. } = p {
            widest = widest.max(stride);
        }
    }
    let room = limit.saturating_sub(align + 3);
    let mut per_pass = v.rows.min(room / widest.max(1));
    per_pass = match op {
        Op::Dequant => per_pass.min(max_groups * WORDS_WG as u64 / chunks.max(1)).min(u32::MAX as u64 / chunks.max(1)),
        Op::Matmul | Op::MatmulA8 => per_pass.min(max_groups * kernels::matmul_rows(format) as u64),
        // Requests per dispatch are bounded below; a pass's window only bounds source rows.
        Op::Gather => per_pass,
    };
    per_pass = per_pass / v.row_quantum * v.row_quantum;
    if v.rows == 0 || chunks == 0 {
        return Ok(Plan { passes: Vec::new(), out_words, outputs, x_words, quantize: None, index: Vec::new() });
    }
    if per_pass == 0 {
        return Err(Error::Unsupported(format!(
            "{format}: one pass of {} row(s) needs a {}-byte window, but this adapter binds at most {limit} bytes per storage binding",
            v.row_quantum,
            widest * v.row_quantum + align + 3
        )));
    }
    for (i, p) in v.planes.iter().enumerate() {
        if let (PlaneRef::Fixed { .. }, Some((segment, offset))) = (p, place.blocks[0].planes[i]) {
            if place.buffer_len(segment) - align_down(offset, align) > limit {
                return Err(Error::Unsupported(format!(
                    "{format}: the divisor table does not fit one binding of {limit} bytes"
                )));
            }
        }
    }

    // Pass row ranges: per block, runs of at most `per_pass` rows, cut where a dequant output
    // buffer ends.
    let mut ranges: Vec<(usize, u64, u64)> = Vec::new();
    for (b, block) in place.blocks.iter().enumerate() {
        let mut r0 = block.rows.start;
        while r0 < block.rows.end {
            let mut r1 = (r0 + per_pass).min(block.rows.end);
            if op == Op::Dequant && per_output != u64::MAX {
                r1 = r1.min((r0 / per_output + 1) * per_output);
            }
            ranges.push((b, r0, r1));
            r0 = r1;
        }
    }

    let base = Params { k: k32, chunks: chunks32, aux0: v.aux[0], aux1: v.aux[1], ..Params::default() };
    let mut passes = Vec::new();
    let mut index = Vec::new();
    let windows_of = |b: usize, r0: u64, r1: u64| -> Result<([PlaneBinding; 3], Params)> {
        let w = plane_windows(&v, &place.blocks[b], r0, r1, align, place);
        let mut p = base;
        p.row0 = to_u32(r0, "row index")?;
        (p.off0, p.stride0) = (to_u32(w[0].3, "plane offset")?, to_u32(w[0].4, "row stride")?);
        // Binding 6 views plane 0's window as vec4<u32>: only where it starts and ends on whole
        // vec4s (a shorter tail would be past the array's end). Kernels test the rows'
        // alignment (off0, stride0) themselves.
        let on_vec4 = w[0].1.is_multiple_of(16) && w[0].2 >= 16 && w[0].2.is_multiple_of(16);
        p.vec0 = u32::from(limits.vec4_loads && matches!(v.planes[0], PlaneRef::Rows { .. }) && on_vec4);
        (p.off1, p.stride1) = (to_u32(w[1].3, "plane offset")?, to_u32(w[1].4, "row stride")?);
        (p.off2, p.stride2) = (to_u32(w[2].3, "plane offset")?, to_u32(w[2].4, "row stride")?);
        let binding = |i: usize| match v.planes[i] {
            PlaneRef::Grid => PlaneBinding::Grid,
            PlaneRef::Rows { .. } | PlaneRef::Same { .. } | PlaneRef::Fixed { .. } => {
                PlaneBinding::Payload { segment: w[i].0, window: Window { start: w[i].1, size: w[i].2 } }
            }
        };
        Ok(([binding(0), binding(1), binding(2)], p))
    };
    let whole = |o: usize| (o, Window { start: 0, size: (outputs[o] * 4).max(4) });
    match op {
        Op::Dequant | Op::Matmul | Op::MatmulA8 => {
            for &(b, r0, r1) in &ranges {
                let rows = r1 - r0;
                let (planes, mut p) = windows_of(b, r0, r1)?;
                p.rows = to_u32(rows, "rows per pass")?;
                let (out, groups) = match op {
                    Op::Dequant => {
                        let (o, first) = match per_output {
                            u64::MAX => (0, 0),
                            per => (r0 / per, r0 / per * per),
                        };
                        let out_start = (r0 - first) * out_per_row;
                        let ws = align_down(out_start, align);
                        let we = ((r1 - first) * out_per_row).div_ceil(4) * 4;
                        p.out_off = to_u32((out_start - ws) / 4, "output offset")?;
                        (
                            (o as usize, Window { start: ws, size: (we - ws).max(4) }),
                            (rows * chunks).div_ceil(WORDS_WG as u64),
                        )
                    }
                    Op::Matmul | Op::MatmulA8 | Op::Gather => {
                        p.out_off = p.row0;
                        p.out_stride = to_u32(v.rows, "N")?;
                        // vec4 units per column: a chunk is 8 of f32 (A32) or 3 of q8_1 words (A8).
                        let per_chunk = match op {
                            Op::MatmulA8 => kernels::Q8_1_CHUNK_WORDS as u64 / 4,
                            Op::Dequant | Op::Matmul | Op::Gather => CHUNK as u64 / 4,
                        };
                        p.x_stride = to_u32(chunks * per_chunk, "activation stride")?;
                        p.columns = columns as u32;
                        (whole(0), rows.div_ceil(kernels::matmul_rows(format) as u64))
                    }
                };
                p.groups_x = dispatch_size(groups, max_dim)[0];
                passes.push(Pass { params: p, planes, out, groups: dispatch_size(groups, max_dim) });
            }
        }
        Op::Gather => {
            // Bucket requests by the pass range holding their source row (ranges are sorted),
            // keeping request order inside a bucket.
            let mut buckets: Vec<Vec<(u64, u32)>> = vec![Vec::new(); ranges.len()];
            for (out_row, &src) in requests.iter().enumerate() {
                let w = ranges.partition_point(|&(_, r0, _)| r0 <= src as u64) - 1;
                buckets[w].push((out_row as u64, (src as u64 - ranges[w].1) as u32));
            }
            // Requests per dispatch: every invocation index (request * chunks + chunk) fits u32
            // and the dispatch fits max_dim^2 workgroups.
            let per_dispatch = (max_groups * WORDS_WG as u64 / chunks).min(u32::MAX as u64 / chunks).max(1) as usize;
            for (w, bucket) in buckets.iter().enumerate() {
                let (b, r0, r1) = ranges[w];
                // Requests in request order: runs that land in one output buffer.
                for run in bucket.chunk_by(|x, y| x.0 / per_output == y.0 / per_output) {
                    let o = (run[0].0 / per_output) as usize;
                    for part in run.chunks(per_dispatch) {
                        let (planes, mut p) = windows_of(b, r0, r1)?;
                        p.rows = part.len() as u32;
                        p.index_off = to_u32(index.len() as u64 / 2, "request index")?;
                        for &(out_row, src) in part {
                            index.extend([to_u32(out_row - o as u64 * per_output, "request index")?, src]);
                        }
                        let groups = (part.len() as u64 * chunks).div_ceil(WORDS_WG as u64);
                        p.groups_x = dispatch_size(groups, max_dim)[0];
                        passes.push(Pass { params: p, planes, out: whole(o), groups: dispatch_size(groups, max_dim) });
                    }
                }
            }
        }
    }
    let quantize = match op {
        Op::MatmulA8 => {
            let groups = (columns * chunks).div_ceil(WORDS_WG as u64);
            let size = dispatch_size(groups, max_dim);
            let params = Params {
                k: k32,
                chunks: chunks32,
                columns: columns as u32,
                x_stride: to_u32(chunks * (CHUNK as u64 / 4), "activation stride")?,
                groups_x: size[0],
                ..Params::default()
            };
            if groups > max_groups {
                return Err(Error::Unsupported(format!(
                    "{columns} column(s) of {chunks} q8_1 blocks need more than {max_groups} workgroups"
                )));
            }
            Some(QuantizePass { params, groups: size, f32_words })
        }
        Op::Dequant | Op::Matmul | Op::Gather => None,
    };
    Ok(Plan { passes, out_words, outputs, x_words, quantize, index })
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
#[path = "plan_tests.rs"]
mod tests;
