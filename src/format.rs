//! The closed format registry: one row per numeric format of `numeric-formats.txt`.
//!
//! Every fact about a format lives in [`Format::spec`]; everything else (parsing, the layout
//! check, bits per weight, the WGSL constants) is derived from that one match. A new format is a
//! new variant, and the build then breaks everywhere a decision about it is needed.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Declares [`Format`] and [`Format::ALL`] from one list, so the list and its length cannot
/// disagree and no count of formats is written anywhere.
macro_rules! registry {
    ($($variant:ident),+ $(,)?) => {
        /// A registered persistent numeric format.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Format {
            $($variant),+
        }

        impl Format {
            /// How many formats the registry holds.
            pub const COUNT: usize = [$(stringify!($variant)),+].len();
            /// Every registered format, in the reference's order.
            pub const ALL: [Format; Format::COUNT] = [$(Format::$variant),+];
        }
    };
}

registry! {
    Bf16,
    Fp32,
    Int32,
    Q2G64Fp16,
    Q4G64Fp16,
    Q5G64Fp16,
    Q6G64Fp16,
    Q8G32Fp16,
    T2G128Fp16,
    Nvfp4,
    Fp8E4m3fnRowBf16,
    Fp8E4m3fnRowFp16,
    GgufQ8_0,
    GgufQ4_0,
    GgufQ5_0,
    GgufQ2_0,
    GgufQ2K,
    GgufQ3K,
    GgufQ4K,
    GgufQ5K,
    GgufQ6K,
    GgufIq2Xxs,
    GgufIq2Xs,
    GgufIq3Xxs,
    GgufIq1S,
    GgufIq4Nl,
    GgufIq3S,
    GgufIq2S,
    GgufIq4Xs,
    GgufIq1M,
    Fp16,
    GgufQ4_1,
    GgufQ5_1,
    GgufMxfp4,
    GgufTq1_0,
    GgufTq2_0,
}

/// The five categories of the reference, with GGUF blocks as the sixth family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// One logical floating-point word per element (bf16, fp32).
    DirectFloat,
    /// One logical two's-complement word per element (int32).
    DirectInt,
    /// Signed integer codes with one binary16 scale per K-group.
    Grouped,
    /// E2M1 codes, an E4M3FN scale per 16 values and FP32 divisors (nvfp4).
    BlockScaledFloat,
    /// E4M3FN codes with one multiplier per row.
    RowScaledFloat,
    /// ggml's quantized blocks, kept byte for byte.
    GgufBlock,
}

/// How a grouped format maps its stored unsigned word to a signed code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeMapping {
    /// Two's complement of the code width (q4, q5, q6, q8, t2).
    TwosComplement,
    /// `q = u - 1` (q2's GSQ grid).
    OffsetOne,
}

/// The type of a row multiplier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScaleWord {
    Bf16,
    Binary16,
}

/// What one word of a direct format is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DirectWord {
    /// bfloat16: the high half of a binary32 word.
    Bf16,
    /// IEEE binary16 (GGUF's F16).
    Binary16,
    Binary32,
    Int32,
}

impl DirectWord {
    pub const fn bytes(self) -> usize {
        match self {
            DirectWord::Bf16 | DirectWord::Binary16 => 2,
            DirectWord::Binary32 | DirectWord::Int32 => 4,
        }
    }
}

/// Geometry and code domain, by category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Geometry {
    /// One word of `bytes` bytes per element (`word.bytes()`).
    Direct { bytes: usize, word: DirectWord },
    /// `group` values per binary16 scale along K; legal signed codes `[qmin, qmax]`; the reference
    /// encoder's denominator is `qmax`.
    Grouped { group: usize, qmin: i32, qmax: i32, mapping: CodeMapping },
    /// `group` E2M1 values per E4M3FN scale along K.
    BlockScaled { group: usize },
    /// One multiplier word per row.
    RowScaled { scale: ScaleWord },
    /// ggml blocks of `values` elements stored in `bytes` bytes.
    Block { values: usize, bytes: usize },
}

/// Where a ggml block keeps its binary16 multipliers (ggml's block structs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum F16Fields {
    /// Whole binary16 words at these byte offsets.
    At(&'static [usize]),
    /// iq1_m: one binary16 spread over the top nibbles of four u16 words from this offset.
    TopNibbles(usize),
    /// mxfp4: no binary16 field; the block's scale is an E8M0 exponent byte at this offset.
    E8m0(usize),
}

/// The i-quant grid a ggml type's decoders look their values up in (ggml's `*_grid` tables,
/// kept in `src/gguf/tables.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grid {
    Iq2Xxs,
    Iq2Xs,
    Iq2S,
    Iq3Xxs,
    Iq3S,
    /// iq1_s and iq1_m share ggml's `iq1s_grid`.
    Iq1S,
}

/// In which order a one-column product decodes and multiplies a row block: each row's chunk
/// decoded and multiplied before the next is decoded, or every row decoded first. Which is
/// faster depends on how a type's codes come out of its words; the measurements that chose
/// each type's order are in docs/performance.md#matvec-row-order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatvecOrder {
    RowAtATime,
    RowsTogether,
}

/// How a ggml type's A8 codes come out of its blocks (`shaders/codecs/gguf_codes.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum A8Reader {
    /// One chunk at a time: `codes_<type>` and `affine8_<type>`.
    Chunk,
    /// Two sub-blocks that share words at a time: `pair_<type>` (blocks of 64 values or more).
    Pair,
}

/// Every per-type fact about one ggml block type, in one row: a new ggml type is a row here
/// plus its decoders (the oracle's in `src/gguf/`, the WGSL ones named after `ggml_name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GgufType {
    /// ggml's `enum ggml_type` value.
    pub id: u32,
    /// ggml's own name (`q4_K`, as llama.cpp's tools take it); the WGSL decoders are named after
    /// its lower case: `levels_<name>`, `affine_<name>` and, for A8, `codes_<name>` +
    /// `affine8_<name>` or `pair_<name>`.
    pub ggml_name: &'static str,
    /// Values and bytes per block.
    pub values: usize,
    pub bytes: usize,
    pub f16: F16Fields,
    /// Whether the affine map subtracts an offset (`a q - b`: ggml's "min" k-quants).
    pub offset: bool,
    pub grid: Option<Grid>,
    pub a8: A8Reader,
    /// The A8 one-column kernel's row order (A32 is always row at a time).
    pub a8_matvec: MatvecOrder,
}

/// One row of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatSpec {
    pub name: &'static str,
    pub category: Category,
    /// Logical code (or word) width in bits; `None` for ggml blocks, whose codes vary per block.
    pub code_bits: Option<u32>,
    pub geometry: Geometry,
    /// The ggml type, for the formats GGUF files carry as blocks.
    pub gguf: Option<GgufType>,
}

impl Format {
    /// The registry row. This match is the single source of truth for format facts.
    pub const fn spec(self) -> FormatSpec {
        use A8Reader::{Chunk, Pair};
        use CodeMapping::*;
        use Format::*;
        use MatvecOrder::{RowAtATime, RowsTogether};
        const fn direct(name: &'static str, category: Category, word: DirectWord) -> FormatSpec {
            let bytes = word.bytes();
            FormatSpec {
                name,
                category,
                code_bits: Some(8 * bytes as u32),
                geometry: Geometry::Direct { bytes, word },
                gguf: None,
            }
        }
        const fn grouped(
            name: &'static str,
            bits: u32,
            group: usize,
            qmin: i32,
            qmax: i32,
            mapping: CodeMapping,
        ) -> FormatSpec {
            FormatSpec {
                name,
                category: Category::Grouped,
                code_bits: Some(bits),
                geometry: Geometry::Grouped { group, qmin, qmax, mapping },
                gguf: None,
            }
        }
        const fn gguf(name: &'static str, t: GgufType) -> FormatSpec {
            FormatSpec {
                name,
                category: Category::GgufBlock,
                code_bits: None,
                geometry: Geometry::Block { values: t.values, bytes: t.bytes },
                gguf: Some(t),
            }
        }
        // ggml's types: id, name, values and bytes per block, binary16 fields, offset, grid,
        // A8 reader, A8 matvec order.
        #[allow(clippy::too_many_arguments)]
        const fn ggml(
            id: u32,
            ggml_name: &'static str,
            values: usize,
            bytes: usize,
            f16: F16Fields,
            offset: bool,
            grid: Option<Grid>,
            a8: A8Reader,
            a8_matvec: MatvecOrder,
        ) -> GgufType {
            GgufType { id, ggml_name, values, bytes, f16, offset, grid, a8, a8_matvec }
        }
        const D: F16Fields = F16Fields::At(&[0]);
        const DM: F16Fields = F16Fields::At(&[0, 2]);
        match self {
            Bf16 => direct("bf16", Category::DirectFloat, DirectWord::Bf16),
            Fp32 => direct("fp32", Category::DirectFloat, DirectWord::Binary32),
            Int32 => direct("int32", Category::DirectInt, DirectWord::Int32),
            // GGUF's F16 (ggml type 1): docs/ggml-formats.md#fp16.
            Fp16 => direct("fp16", Category::DirectFloat, DirectWord::Binary16),
            Q2G64Fp16 => grouped("q2_g64_fp16", 2, 64, -1, 2, OffsetOne),
            Q4G64Fp16 => grouped("q4_g64_fp16", 4, 64, -8, 7, TwosComplement),
            Q5G64Fp16 => grouped("q5_g64_fp16", 5, 64, -16, 15, TwosComplement),
            Q6G64Fp16 => grouped("q6_g64_fp16", 6, 64, -32, 31, TwosComplement),
            Q8G32Fp16 => grouped("q8_g32_fp16", 8, 32, -127, 127, TwosComplement),
            T2G128Fp16 => grouped("t2_g128_fp16", 2, 128, -1, 1, TwosComplement),
            Nvfp4 => FormatSpec {
                name: "nvfp4",
                category: Category::BlockScaledFloat,
                code_bits: Some(4),
                geometry: Geometry::BlockScaled { group: 16 },
                gguf: None,
            },
            Fp8E4m3fnRowBf16 => FormatSpec {
                name: "fp8_e4m3fn_row_bf16",
                category: Category::RowScaledFloat,
                code_bits: Some(8),
                geometry: Geometry::RowScaled { scale: ScaleWord::Bf16 },
                gguf: None,
            },
            Fp8E4m3fnRowFp16 => FormatSpec {
                name: "fp8_e4m3fn_row_fp16",
                category: Category::RowScaledFloat,
                code_bits: Some(8),
                geometry: Geometry::RowScaled { scale: ScaleWord::Binary16 },
                gguf: None,
            },
            GgufQ8_0 => gguf("gguf_q8_0", ggml(8, "q8_0", 32, 34, D, false, None, Chunk, RowsTogether)),
            GgufQ4_0 => gguf("gguf_q4_0", ggml(2, "q4_0", 32, 18, D, false, None, Chunk, RowsTogether)),
            GgufQ5_0 => gguf("gguf_q5_0", ggml(6, "q5_0", 32, 22, D, false, None, Chunk, RowAtATime)),
            GgufQ2_0 => gguf("gguf_q2_0", ggml(42, "q2_0", 64, 18, D, false, None, Chunk, RowAtATime)),
            GgufQ2K => {
                gguf("gguf_q2_k", ggml(10, "q2_K", 256, 84, F16Fields::At(&[80, 82]), true, None, Pair, RowAtATime))
            }
            GgufQ3K => {
                gguf("gguf_q3_k", ggml(11, "q3_K", 256, 110, F16Fields::At(&[108]), false, None, Pair, RowAtATime))
            }
            GgufQ4K => gguf("gguf_q4_k", ggml(12, "q4_K", 256, 144, DM, true, None, Pair, RowAtATime)),
            GgufQ5K => gguf("gguf_q5_k", ggml(13, "q5_K", 256, 176, DM, true, None, Pair, RowAtATime)),
            GgufQ6K => {
                gguf("gguf_q6_k", ggml(14, "q6_K", 256, 210, F16Fields::At(&[208]), false, None, Pair, RowAtATime))
            }
            GgufIq2Xxs => {
                gguf("gguf_iq2_xxs", ggml(16, "iq2_xxs", 256, 66, D, false, Some(Grid::Iq2Xxs), Pair, RowAtATime))
            }
            GgufIq2Xs => {
                gguf("gguf_iq2_xs", ggml(17, "iq2_xs", 256, 74, D, false, Some(Grid::Iq2Xs), Pair, RowAtATime))
            }
            GgufIq3Xxs => {
                gguf("gguf_iq3_xxs", ggml(18, "iq3_xxs", 256, 98, D, false, Some(Grid::Iq3Xxs), Pair, RowAtATime))
            }
            GgufIq1S => gguf("gguf_iq1_s", ggml(19, "iq1_s", 256, 50, D, false, Some(Grid::Iq1S), Pair, RowAtATime)),
            GgufIq4Nl => gguf("gguf_iq4_nl", ggml(20, "iq4_nl", 32, 18, D, false, None, Chunk, RowAtATime)),
            GgufIq3S => gguf("gguf_iq3_s", ggml(21, "iq3_s", 256, 110, D, false, Some(Grid::Iq3S), Pair, RowAtATime)),
            GgufIq2S => gguf("gguf_iq2_s", ggml(22, "iq2_s", 256, 82, D, false, Some(Grid::Iq2S), Pair, RowAtATime)),
            GgufIq4Xs => gguf("gguf_iq4_xs", ggml(23, "iq4_xs", 256, 136, D, false, None, Chunk, RowAtATime)),
            // docs/ggml-formats.md: ggml's types past the format reference's 18.
            GgufQ4_1 => gguf("gguf_q4_1", ggml(3, "q4_1", 32, 20, DM, true, None, Chunk, RowsTogether)),
            GgufQ5_1 => gguf("gguf_q5_1", ggml(7, "q5_1", 32, 24, DM, true, None, Chunk, RowAtATime)),
            GgufMxfp4 => {
                gguf("gguf_mxfp4", ggml(39, "mxfp4", 32, 17, F16Fields::E8m0(0), false, None, Chunk, RowAtATime))
            }
            GgufTq1_0 => {
                gguf("gguf_tq1_0", ggml(34, "tq1_0", 256, 54, F16Fields::At(&[52]), false, None, Chunk, RowAtATime))
            }
            GgufTq2_0 => {
                gguf("gguf_tq2_0", ggml(35, "tq2_0", 256, 66, F16Fields::At(&[64]), false, None, Pair, RowAtATime))
            }
            GgufIq1M => gguf(
                "gguf_iq1_m",
                ggml(29, "iq1_m", 256, 56, F16Fields::TopNibbles(48), false, Some(Grid::Iq1S), Pair, RowAtATime),
            ),
        }
    }

    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    pub const fn category(self) -> Category {
        self.spec().category
    }

    /// Full-group logical bits per weight: `b + 16/G` for grouped formats (section 6.3), the word
    /// width for direct formats, `4 + 8/16` for nvfp4, 8 for fp8 rows (the per-row multiplier is
    /// amortised over K and excluded, as partial-group overhead is), and `8 * bytes / values` for
    /// ggml blocks. Never the exact artifact size.
    pub fn bits_per_weight(self) -> f64 {
        let spec = self.spec();
        match spec.geometry {
            Geometry::Direct { bytes, .. } => 8.0 * bytes as f64,
            Geometry::Grouped { group, .. } => spec.code_bits.unwrap_or(0) as f64 + 16.0 / group as f64,
            Geometry::BlockScaled { group } => 4.0 + 8.0 / group as f64,
            Geometry::RowScaled { .. } => 8.0,
            Geometry::Block { values, bytes } => 8.0 * bytes as f64 / values as f64,
        }
    }

    /// The ggml block type of a gguf_* format.
    pub const fn gguf(self) -> Option<GgufType> {
        self.spec().gguf
    }

    /// The format whose ggml type id is `id`, if it is registered as blocks.
    pub fn from_ggml_type(id: u32) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.gguf().map(|t| t.id) == Some(id))
    }

    /// The grouped-format facts `(group, qmin, qmax, mapping)`; `None` for other categories.
    pub fn grouped(self) -> Option<(usize, i32, i32, CodeMapping)> {
        match self.spec().geometry {
            Geometry::Grouped { group, qmin, qmax, mapping } => Some((group, qmin, qmax, mapping)),
            Geometry::Direct { .. }
            | Geometry::BlockScaled { .. }
            | Geometry::RowScaled { .. }
            | Geometry::Block { .. } => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;
    /// Canonical names only: artifacts store the complete canonical names, and "Q4" is prose.
    fn from_str(s: &str) -> Result<Self> {
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| Error::UnknownName {
            kind: "format",
            name: s.to_string(),
            valid: Format::ALL.map(|f| f.name()).join(", "),
        })
    }
}
