//! The command line's value grammars — shapes, row lists, format and op lists — as library
//! functions, so the fuzzer and the tests reach exactly what the CLI runs.

use crate::error::{Error, Result};
use crate::format::Format;
use crate::gpu::Op;

/// `NxK` with positive integers (`4096x14336`).
pub fn parse_shape(s: &str) -> Result<(usize, usize)> {
    let bad = || Error::Shape {
        layout: "bench",
        rule: "--shape is NxK with positive integers",
        detail: crate::error::clip(s),
    };
    let (n, k) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (n, k) = (n.trim().parse::<usize>().map_err(|_| bad())?, k.trim().parse::<usize>().map_err(|_| bad())?);
    if n == 0 || k == 0 {
        return Err(bad());
    }
    Ok((n, k))
}

/// Canonical format names; none given means every format.
pub fn parse_formats(names: &[String]) -> Result<Vec<Format>> {
    if names.is_empty() {
        return Ok(Format::ALL.to_vec());
    }
    names.iter().map(|n| n.parse()).collect()
}

/// Op names; none given means every op.
pub fn parse_ops(names: &[String]) -> Result<Vec<Op>> {
    if names.is_empty() {
        return Ok(Op::ALL.to_vec());
    }
    names
        .iter()
        .map(|n| {
            Op::ALL.into_iter().find(|op| op.name() == n.as_str()).ok_or_else(|| Error::UnknownName {
                kind: "op",
                name: n.clone(),
                valid: Op::ALL.map(|o| o.name()).join(", "),
            })
        })
        .collect()
}

/// `--rows 3,17,5`: row indices (an `@FILE` is the caller's to read).
pub fn parse_row_list(spec: &str) -> Result<Vec<u32>> {
    spec.split(',')
        .map(|r| {
            r.trim().parse::<u32>().map_err(|_| Error::Shape {
                layout: "gather",
                rule: "--rows is a comma-separated list of row indices or @FILE",
                detail: format!("`{}` is not a row index", crate::error::clip(r)),
            })
        })
        .collect()
}
