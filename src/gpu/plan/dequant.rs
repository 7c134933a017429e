//! Dequant: every weight's exact word, a pass of rows at a time, each pass writing a window of
//! its output buffer (outputs larger than one buffer are cut by rows).

use super::{align_down, dispatch_size, to_u32, Frame, Pass, Plan, Window};
use crate::error::Result;
use crate::gpu::kernels::{Op, WORDS_WG};

pub(super) fn plan(f: &Frame) -> Result<Plan> {
    let v = &f.v;
    let out_words = v.rows * v.k;
    let per_output = f.units_per_output(Op::Dequant, v.rows, true)?;
    let outputs = Frame::outputs(v.rows, v.k, per_output);
    if f.is_empty() {
        return Ok(Plan::empty(out_words, outputs, 0));
    }
    let row_out = v.k * 4;
    // One invocation per chunk: the dispatch and its invocation indices bound the rows.
    let cap = (f.max_groups * WORDS_WG as u64 / f.chunks).min(u32::MAX as u64 / f.chunks);
    let per_pass = f.rows_per_pass(row_out, cap)?;
    let cut = (per_output != u64::MAX).then_some(per_output);
    let mut passes = Vec::new();
    for (b, r0, r1) in f.ranges(per_pass, cut) {
        let rows = r1 - r0;
        let (planes, mut p) = f.windows(b, r0, r1)?;
        p.rows = to_u32(rows, "rows per pass")?;
        let (o, first) = match per_output {
            u64::MAX => (0, 0),
            per => (r0 / per, r0 / per * per),
        };
        let out_start = (r0 - first) * row_out;
        let ws = align_down(out_start, f.align);
        let we = ((r1 - first) * row_out).div_ceil(4) * 4;
        p.out_off = to_u32((out_start - ws) / 4, "output offset")?;
        let groups = dispatch_size((rows * f.chunks).div_ceil(WORDS_WG as u64), f.max_dim);
        p.groups_x = groups[0];
        let out = (o as usize, Window { start: ws, size: (we - ws).max(4) });
        passes.push(Pass { params: p, planes, out, groups });
    }
    Ok(Plan { passes, out_words, outputs, x_words: 0, quantize: None, index: Vec::new() })
}
