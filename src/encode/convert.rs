//! Which conversion a tensor of a checkpoint gets, and running it: the method belongs to the
//! target format (grouped formats: `grouped_absmax` unless `grouped_search` is asked for; fp8
//! rows: `fp8_row_maxabs`), direct formats take none, and integers keep their words as int32.
//! The CLI's `quantize` and any other caller make the same choice through [`convert`].

use super::direct::{self, DirectSource};
use super::grouped::{self, SearchOptions};
use super::{fp8_row, Encoded};
use crate::container::sources::{FloatData, FloatTensor};
use crate::error::{Error, Result};
use crate::format::{Category, Format};
use std::str::FromStr;

/// A conversion method `quantize` can be asked for by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    GroupedAbsmax,
    GroupedSearch,
    Fp8RowMaxabs,
}

impl Method {
    pub const ALL: [Method; 3] = [Method::GroupedAbsmax, Method::GroupedSearch, Method::Fp8RowMaxabs];

    pub fn name(self) -> &'static str {
        match self {
            Method::GroupedAbsmax => "grouped_absmax",
            Method::GroupedSearch => "grouped_search",
            Method::Fp8RowMaxabs => "fp8_row_maxabs",
        }
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Method> {
        Method::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| Error::UnknownName {
            kind: "method",
            name: s.to_string(),
            valid: Method::ALL.map(|m| m.name()).join(", "),
        })
    }
}

fn matrix(t: &FloatTensor, format: Format) -> Result<(usize, usize)> {
    match t.shape[..] {
        [n, k] => Ok((n, k)),
        _ => Err(Error::Unsupported(format!(
            "{}: {format} quantizes rank-2 [N, K] tensors only; shape is {:?}",
            t.name, t.shape
        ))),
    }
}

/// Converts one checkpoint tensor to `format`, by `method` where one is asked for, else by the
/// format's own; a method that does not produce `format` is refused.
pub fn convert(t: &FloatTensor, format: Format, method: Option<Method>) -> Result<Encoded> {
    let Some(source) = t.source() else {
        // Integer tensors (the rules only give them int32): words kept, range checked.
        return direct::persist(Format::Int32, &t.shape, DirectSource::I32(&t.to_i32()?));
    };
    let refuse = |m: Method| Err(Error::Unsupported(format!("method {:?} does not produce {format}", m.name())));
    match format.category() {
        Category::Grouped => {
            let (n, k) = matrix(t, format)?;
            match method.unwrap_or(Method::GroupedAbsmax) {
                Method::GroupedAbsmax => grouped::grouped_absmax(format, n, k, source),
                Method::GroupedSearch => grouped::grouped_search(format, n, k, source, SearchOptions::default()),
                m @ Method::Fp8RowMaxabs => refuse(m),
            }
        }
        Category::RowScaledFloat => {
            let (n, k) = matrix(t, format)?;
            match method.unwrap_or(Method::Fp8RowMaxabs) {
                Method::Fp8RowMaxabs => fp8_row::fp8_row_maxabs(format, n, k, source),
                m @ (Method::GroupedAbsmax | Method::GroupedSearch) => refuse(m),
            }
        }
        Category::DirectFloat => {
            if let Some(m) = method {
                return refuse(m);
            }
            match (format, &t.data) {
                // bf16 words are kept bit for bit; anything else is rounded by the one named
                // conversion, f32_to_bf16 (f16 is widened to f32 exactly first).
                (Format::Bf16, FloatData::Bf16(words)) => direct::persist(format, &t.shape, DirectSource::Bf16(words)),
                // fp16 keeps f16 words bit for bit; no rounding into binary16 is named, so
                // another source type is refused by persist.
                (Format::Fp16, FloatData::F16(words)) => direct::persist(format, &t.shape, DirectSource::F16(words)),
                (Format::Bf16, _) => direct::f32_to_bf16(&t.shape, &t.to_f32()?),
                // f16 and bf16 widen to f32 exactly, so persisting the widened words loses nothing.
                _ => direct::persist(format, &t.shape, DirectSource::F32(&t.to_f32()?)),
            }
        }
        Category::DirectInt | Category::BlockScaledFloat | Category::GgufBlock => Err(Error::Unsupported(format!(
            "quantize does not produce {format}: it writes q4/q5/q6/q8 (grouped_absmax, grouped_search), fp8_e4m3fn_row_bf16/fp16 (fp8_row_maxabs), bf16 and fp32"
        ))),
    }
}
