//! Products: J activation columns times the weights, in either profile; A8 adds the pass that
//! quantizes the columns to q8_1 first. Every pass writes into the one output buffer.

use super::{dispatch_size, to_u32, Frame, Pass, Plan, QuantizePass, Window};
use crate::error::{Error, Result};
use crate::gpu::kernels::{self, Profile, CHUNK, MAX_COLUMNS, Q8_1_CHUNK_WORDS, WORDS_WG};
use crate::gpu::params::Params;

pub(super) fn plan(f: &Frame, profile: Profile, columns: usize) -> Result<Plan> {
    if columns == 0 || columns > MAX_COLUMNS {
        return Err(Error::Unsupported(format!("matmul takes 1..={MAX_COLUMNS} activation columns, got {columns}")));
    }
    let (v, limit) = (&f.v, f.limit);
    let columns = columns as u64;
    let out_words = columns * v.rows;
    if out_words * 4 > limit {
        return Err(Error::Unsupported(format!(
            "{} matmul: the output needs {} bytes, over the {limit}-byte storage binding limit",
            f.format,
            out_words * 4
        )));
    }
    let f32_words = columns * f.chunks * CHUNK as u64;
    // What the product kernel reads per chunk, in vec4 units: 8 of f32 (A32) or 3 of q8_1
    // words (A8).
    let (x_words, per_chunk) = match profile {
        Profile::A32 => (f32_words, CHUNK as u64 / 4),
        Profile::A8 => (columns * f.chunks * Q8_1_CHUNK_WORDS as u64, Q8_1_CHUNK_WORDS as u64 / 4),
    };
    // A8 with a K of partial chunks (grouped formats; ggml's blocks are whole chunks): the
    // quantize pass reads the columns zero-padded to whole chunks, so the last q8_1 block has
    // zeros after K, where every weight code is zero (canonical padding, checked on the CPU).
    let read = match profile {
        Profile::A32 => x_words,
        Profile::A8 => x_words.max(f32_words),
    };
    if read * 4 > limit {
        return Err(Error::Unsupported(format!(
            "{columns} activation column(s) of K = {} need {} bytes, over the {limit}-byte binding limit",
            v.k,
            x_words * 4
        )));
    }
    if f.is_empty() {
        return Ok(Plan::empty(out_words, vec![out_words], x_words));
    }
    let rows_per_group = kernels::matmul_rows(f.format) as u64;
    let per_pass = f.rows_per_pass(0, f.max_groups * rows_per_group)?;
    let mut passes = Vec::new();
    for (b, r0, r1) in f.ranges(per_pass, None) {
        let (planes, mut p) = f.windows(b, r0, r1)?;
        p.rows = to_u32(r1 - r0, "rows per pass")?;
        p.out_off = p.row0;
        p.out_stride = to_u32(v.rows, "N")?;
        p.x_stride = to_u32(f.chunks * per_chunk, "activation stride")?;
        p.columns = columns as u32;
        let groups = dispatch_size((r1 - r0).div_ceil(rows_per_group), f.max_dim);
        p.groups_x = groups[0];
        let out = (0, Window { start: 0, size: (out_words * 4).max(4) });
        passes.push(Pass { params: p, planes, out, groups });
    }
    let quantize = match profile {
        Profile::A32 => None,
        Profile::A8 => Some(quantize_pass(f, columns, f32_words)?),
    };
    Ok(Plan { passes, out_words, outputs: vec![out_words], x_words, quantize, index: Vec::new() })
}

/// The A8 activation's quantization: one invocation per (column, chunk).
fn quantize_pass(f: &Frame, columns: u64, f32_words: u64) -> Result<QuantizePass> {
    let groups = (columns * f.chunks).div_ceil(WORDS_WG as u64);
    if groups > f.max_groups {
        return Err(Error::Unsupported(format!(
            "{columns} column(s) of {} q8_1 blocks need more than {} workgroups",
            f.chunks, f.max_groups
        )));
    }
    let size = dispatch_size(groups, f.max_dim);
    let params = Params {
        k: f.base.k,
        chunks: f.base.chunks,
        columns: columns as u32,
        x_stride: to_u32(f.chunks * (CHUNK as u64 / 4), "activation stride")?,
        groups_x: size[0],
        ..Params::default()
    };
    Ok(QuantizePass { params, groups: size, f32_words })
}
