//! The scalar oracle: decodes any native tensor to binary32 exactly as the format reference
//! defines it (sections 3.1–3.4 and 6.2), and computes `y = W·x` in f64 from those exact weights.
//!
//! This is the reference every kernel is judged against, so it is written from the words' own
//! bits and the reference's equations, never from a kernel's arithmetic.

use crate::error::{Error, Result};
use crate::format::{Category, DirectWord, Geometry, ScaleWord};
use crate::numeric::{bf16_to_f32, binary16_to_f32, e2m1_to_f32, e4m3fn_to_f32, f16_to_f32};
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
    let Geometry::Direct { word, .. } = w.format.spec().geometry else {
        return Err(Error::Words(format!("{} is not a direct format", w.format)));
    };
    Ok(match word {
        DirectWord::Int32 => Dequantized::I32(w.words.iter().map(|&u| u as i32).collect()),
        DirectWord::Bf16 => Dequantized::F32(w.words.iter().map(|&u| bf16_to_f32(u as u16)).collect()),
        DirectWord::Binary16 => Dequantized::F32(w.words.iter().map(|&u| binary16_to_f32(u as u16)).collect()),
        DirectWord::Binary32 => Dequantized::F32(w.words.iter().map(|&u| f32::from_bits(u)).collect()),
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

/// The reference product and, per output, `Σ_k |W[n,k] x[k]|` for the A32 bound. For a
/// matmul both hold J columns of N values back to back.
#[derive(Debug, Clone, PartialEq)]
pub struct MatvecReference {
    pub y: Vec<f64>,
    pub abs: Vec<f64>,
}

fn matrix(tensor: &EncodedTensor) -> Result<(usize, usize)> {
    match tensor.shape() {
        [n, k] => Ok((*n, *k)),
        s => Err(Error::Unsupported(format!("matmul needs a rank-2 [N, K] tensor, got shape {s:?}"))),
    }
}

/// The exact f32 weights of a rank-2 float tensor.
fn float_weights(tensor: &EncodedTensor) -> Result<Vec<f32>> {
    match tensor.format().category() {
        Category::DirectInt => {
            return Err(Error::Unsupported("int32 has no matmul: integer tensors are indexes, not weights".into()))
        }
        Category::DirectFloat
        | Category::Grouped
        | Category::BlockScaledFloat
        | Category::RowScaledFloat
        | Category::GgufBlock => {}
    }
    match dequant(tensor)? {
        Dequantized::F32(w) => Ok(w),
        Dequantized::I32(_) => Err(Error::Unsupported("int32 has no matmul".into())),
    }
}

/// `y[n] = Σ_k W[n,k] x[k]` accumulated in f64 from the exact f32 weights.
pub fn matvec(tensor: &EncodedTensor, x: &[f32]) -> Result<MatvecReference> {
    matmul(tensor, x, 1)
}

/// `Y = W X` for `columns` activation vectors of K values back to back, each column
/// accumulated in f64 from the exact f32 weights; J columns of N outputs back to back.
pub fn matmul(tensor: &EncodedTensor, xs: &[f32], columns: usize) -> Result<MatvecReference> {
    let (n, k) = matrix(tensor)?;
    // The oracle takes any number of columns; the GPU's limit is the GPU's (gpu::MAX_COLUMNS).
    if columns == 0 {
        return Err(Error::Unsupported("matmul takes at least one activation column, got 0".into()));
    }
    if k.checked_mul(columns) != Some(xs.len()) {
        return Err(Error::Shape {
            layout: tensor.layout().name(),
            rule: "x holds J columns of K values",
            detail: format!("J = {columns}, K = {k}: expected {} values, got {}", k * columns, xs.len()),
        });
    }
    let w = float_weights(tensor)?;
    let mut out = MatvecReference { y: Vec::with_capacity(n * columns), abs: Vec::with_capacity(n * columns) };
    for x in xs.chunks_exact(k.max(1)).take(columns) {
        let r = matvec_f32(&w, n, k, x);
        out.y.extend(r.y);
        out.abs.extend(r.abs);
    }
    Ok(out)
}

/// The decoded rows `rows` of a rank-2 tensor, in request order (repeats allowed): exactly the
/// values [`dequant`] gives for those rows.
pub fn gather(tensor: &EncodedTensor, rows: &[u32]) -> Result<Dequantized> {
    let (n, k) = match tensor.shape() {
        [n, k] => (*n, *k),
        s => return Err(Error::Unsupported(format!("gather needs a rank-2 [N, K] tensor, got shape {s:?}"))),
    };
    if let Some(&bad) = rows.iter().find(|&&r| r as usize >= n) {
        return Err(Error::Shape {
            layout: tensor.layout().name(),
            rule: "gather rows are < N",
            detail: format!("row index {bad} but N = {n}"),
        });
    }
    fn pick<T: Copy>(all: &[T], k: usize, rows: &[u32]) -> Vec<T> {
        rows.iter().flat_map(|&r| all[r as usize * k..(r as usize + 1) * k].iter().copied()).collect()
    }
    match tensor.geometry() {
        // nvfp4's layout selects whole 128-row tiles of one divisor, from a decode of the whole
        // payload: picking from the table's decode costs no more.
        crate::layout::PayloadGeometry::BlockScale(_) => Ok(match dequant(tensor)? {
            Dequantized::F32(v) => Dequantized::F32(pick(&v, k, rows)),
            Dequantized::I32(v) => Dequantized::I32(pick(&v, k, rows)),
        }),
        // Every other layout copies the requested rows' words into a tensor of their own, which
        // alone is decoded: three rows of a 262144-row table decode three rows, not the table.
        _ if rows.is_empty() => Ok(match tensor.format().category() {
            crate::format::Category::DirectInt => Dequantized::I32(Vec::new()),
            _ => Dequantized::F32(Vec::new()),
        }),
        _ => dequant(&tensor.gather_rows(rows)?),
    }
}

/// The f64 product of `[n, k]` decoded weights (k > 0, checked by the caller's shape rules).
fn matvec_f32(w: &[f32], n: usize, k: usize, x: &[f32]) -> MatvecReference {
    let mut y = Vec::with_capacity(n);
    let mut abs = Vec::with_capacity(n);
    if k == 0 {
        return MatvecReference { y: vec![0.0; n], abs: vec![0.0; n] };
    }
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

/// What A8 arithmetic computes, exactly: the exact weights times ggml's q8_1 form of each
/// activation column ([`q8_1::quantize`](crate::gguf::q8_1::quantize), `d · code` per value),
/// in f64. A kernel differs from it only by its f32 rounding, which is what lets conformance
/// check the integer codes themselves (criteria.md's A8 bound alone is loose enough to hide a
/// wrong code).
#[derive(Debug, Clone)]
pub struct A8Model {
    pub y: Vec<f64>,
    /// Per output: `Σ_k (|w_k| + m_k) |x̃_k|`, with m_k the largest |w| of k's 16-value half —
    /// what bounds the magnitude of every f32 intermediate (`a Σ code x̃ - b Σ x̃` per half).
    pub magnitude: Vec<f64>,
    /// Per output: what a device's own division may move — `Σ |w_k| d_k` over activation values
    /// near a rounding tie, and `Σ |w_k| |code_k| Δd` over blocks whose scale lies near a
    /// binary16 rounding boundary (see [`A8_DIVISION_ULPS`]).
    pub slack: Vec<f64>,
}

/// How far, in binary32 ULPs of the value, a device's q8_1 step may land from the reference's:
/// WGSL allows 2.5 ULP for each of its two divisions (`d = amax / 127`, `1 / d`) and the code's
/// product `x · (1 / d)` rounds once more, 5.5 in all; 8 leaves a margin. Within that distance of
/// a rounding tie a code may round the other way (seen on SwiftShader: x · (1 / d) = -121.5
/// exactly on the CPU, just above it there), and within it of a binary16 boundary the stored
/// scale may be the neighbouring binary16.
pub const A8_DIVISION_ULPS: f64 = 8.0;

/// The A8 model of `Y = W X` (see [`A8Model`]). A K that is not whole q8_1 blocks (grouped
/// formats) has its last block quantized with zeros after it, as the GPU's activation columns
/// are zero-padded to whole chunks; the weights there are zero.
pub fn matmul_a8_model(tensor: &EncodedTensor, xs: &[f32], columns: usize) -> Result<A8Model> {
    use crate::gguf::q8_1;
    let (n, k) = matrix(tensor)?;
    if xs.len() != k * columns {
        return Err(Error::Unsupported(format!("A8 model: {} activation values for J = {columns}, K = {k}", xs.len())));
    }
    let w = float_weights(tensor)?;
    // The largest |w| of each 16-value half of each row.
    let halves = k.div_ceil(16);
    let half_max: Vec<f64> = w
        .chunks_exact(k.max(1))
        .flat_map(|row| row.chunks(16).map(|h| h.iter().fold(0f64, |m, v| m.max(v.abs() as f64))))
        .collect();
    // Relative reach of a device's rounding, with binary32's ULP at most 2^-23 of a value.
    let reach = A8_DIVISION_ULPS * 2f64.powi(-23);
    let mut model = A8Model { y: Vec::new(), magnitude: Vec::new(), slack: Vec::new() };
    for x in xs.chunks_exact(k.max(1)).take(columns) {
        let mut x = x.to_vec();
        x.resize(k.div_ceil(q8_1::QK8_1) * q8_1::QK8_1, 0.0);
        let blocks = q8_1::quantize(&x)?;
        let mut xq = Vec::with_capacity(k);
        // Per value: the change a code rounded the other way makes (d), and the change the
        // neighbouring binary16 scale makes (|code| Δd); zero where neither can happen.
        let mut near_tie = Vec::with_capacity(k);
        let mut scale_step = Vec::with_capacity(k);
        for (b, block) in blocks.iter().zip(x.chunks_exact(q8_1::QK8_1)) {
            let d = crate::numeric::f16_to_f32(b.d) as f64;
            let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
            let id = if amax != 0.0 { 127.0 / amax as f64 } else { 0.0 };
            let dd = binary16_neighbour_step(amax as f64 / 127.0, reach);
            for (&q, &v) in b.qs.iter().zip(block) {
                xq.push(q as f64 * d);
                let t = v as f64 * id;
                let tie = ((t - t.trunc()).abs() - 0.5).abs() <= (t.abs() * reach).max(1e-5);
                near_tie.push(if tie { d } else { 0.0 });
                scale_step.push((q as f64).abs() * dd);
            }
        }
        for (r, row) in w.chunks_exact(k.max(1)).take(n).enumerate() {
            let (mut y, mut m, mut s) = (0f64, 0f64, 0f64);
            for (i, &wv) in row.iter().enumerate() {
                let wv = wv as f64;
                y += wv * xq[i];
                m += (wv.abs() + half_max[r * halves + i / 16]) * xq[i].abs();
                s += wv.abs() * (near_tie[i] + scale_step[i]);
            }
            model.y.push(y);
            model.magnitude.push(m);
            model.slack.push(s);
        }
    }
    Ok(model)
}

/// The gap between the binary16 values a scale `d` may round to when a device computes it up to
/// `reach` (relative) away from `d`: zero when the whole range rounds to one binary16.
fn binary16_neighbour_step(d: f64, reach: f64) -> f64 {
    let (lo, hi) = (d * (1.0 - reach), d * (1.0 + reach));
    let round = |v: f64| crate::numeric::f16_to_f32(crate::numeric::f32_to_f16(v as f32)) as f64;
    round(hi) - round(lo)
}
