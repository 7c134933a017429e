//! The scalar oracle: decodes any native tensor to binary32 exactly as the format reference
//! defines it (sections 3.1–3.4 and 6.2), and computes `y = W·x` in f64 from those exact weights.
//!
//! This is the reference every kernel is judged against, so it is written from the words' own
//! bits and the reference's equations, never from a kernel's arithmetic.

use crate::error::{Error, Result};
use crate::format::{Category, Format, Geometry, ScaleWord};
use crate::numeric::{bf16_to_f32, e2m1_to_f32, e4m3fn_to_f32, f16_to_f32};
use crate::tensor::EncodedTensor;
use crate::words::{DirectWords, Fp8RowWords, GroupedWords, LogicalWords, Nvfp4Words};

/// Decoded values: binary32 for every float-valued format, exact integers for int32.
#[derive(Debug, Clone, PartialEq)]
pub enum Dequantized {
    F32(Vec<f32>),
    I32(Vec<i32>),
}

/// Validates the tensor and decodes every element, C order.
pub fn dequant(tensor: &EncodedTensor) -> Result<Dequantized> {
    dequant_words(&tensor.decode()?)
}

/// Reconstructs values from logical words, after checking them (word counts and every rule).
pub fn dequant_words(words: &LogicalWords) -> Result<Dequantized> {
    words.validate()?;
    Ok(match words {
        LogicalWords::Direct(w) => direct(w)?,
        LogicalWords::Grouped(w) => Dequantized::F32(grouped(w)?),
        LogicalWords::Nvfp4(w) => Dequantized::F32(nvfp4(w)),
        LogicalWords::Fp8Row(w) => Dequantized::F32(fp8_row(w)?),
        // ggml's own dequantize_row_* arithmetic, in its order (src/gguf/).
        LogicalWords::Blocks(w) => Dequantized::F32(crate::gguf::dequantize_blocks(w.format, &w.bytes)?),
    })
}

fn direct(w: &DirectWords) -> Result<Dequantized> {
    Ok(match (w.format.category(), w.format.spec().geometry) {
        (Category::DirectInt, _) => Dequantized::I32(w.words.iter().map(|&u| u as i32).collect()),
        (Category::DirectFloat, Geometry::Direct { bytes: 2 }) => Dequantized::F32(w.words.iter().map(|&u| bf16_to_f32(u as u16)).collect()),
        (Category::DirectFloat, Geometry::Direct { bytes: 4 }) => Dequantized::F32(w.words.iter().map(|&u| f32::from_bits(u)).collect()),
        _ => return Err(Error::Words(format!("{} is not a direct format", w.format))),
    })
}

/// Section 6.2: `w_hat = binary32(s32 * binary32(q))`.
fn grouped(w: &GroupedWords) -> Result<Vec<f32>> {
    let (group, groups) = w.groups()?;
    let mut out = Vec::with_capacity(w.codes.len());
    for n in 0..w.n {
        for k in 0..w.k {
            let s32 = f16_to_f32(w.scales[n * groups + k / group]);
            out.push(s32 * w.codes[n * w.k + k] as f32);
        }
    }
    Ok(out)
}

/// Section 3.3: `e2m1 * e4m3fn / d_w`. The product of the two minifloats is exact in binary32,
/// so the division is the only rounding.
fn nvfp4(w: &Nvfp4Words) -> Vec<f32> {
    let groups = w.k / 16;
    let span = w.n / w.divisors.len();
    let mut out = Vec::with_capacity(w.codes.len());
    for n in 0..w.n {
        let d = f32::from_bits(w.divisors[n / span]);
        for k in 0..w.k {
            let product = e2m1_to_f32(w.codes[n * w.k + k]) * e4m3fn_to_f32(w.scales[n * groups + k / 16]);
            out.push(product / d);
        }
    }
    out
}

/// Section 3.4: `binary32(c32 * s32)` with the row's bf16 or binary16 multiplier.
fn fp8_row(w: &Fp8RowWords) -> Result<Vec<f32>> {
    let Geometry::RowScaled { scale } = w.format.spec().geometry else {
        return Err(Error::Words(format!("{} is not a row-scaled format", w.format)));
    };
    let mut out = Vec::with_capacity(w.codes.len());
    for n in 0..w.n {
        let s32 = match scale {
            ScaleWord::Bf16 => bf16_to_f32(w.scales[n]),
            ScaleWord::Binary16 => f16_to_f32(w.scales[n]),
        };
        out.extend(w.codes[n * w.k..(n + 1) * w.k].iter().map(|&c| e4m3fn_to_f32(c) * s32));
    }
    Ok(out)
}

/// The reference product and, per output, `Σ_k |W[n,k] x[k]|` for the A32 bound.
#[derive(Debug, Clone, PartialEq)]
pub struct MatvecReference {
    pub y: Vec<f64>,
    pub abs: Vec<f64>,
}

/// `y[n] = Σ_k W[n,k] x[k]` accumulated in f64 from the exact f32 weights.
pub fn matvec(tensor: &EncodedTensor, x: &[f32]) -> Result<MatvecReference> {
    let (n, k) = match tensor.shape() {
        [n, k] => (*n, *k),
        s => return Err(Error::Unsupported(format!("matvec needs a rank-2 [N, K] tensor, got shape {s:?}"))),
    };
    if tensor.format() == Format::Int32 {
        return Err(Error::Unsupported("int32 has no matvec: integer tensors are indexes, not weights".into()));
    }
    if x.len() != k {
        return Err(Error::Shape { layout: tensor.layout().name(), rule: "x has K elements", detail: format!("K = {k}, x has {}", x.len()) });
    }
    let w = match dequant(tensor)? {
        Dequantized::F32(w) => w,
        Dequantized::I32(_) => return Err(Error::Unsupported("int32 has no matvec".into())),
    };
    Ok(matvec_f32(&w, n, k, x))
}

/// The f64 product of `[n, k]` decoded weights (k > 0, checked by the caller's shape rules).
fn matvec_f32(w: &[f32], n: usize, k: usize, x: &[f32]) -> MatvecReference {
    let mut y = Vec::with_capacity(n);
    let mut abs = Vec::with_capacity(n);
    for row in w.chunks_exact(k).take(n) {
        let (mut s, mut a) = (0f64, 0f64);
        for (&wv, &xv) in row.iter().zip(x) {
            let p = wv as f64 * xv as f64;
            s += p;
            a += p.abs();
        }
        y.push(s);
        abs.push(a);
    }
    MatvecReference { y, abs }
}
