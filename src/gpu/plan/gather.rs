//! Gather: the exact words of requested rows, in request order. Requests are grouped by the pass
//! whose window holds their source row, on the host and once; outputs larger than one buffer are
//! cut by requests.

use super::{dispatch_size, to_u32, Frame, Pass, Plan, Window};
use crate::error::{Error, Result};
use crate::gpu::kernels::{Op, WORDS_WG};

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
    // Requests per dispatch are bounded below; a pass's window only bounds source rows.
    let ranges = f.ranges(f.rows_per_pass(0, u64::MAX)?, None);
    // Bucket requests by the pass range holding their source row (ranges are sorted), keeping
    // request order inside a bucket.
    let mut buckets: Vec<Vec<(u64, u32)>> = vec![Vec::new(); ranges.len()];
    for (out_row, &src) in rows.iter().enumerate() {
        let w = ranges.partition_point(|&(_, r0, _)| r0 <= src as u64) - 1;
        buckets[w].push((out_row as u64, (src as u64 - ranges[w].1) as u32));
    }
    // Requests per dispatch: every invocation index (request * chunks + chunk) fits u32 and the
    // dispatch fits max_dim^2 workgroups.
    let per_dispatch = (f.max_groups * WORDS_WG as u64 / f.chunks).min(u32::MAX as u64 / f.chunks).max(1) as usize;
    let (mut passes, mut index) = (Vec::new(), Vec::new());
    for (w, bucket) in buckets.iter().enumerate() {
        let (b, r0, r1) = ranges[w];
        // Requests in request order: runs that land in one output buffer.
        for run in bucket.chunk_by(|x, y| x.0 / per_output == y.0 / per_output) {
            let o = (run[0].0 / per_output) as usize;
            for part in run.chunks(per_dispatch) {
                let (planes, mut p) = f.windows(b, r0, r1)?;
                p.rows = part.len() as u32;
                p.index_off = to_u32(index.len() as u64 / 2, "request index")?;
                for &(out_row, src) in part {
                    index.extend([to_u32(out_row - o as u64 * per_output, "request index")?, src]);
                }
                let groups = dispatch_size((part.len() as u64 * f.chunks).div_ceil(WORDS_WG as u64), f.max_dim);
                p.groups_x = groups[0];
                let out = (o, Window { start: 0, size: (outputs[o] * 4).max(4) });
                passes.push(Pass { params: p, planes, out, groups });
            }
        }
    }
    Ok(Plan { passes, out_words, outputs, x_words: 0, quantize: None, index })
}
