//! Pass planning as pure functions: which rows each pass covers, which byte window of the payload
//! each plane binds, the parameter block and the dispatch size. Nothing here touches wgpu, so
//! every rule is tested on the CPU without an adapter; `dispatch` turns a [`Plan`] into objects.
//!
//! A payload larger than one storage binding still runs: the rows are split into passes, and
//! each pass binds a window of the unchanged buffer per plane (windows start on the adapter's
//! storage offset alignment; the in-window offset travels in the parameters).

use super::kernels::{self, Op, CHUNK, MATMUL_ROWS, MAX_COLUMNS, WORDS_WG};
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
                let grid = if kernels::gguf_grid(g.format).is_some() { Grid } else { unused };
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
}

/// What to plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    Dequant,
    /// `columns` activation columns of K values each.
    Matmul {
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
            Request::Gather { .. } => Op::Gather,
        }
    }
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
    Payload(Window),
    /// The i-quant grid buffer, whole.
    Grid,
}

/// One dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    pub params: Params,
    pub planes: [PlaneBinding; 3],
    /// The output binding (dequant: this pass's rows; matmul, gather: the whole output).
    pub out: Window,
    /// Workgroups along x and y.
    pub groups: [u32; 2],
}

/// A planned op over one tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub passes: Vec<Pass>,
    /// Output words (dequant: N·K, matmul: J·N, gather: R·K).
    pub out_words: u64,
    /// Activation words the kernel reads: J columns of K padded to whole chunks (matmul).
    pub x_words: u64,
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

/// (window start, window size, in-window offset, stride) of each plane for rows `r0..r1`.
fn plane_windows(v: &View, r0: u64, r1: u64, align: u64, buffer_len: u64) -> [(u64, u64, u64, u64); 3] {
    let mut windows = [(0u64, 0u64, 0u64, 0u64); 3];
    for (i, p) in v.planes.iter().enumerate() {
        windows[i] = match *p {
            PlaneRef::Rows { offset, stride } => {
                let start = offset + r0 * stride;
                let ws = align_down(start, align);
                let we = (offset + r1 * stride).div_ceil(4).saturating_mul(4).min(buffer_len).max(ws + 4);
                (ws, we - ws, start - ws, stride)
            }
            PlaneRef::Same { index, extra } => {
                let (ws, size, off, stride) = windows[index];
                (ws, size, off + extra, stride)
            }
            PlaneRef::Fixed { offset } => {
                let ws = align_down(offset, align);
                (ws, buffer_len - ws, offset - ws, 0)
            }
            // Bound from the grid buffer; nothing of the payload.
            PlaneRef::Grid => (0, 0, 0, 0),
        };
    }
    windows
}

/// Plans `request` over a `format` tensor of `geometry` whose payload buffer is `buffer_len` bytes.
pub fn plan(
    format: Format,
    geometry: &PayloadGeometry,
    request: Request,
    limits: &PlanLimits,
    buffer_len: u64,
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
        Request::Matmul { columns } => {
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
        Op::Matmul => columns * v.rows,
        Op::Gather => requests.len() as u64 * v.k,
    };
    let out_bytes = out_words * 4;
    if out_bytes > limits.max_buffer {
        return Err(Error::Unsupported(format!(
            "{format} {}: the output needs {out_bytes} bytes but this adapter's max_buffer_size is {}",
            op.name(),
            limits.max_buffer
        )));
    }
    let whole_out = match op {
        Op::Dequant => false,
        Op::Matmul | Op::Gather => true,
    };
    if whole_out && out_bytes > limit {
        return Err(Error::Unsupported(format!(
            "{format} {}: the output needs {out_bytes} bytes, over the {limit}-byte storage binding limit",
            op.name()
        )));
    }
    let x_words = match op {
        Op::Matmul => columns * chunks * CHUNK as u64,
        Op::Dequant | Op::Gather => 0,
    };
    if x_words * 4 > limit {
        return Err(Error::Unsupported(format!(
            "{columns} activation column(s) of K = {} need {} bytes, over the {limit}-byte binding limit",
            v.k,
            x_words * 4
        )));
    }

    // Rows per pass: every window (alignment slack + rows + end rounding) fits one binding.
    let out_per_row = match op {
        Op::Dequant => v.k * 4,
        Op::Matmul | Op::Gather => 0,
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
        Op::Matmul => per_pass.min(max_groups * MATMUL_ROWS as u64),
        // Requests per dispatch are bounded below; a pass's window only bounds source rows.
        Op::Gather => per_pass,
    };
    per_pass = per_pass / v.row_quantum * v.row_quantum;
    if v.rows == 0 || chunks == 0 {
        return Ok(Plan { passes: Vec::new(), out_words, x_words, index: Vec::new() });
    }
    if per_pass == 0 {
        return Err(Error::Unsupported(format!(
            "{format}: one pass of {} row(s) needs a {}-byte window, but this adapter binds at most {limit} bytes per storage binding",
            v.row_quantum,
            widest * v.row_quantum + align + 3
        )));
    }
    for p in v.planes {
        if let PlaneRef::Fixed { offset } = p {
            if buffer_len - align_down(offset, align) > limit {
                return Err(Error::Unsupported(format!(
                    "{format}: the divisor table does not fit one binding of {limit} bytes"
                )));
            }
        }
    }

    let base = Params { k: k32, chunks: chunks32, aux0: v.aux[0], aux1: v.aux[1], ..Params::default() };
    let mut passes = Vec::new();
    let mut index = Vec::new();
    let windows_of = |r0: u64, r1: u64| -> Result<([PlaneBinding; 3], Params)> {
        let w = plane_windows(&v, r0, r1, align, buffer_len);
        let mut p = base;
        p.row0 = to_u32(r0, "row index")?;
        (p.off0, p.stride0) = (to_u32(w[0].2, "plane offset")?, to_u32(w[0].3, "row stride")?);
        (p.off1, p.stride1) = (to_u32(w[1].2, "plane offset")?, to_u32(w[1].3, "row stride")?);
        (p.off2, p.stride2) = (to_u32(w[2].2, "plane offset")?, to_u32(w[2].3, "row stride")?);
        let binding = |i: usize| match v.planes[i] {
            PlaneRef::Grid => PlaneBinding::Grid,
            PlaneRef::Rows { .. } | PlaneRef::Same { .. } | PlaneRef::Fixed { .. } => {
                PlaneBinding::Payload(Window { start: w[i].0, size: w[i].1 })
            }
        };
        Ok(([binding(0), binding(1), binding(2)], p))
    };
    let whole = Window { start: 0, size: out_bytes.max(4) };
    match op {
        Op::Dequant | Op::Matmul => {
            let mut r0 = 0u64;
            while r0 < v.rows {
                let r1 = (r0 + per_pass).min(v.rows);
                let rows = r1 - r0;
                let (planes, mut p) = windows_of(r0, r1)?;
                p.rows = to_u32(rows, "rows per pass")?;
                let (out, groups) = match op {
                    Op::Dequant => {
                        let out_start = r0 * out_per_row;
                        let ws = align_down(out_start, align);
                        let we = (r1 * out_per_row).div_ceil(4) * 4;
                        p.out_off = to_u32((out_start - ws) / 4, "output offset")?;
                        (Window { start: ws, size: (we - ws).max(4) }, (rows * chunks).div_ceil(WORDS_WG as u64))
                    }
                    Op::Matmul | Op::Gather => {
                        p.out_off = p.row0;
                        p.out_stride = to_u32(v.rows, "N")?;
                        p.x_stride = to_u32(chunks * (CHUNK as u64 / 4), "activation stride")?;
                        p.columns = columns as u32;
                        (whole, rows.div_ceil(MATMUL_ROWS as u64))
                    }
                };
                p.groups_x = dispatch_size(groups, max_dim)[0];
                passes.push(Pass { params: p, planes, out, groups: dispatch_size(groups, max_dim) });
                r0 = r1;
            }
        }
        Op::Gather => {
            // Bucket requests by the window holding their source row (linear time), keeping
            // request order inside a bucket.
            let windows = v.rows.div_ceil(per_pass) as usize;
            let mut buckets: Vec<Vec<(u32, u32)>> = vec![Vec::new(); windows];
            for (out_row, &src) in requests.iter().enumerate() {
                let w = (src as u64 / per_pass) as usize;
                buckets[w].push((to_u32(out_row as u64, "request index")?, (src as u64 - w as u64 * per_pass) as u32));
            }
            // Requests per dispatch: every invocation index (request * chunks + chunk) fits u32
            // and the dispatch fits max_dim^2 workgroups.
            let per_dispatch = (max_groups * WORDS_WG as u64 / chunks).min(u32::MAX as u64 / chunks).max(1) as usize;
            for (w, bucket) in buckets.iter().enumerate() {
                let r0 = w as u64 * per_pass;
                let r1 = (r0 + per_pass).min(v.rows);
                for part in bucket.chunks(per_dispatch) {
                    let (planes, mut p) = windows_of(r0, r1)?;
                    p.rows = part.len() as u32;
                    p.index_off = to_u32(index.len() as u64 / 2, "request index")?;
                    index.extend(part.iter().flat_map(|&(o, s)| [o, s]));
                    let groups = (part.len() as u64 * chunks).div_ceil(WORDS_WG as u64);
                    p.groups_x = dispatch_size(groups, max_dim)[0];
                    passes.push(Pass { params: p, planes, out: whole, groups: dispatch_size(groups, max_dim) });
                }
            }
        }
    }
    Ok(Plan { passes, out_words, x_words, index })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
