//! Random valid logical words for round-trip tests, the self-check and GPU conformance.
//!
//! Seeded and deterministic, so every run prints its seed and a failure replays exactly
//! (`NINFER_WGPU_SEED`, [`SEED_VAR`], replays any test's seed). The
//! generators mix uniform words with the edge words `criteria.md` requires: scales 0x0001 and
//! 0x7BFF, negative scales, +0 scales with zero codes, codes at the interval ends.

use crate::error::{Error, Result};
use crate::format::{CodeMapping, DirectWord, F16Fields, Format, Geometry, ScaleWord};
use crate::words::{BlockWords, DirectWords, Fp8RowWords, GroupedWords, LogicalWords, Nvfp4Words};

/// SplitMix64: tiny, fast, and good enough to pick words; not for cryptography.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `[0, n)`; `n > 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform integer in `[lo, hi]`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    /// Uniform in `[-1, 1)`, with 24 random bits.
    pub fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    }

    /// A fresh seed from the clock, for runs that print it ([`fresh_seed`] lets [`SEED_VAR`]
    /// replay one instead).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn seed_from_time() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5EED)
    }

    /// A fresh seed, for runs that print it: a browser's wasm has no clock through std (it
    /// panics), so the seed comes from `crypto.getRandomValues` instead.
    #[cfg(target_arch = "wasm32")]
    pub fn seed_from_time() -> u64 {
        getrandom::u64().unwrap_or(0x5EED)
    }
}

/// The environment variable that replays a randomized run: set to a u64, it is the seed every
/// [`fresh_seed`] returns (the tests, and `conformance` and `verify` without `--seed`).
pub const SEED_VAR: &str = "NINFER_WGPU_SEED";

/// A seed for a randomized run: [`SEED_VAR`] when it is set (a replay), else a fresh one from
/// [`Rng::seed_from_time`]. A value that is not a u64 is an error rather than a fresh seed: a
/// mistyped replay must not quietly run other inputs.
pub fn fresh_seed() -> Result<u64> {
    match std::env::var(SEED_VAR) {
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| Error::Unsupported(format!("{SEED_VAR}={text:?} is not a seed; a seed is a u64"))),
        Err(std::env::VarError::NotPresent) => Ok(Rng::seed_from_time()),
        Err(std::env::VarError::NotUnicode(text)) => {
            Err(Error::Unsupported(format!("{SEED_VAR}={text:?} is not a seed; a seed is a u64")))
        }
    }
}

/// [`fresh_seed`] for a randomized test, printed as `WHAT: seed N (replay: NINFER_WGPU_SEED=N)`
/// before anything uses it: the test harness shows a failing test's output, so every failure
/// carries the line that replays it.
pub fn test_seed(what: &str) -> Result<u64> {
    let seed = fresh_seed()?;
    println!("{what}: seed {seed} (replay: {SEED_VAR}={seed})");
    Ok(seed)
}

/// Which words a generator may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Words {
    /// Every valid word, including NaN payloads and infinities of direct formats: for codecs and
    /// bit-exact dequant.
    All,
    /// Finite values of moderate magnitude: for products, whose A32 bound needs finite sums.
    Finite,
}

/// A random binary16 scale: mostly moderate values of both signs, sometimes an edge word.
fn grouped_scale(rng: &mut Rng, words: Words, q2: bool) -> u16 {
    let edge: &[u16] = match words {
        // 0x0001: smallest subnormal; 0x7BFF: largest finite; 0x83FF: negative subnormal.
        Words::All => &[0x0001, 0x7BFF, 0xFBFF, 0x83FF, 0x0400],
        Words::Finite => &[0x0001, 0x83FF, 0x0400, 0x5BFF],
    };
    match rng.below(8) {
        0 => edge[rng.below(edge.len() as u64) as usize],
        1 if q2 => [0x0000, 0x8000][rng.below(2) as usize],
        _ => {
            // Sign, exponent 5..=20 (about 2^-10 .. 2^5), any fraction.
            let sign = (rng.below(2) as u16) << 15;
            sign | ((rng.range(5, 20) as u16) << 10) | (rng.below(1024) as u16)
        }
    }
}

/// A random E8M0 scale byte (mxfp4's `2^(e - 128)`): mostly about 2^-16 .. 2^8, sometimes an edge
/// — for codecs the two binary32-subnormal scales and the overflowing top ones, for products
/// only finite weights far from the subnormals.
fn e8m0_scale(rng: &mut Rng, words: Words) -> u8 {
    let edge: &[u8] = match words {
        Words::All => &[0, 1, 2, 254, 255],
        Words::Finite => &[100, 150],
    };
    match rng.below(8) {
        0 => edge[rng.below(edge.len() as u64) as usize],
        _ => rng.range(112, 136) as u8,
    }
}

fn direct(format: Format, shape: &[usize], kind: DirectWord, rng: &mut Rng, words: Words) -> DirectWords {
    let count: usize = shape.iter().product();
    let word = |rng: &mut Rng| -> u32 {
        match (kind, words) {
            (DirectWord::Int32, _) => rng.next_u32(),
            (DirectWord::Bf16 | DirectWord::Binary16, Words::All) => rng.next_u32() & 0xFFFF,
            (DirectWord::Binary32, Words::All) => rng.next_u32(),
            (DirectWord::Bf16, Words::Finite) => {
                ((rng.below(2) as u32) << 15) | ((rng.range(107, 147) as u32) << 7) | (rng.below(128) as u32)
            }
            // Every finite binary16 exponent, subnormals (exponent 0) and zeros included.
            (DirectWord::Binary16, Words::Finite) => {
                ((rng.below(2) as u32) << 15) | ((rng.range(0, 30) as u32) << 10) | (rng.below(1024) as u32)
            }
            (DirectWord::Binary32, Words::Finite) => {
                ((rng.below(2) as u32) << 31) | ((rng.range(107, 147) as u32) << 23) | (rng.next_u32() & 0x7F_FFFF)
            }
        }
    };
    DirectWords { format, shape: shape.to_vec(), words: (0..count).map(|_| word(rng)).collect() }
}

fn grouped(format: Format, n: usize, k: usize, rng: &mut Rng, words: Words) -> Result<GroupedWords> {
    let (group, qmin, qmax, mapping) =
        format.grouped().ok_or_else(|| Error::Words(format!("{format} is not grouped")))?;
    let q2 = mapping == CodeMapping::OffsetOne;
    let groups = k.div_ceil(group);
    let mut codes = Vec::with_capacity(n * k);
    let mut scales = Vec::with_capacity(n * groups);
    for _ in 0..n {
        for g in 0..groups {
            let len = group.min(k - g * group);
            let zero_group = !q2 && rng.below(16) == 0;
            let ends = rng.below(4) == 0;
            for _ in 0..len {
                let q = if zero_group {
                    0
                } else if ends {
                    [qmin, qmax][rng.below(2) as usize]
                } else {
                    rng.range(qmin as i64, qmax as i64) as i32
                };
                codes.push(q as i8);
            }
            scales.push(if zero_group { 0x0000 } else { grouped_scale(rng, words, q2) });
        }
    }
    Ok(GroupedWords { format, n, k, codes, scales })
}

fn nvfp4(n: usize, k: usize, divisors: usize, rng: &mut Rng, words: Words) -> Nvfp4Words {
    let codes = (0..n * k).map(|_| rng.below(16) as u8).collect();
    // Any sign-zero finite E4M3FN word: 0x00..=0x7E.
    let scales = (0..n * (k / 16)).map(|_| rng.below(0x7F) as u8).collect();
    // Moderate divisors, and now and then the extremes a divisor may legally take: a binary32
    // subnormal (2^-130) and 2^127.
    const DIVISORS: [u32; 8] =
        [0x3F80_0000, 0x4040_0000, 0x3DCC_CCCD, 0x4528_0000, 0x3A83_126F, 0x40F0_0000, 0x0008_0000, 0x7F00_0000];
    // Products need finite weights, which the extremes would overflow or flush.
    let choices = match words {
        Words::All => &DIVISORS[..],
        Words::Finite => &DIVISORS[..6],
    };
    let divisors = (0..divisors).map(|_| choices[rng.below(choices.len() as u64) as usize]).collect();
    Nvfp4Words { n, k, codes, scales, divisors }
}

fn fp8_row(format: Format, scale: ScaleWord, n: usize, k: usize, rng: &mut Rng) -> Fp8RowWords {
    let mut codes = Vec::with_capacity(n * k);
    let mut scales = Vec::with_capacity(n);
    for _ in 0..n {
        let zero_row = rng.below(16) == 0;
        for _ in 0..k {
            codes.push(if zero_row {
                [0x00, 0x80][rng.below(2) as usize]
            } else {
                // Any non-NaN word: skip 0x7F and 0xFF.
                let c = rng.below(254) as u8;
                if c >= 0x7F {
                    c + 1
                } else {
                    c
                }
            });
        }
        scales.push(match (zero_row, scale) {
            (true, _) => 0x0000,
            // Positive, finite: exponent 1..=140 for bf16 includes tiny values; 0x0001 is subnormal.
            (false, ScaleWord::Bf16) => {
                [0x0001, ((rng.range(100, 140) as u16) << 7) | rng.below(128) as u16][(rng.below(8) != 0) as usize]
            }
            (false, ScaleWord::Binary16) => {
                [0x0001, ((rng.range(5, 20) as u16) << 10) | rng.below(1024) as u16][(rng.below(8) != 0) as usize]
            }
        });
    }
    Fp8RowWords { format, n, k, codes, scales }
}

/// Random ggml blocks: random bytes with finite binary16 multipliers (the edge scales included).
fn gguf_blocks(
    format: Format,
    n: usize,
    k: usize,
    values: usize,
    bytes: usize,
    rng: &mut Rng,
    words: Words,
) -> Result<BlockWords> {
    let fields = format.gguf().ok_or_else(|| Error::Unsupported(format!("{format} is not a GGUF block format")))?.f16;
    if !k.is_multiple_of(values) {
        return Err(Error::Words(format!("{format}: K = {k} is not a multiple of {values}")));
    }
    let mut out: Vec<u8> = (0..n * k / values * bytes).map(|_| rng.next_u32() as u8).collect();
    for block in out.chunks_exact_mut(bytes) {
        match fields {
            F16Fields::At(offsets) => {
                for &at in offsets {
                    block[at..at + 2].copy_from_slice(&grouped_scale(rng, words, false).to_le_bytes());
                }
            }
            F16Fields::E8m0(at) => block[at] = e8m0_scale(rng, words),
            F16Fields::TopNibbles(at) => {
                let d = grouped_scale(rng, words, false);
                for i in 0..4 {
                    let w = u16::from_le_bytes([block[at + 2 * i], block[at + 2 * i + 1]]);
                    let w = (w & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12);
                    block[at + 2 * i..at + 2 * i + 2].copy_from_slice(&w.to_le_bytes());
                }
            }
        }
    }
    Ok(BlockWords { format, n, k, bytes: out })
}

/// Random valid logical words of `format` with logical `shape` (and nvfp4's `divisors`).
pub fn random_words(
    format: Format,
    shape: &[usize],
    divisors: usize,
    rng: &mut Rng,
    words: Words,
) -> Result<LogicalWords> {
    let matrix = || match shape {
        [n, k] => Ok((*n, *k)),
        _ => Err(Error::Words(format!("{format} words need a rank-2 shape, got {shape:?}"))),
    };
    Ok(match format.spec().geometry {
        Geometry::Direct { word, .. } => LogicalWords::Direct(direct(format, shape, word, rng, words)),
        Geometry::Grouped { .. } => {
            let (n, k) = matrix()?;
            LogicalWords::Grouped(grouped(format, n, k, rng, words)?)
        }
        Geometry::BlockScaled { .. } => {
            let (n, k) = matrix()?;
            LogicalWords::Nvfp4(nvfp4(n, k, divisors, rng, words))
        }
        Geometry::RowScaled { scale } => {
            let (n, k) = matrix()?;
            LogicalWords::Fp8Row(fp8_row(format, scale, n, k, rng))
        }
        Geometry::Block { values, bytes } => {
            let (n, k) = matrix()?;
            LogicalWords::Blocks(gguf_blocks(format, n, k, values, bytes, rng, words)?)
        }
    })
}

/// A random activation vector in [-1, 1).
pub fn random_activation(k: usize, rng: &mut Rng) -> Vec<f32> {
    (0..k).map(|_| rng.unit()).collect()
}
