//! Which format each tensor of a checkpoint gets. Real checkpoints mix matrices with vectors
//! (biases, norms) and integer buffers (`position_ids`), so, as llama.cpp's quantize keeps 1-D
//! tensors in f32: float matrices go to the target format, other float tensors to a direct
//! format (`fp32` by default, exact from f32/f16/bf16; or `bf16`), integers to `int32` (with a
//! range check). Name rules (globs) override: `--format-for PATTERN=FORMAT` picks a format,
//! `--keep PATTERN` keeps a tensor direct; the first matching rule of each kind wins, and
//! `--format-for` before `--keep`.

use super::convert::Method;
use crate::error::{Error, Result};
use crate::format::{Category, Format};
use globset::{Glob, GlobMatcher};

/// The rules of one `quantize` run.
pub struct Rules {
    target: Format,
    vectors: Format,
    keep: Vec<GlobMatcher>,
    format_for: Vec<(GlobMatcher, Format)>,
}

fn glob(pattern: &str) -> Result<GlobMatcher> {
    Glob::new(pattern).map(|g| g.compile_matcher()).map_err(|e| Error::Unsupported(format!("pattern {pattern:?}: {e}")))
}

impl Rules {
    /// `format_for` entries are `PATTERN=FORMAT`; `vectors` is `fp32` or `bf16`, by default the
    /// target where that is one of them (a checkpoint kept whole), else `fp32` (exact from f32,
    /// f16 and bf16).
    pub fn new(target: Format, vectors: Option<Format>, keep: &[String], format_for: &[String]) -> Result<Rules> {
        let vectors = match (vectors, target) {
            (Some(v), _) => v,
            (None, Format::Bf16 | Format::Fp32) => target,
            (None, _) => Format::Fp32,
        };
        if !matches!(vectors, Format::Fp32 | Format::Bf16) {
            return Err(Error::Unsupported(format!("vectors are kept as fp32 or bf16, not {vectors}")));
        }
        let format_for = format_for
            .iter()
            .map(|rule| {
                let (pattern, format) = rule
                    .rsplit_once('=')
                    .ok_or_else(|| Error::Unsupported(format!("--format-for {rule:?} is not PATTERN=FORMAT")))?;
                Ok((glob(pattern)?, format.parse()?))
            })
            .collect::<Result<_>>()?;
        Ok(Rules { target, vectors, keep: keep.iter().map(|p| glob(p)).collect::<Result<_>>()?, format_for })
    }

    /// The format for tensor `name` of `rank` dimensions, and why (for the provenance and the
    /// listing).
    pub fn choose(&self, name: &str, is_float: bool, rank: usize) -> Result<(Format, &'static str)> {
        if !is_float {
            return Ok((Format::Int32, "integers are kept as int32"));
        }
        if let Some((_, format)) = self.format_for.iter().find(|(g, _)| g.is_match(name)) {
            let needs_matrix = !matches!(format.category(), Category::DirectFloat);
            if needs_matrix && rank != 2 {
                return Err(Error::Unsupported(format!(
                    "{name}: --format-for picks {format}, which holds rank-2 matrices; the tensor has rank {rank}"
                )));
            }
            return Ok((*format, "--format-for"));
        }
        if self.keep.iter().any(|g| g.is_match(name)) {
            return Ok((self.vectors, "--keep"));
        }
        if rank == 2 {
            return Ok((self.target, "float matrix"));
        }
        Ok((self.vectors, "float vector or scalar"))
    }

    /// The method a tensor given `format` is converted by: the one asked for belongs to the
    /// target format; tensors kept direct or given another format take their format's own.
    pub fn method(&self, format: Format, asked: Option<Method>) -> Option<Method> {
        if format == self.target {
            asked
        } else {
            None
        }
    }
}
