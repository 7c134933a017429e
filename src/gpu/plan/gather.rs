//! Gather: the exact words of requested rows, in request order. The kernel reads each request's
//! id from a buffer (the host's ids uploaded, or an engine's on the device), so nothing about the
//! ids is planned on the host: each pass binds one window of source rows and takes the requests
//! whose id falls in it. Host outputs larger than one buffer are cut by requests.

use super::bound::{Kernel, Operand, OperandBinding, Record};
use super::{dispatch_size, to_u32, Frame, Pass, Plan, PlaneBindings, Window};
use crate::error::{Error, Result};
use crate::gpu::kernels::{Op, WORDS_WG};
use crate::gpu::params::Params;

/// The source-row windows every gather pass binds, with their base parameters (row0, span and
/// the table's N set; the requests are the record's).
fn windows(f: &Frame) -> Result<Vec<(PlaneBindings, Params)>> {
    let mut windows = Vec::new();
    for (b, r0, r1) in f.ranges(f.rows_per_pass(0, u64::MAX)?, None) {
        let (planes, mut p) = f.windows(b, r0, r1)?;
        p.span = to_u32(r1 - r0, "rows per pass")?;
        p.total_rows = to_u32(f.v.rows, "N")?;
        windows.push((planes, p));
    }
    Ok(windows)
}

/// Requests one dispatch takes: every invocation index (request * chunks + chunk) fits u32 and
/// the dispatch fits max_dim^2 workgroups.
fn per_dispatch(f: &Frame) -> u64 {
    (f.max_groups * WORDS_WG as u64 / f.chunks).min(u32::MAX as u64 / f.chunks).max(1)
}

/// A dispatch of `n` requests over a window: their ids from word `first` of binding 4, request
/// i's row from output word `out_off + i * out_stride`.
struct Requests {
    first: u64,
    n: u64,
    out_off: u64,
    out_stride: u64,
}

/// The parameters and size of a dispatch of `r` over a window of rows of `chunks` chunks.
fn dispatch(window: &Params, chunks: u64, max_dim: u64, r: Requests) -> Result<(Params, [u32; 2])> {
    let mut p = *window;
    p.rows = to_u32(r.n, "requests")?;
    p.in_off = to_u32(r.first, "id offset")?;
    p.out_off = to_u32(r.out_off, "output offset")?;
    p.out_stride = to_u32(r.out_stride, "output stride")?;
    let groups = dispatch_size((r.n * chunks).div_ceil(WORDS_WG as u64), max_dim);
    p.groups_x = groups[0];
    Ok((p, groups))
}

/// The host's gather of `rows`: ids past N are refused here, before anything runs.
pub(super) fn plan(f: &Frame, rows: &[u32]) -> Result<Plan> {
    let v = &f.v;
    if let Some(&bad) = rows.iter().find(|&&r| r as u64 >= v.rows) {
        return Err(Error::Shape {
            layout: f.layout,
            rule: "gather rows are < N",
            detail: format!("row index {bad} but N = {}", v.rows),
        });
    }
    let requests = rows.len() as u64;
    let out_words = requests * v.k;
    let per_output = f.units_per_output(Op::Gather, requests, false)?;
    let outputs = Frame::outputs(requests, v.k, per_output);
    if f.is_empty() {
        return Ok(Plan::empty(out_words, outputs, 0));
    }
    let windows = windows(f)?;
    let per_dispatch = per_dispatch(f);
    let mut passes = Vec::new();
    for (o, &words) in outputs.iter().enumerate() {
        let (start, count) = (o as u64 * per_output.min(requests), words / v.k);
        let mut s = 0;
        while s < count {
            let n = (count - s).min(per_dispatch);
            for (planes, window) in &windows {
                let r = Requests { first: start + s, n, out_off: s * v.k, out_stride: v.k };
                let (p, groups) = dispatch(window, f.chunks, f.max_dim, r)?;
                let out = (o, Window { start: 0, size: (words * 4).max(4) });
                passes.push(Pass { params: p, planes: *planes, out, groups });
            }
            s += n;
        }
    }
    Ok(Plan { passes, out_words, outputs, x_words: 0, quantize: None, index: rows.to_vec() })
}

/// A bound gather: ids and output bound once, windows planned once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatherPlan {
    /// Window i's planes and base parameters: bind group i.
    pub windows: Vec<(PlaneBindings, Params)>,
    pub ids: OperandBinding,
    pub y: OperandBinding,
    y_stride: u64,
    pub max_rows: u64,
    per_dispatch: u64,
    chunks: u64,
    max_dim: u64,
}

/// Plans a gather of up to `max_rows` ids (the first `max_rows` of `ids`, one run) into `y` (runs of
/// K words).
pub(super) fn bound(f: &Frame, ids: &Operand, y: &Operand, max_rows: u64) -> Result<GatherPlan> {
    if y.len != f.v.k {
        return Err(Error::Shape {
            layout: f.layout,
            rule: "gathered rows hold K values",
            detail: format!("K = {}: y rows of {}", f.v.k, y.len),
        });
    }
    if f.is_empty() {
        return Err(Error::Unsupported(format!("{}: a table with no values has nothing to gather", f.format)));
    }
    if ids.len < max_rows {
        return Err(Error::Unsupported(format!(
            "gather ids: a slice of {} ids cannot hold the {max_rows} a record may take",
            ids.len
        )));
    }
    let idb = Operand { len: max_rows, stride: max_rows, ..*ids }.bind("gather ids", 1, f.align, f.limit, false)?;
    let yb = y.bind("gather y", max_rows, f.align, f.limit, false)?;
    Ok(GatherPlan {
        windows: windows(f)?,
        ids: idb,
        y: yb,
        y_stride: y.stride,
        max_rows,
        per_dispatch: per_dispatch(f),
        chunks: f.chunks,
        max_dim: f.max_dim,
    })
}

impl GatherPlan {
    /// The dispatches of one record of `rows` requests: every window, in pieces of requests one
    /// dispatch takes.
    pub fn records(&self, rows: u64) -> Result<Vec<Record>> {
        if rows == 0 || rows > self.max_rows {
            return Err(Error::Unsupported(format!(
                "this gather was bound for 1..={} rows, got {rows}",
                self.max_rows
            )));
        }
        let mut records = Vec::new();
        let mut s = 0;
        while s < rows {
            let n = (rows - s).min(self.per_dispatch);
            for (set, (_, window)) in self.windows.iter().enumerate() {
                let r = Requests {
                    first: self.ids.first + s,
                    n,
                    out_off: self.y.first + s * self.y_stride,
                    out_stride: self.y_stride,
                };
                let (params, [gx, gy]) = dispatch(window, self.chunks, self.max_dim, r)?;
                records.push(Record { kernel: Kernel::Gather, set, params, groups: [gx, gy, 1] });
            }
            s += n;
        }
        Ok(records)
    }
}
