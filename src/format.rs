//! The closed format registry: one row per numeric format of `numeric-formats.txt`.
//!
//! Every fact about a format lives in [`Format::spec`]; everything else (parsing, the layout
//! check, bits per weight, the WGSL constants) is derived from that one match. A new format is a
//! new variant, and the build then breaks everywhere a decision about it is needed.

use crate::error::{Error, Result};
use crate::layout::Layout;
use std::fmt;
use std::str::FromStr;

/// A registered persistent numeric format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
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

/// Geometry and code domain, by category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Geometry {
    /// One word of `bytes` bytes per element.
    Direct { bytes: usize },
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

/// One row of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatSpec {
    pub name: &'static str,
    pub category: Category,
    /// Logical code (or word) width in bits; `None` for ggml blocks, whose codes vary per block.
    pub code_bits: Option<u32>,
    pub geometry: Geometry,
    /// ggml's `enum ggml_type` value, for the formats GGUF files carry.
    pub ggml_type: Option<u32>,
    /// The layouts this format may be stored in (layouts.md's closed pair table).
    pub layouts: &'static [Layout],
}

impl Format {
    /// Every registered format, in the reference's order.
    pub const ALL: [Format; 30] = [
        Format::Bf16,
        Format::Fp32,
        Format::Int32,
        Format::Q2G64Fp16,
        Format::Q4G64Fp16,
        Format::Q5G64Fp16,
        Format::Q6G64Fp16,
        Format::Q8G32Fp16,
        Format::T2G128Fp16,
        Format::Nvfp4,
        Format::Fp8E4m3fnRowBf16,
        Format::Fp8E4m3fnRowFp16,
        Format::GgufQ8_0,
        Format::GgufQ4_0,
        Format::GgufQ5_0,
        Format::GgufQ2_0,
        Format::GgufQ2K,
        Format::GgufQ3K,
        Format::GgufQ4K,
        Format::GgufQ5K,
        Format::GgufQ6K,
        Format::GgufIq2Xxs,
        Format::GgufIq2Xs,
        Format::GgufIq3Xxs,
        Format::GgufIq1S,
        Format::GgufIq4Nl,
        Format::GgufIq3S,
        Format::GgufIq2S,
        Format::GgufIq4Xs,
        Format::GgufIq1M,
    ];

    /// The registry row. This match is the single source of truth for format facts.
    pub const fn spec(self) -> FormatSpec {
        use CodeMapping::*;
        use Format::*;
        const DIRECT: &[Layout] = &[Layout::ContiguousLeV1];
        const SPLIT: &[Layout] = &[Layout::RowSplitK128V1];
        const GGUF: &[Layout] = &[Layout::GgufBlocksV1];
        const fn direct(name: &'static str, category: Category, bytes: usize) -> FormatSpec {
            FormatSpec {
                name,
                category,
                code_bits: Some(8 * bytes as u32),
                geometry: Geometry::Direct { bytes },
                ggml_type: None,
                layouts: DIRECT,
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
                ggml_type: None,
                layouts: SPLIT,
            }
        }
        const fn gguf(name: &'static str, ggml_type: u32, values: usize, bytes: usize) -> FormatSpec {
            FormatSpec {
                name,
                category: Category::GgufBlock,
                code_bits: None,
                geometry: Geometry::Block { values, bytes },
                ggml_type: Some(ggml_type),
                layouts: GGUF,
            }
        }
        match self {
            Bf16 => direct("bf16", Category::DirectFloat, 2),
            Fp32 => direct("fp32", Category::DirectFloat, 4),
            Int32 => direct("int32", Category::DirectInt, 4),
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
                ggml_type: None,
                layouts: &[Layout::BlockScaleK16M128x4V1],
            },
            Fp8E4m3fnRowBf16 => FormatSpec {
                name: "fp8_e4m3fn_row_bf16",
                category: Category::RowScaledFloat,
                code_bits: Some(8),
                geometry: Geometry::RowScaled { scale: ScaleWord::Bf16 },
                ggml_type: None,
                layouts: &[Layout::RowScaleV1],
            },
            Fp8E4m3fnRowFp16 => FormatSpec {
                name: "fp8_e4m3fn_row_fp16",
                category: Category::RowScaledFloat,
                code_bits: Some(8),
                geometry: Geometry::RowScaled { scale: ScaleWord::Binary16 },
                ggml_type: None,
                layouts: &[Layout::RowInterleavedV1],
            },
            GgufQ8_0 => gguf("gguf_q8_0", 8, 32, 34),
            GgufQ4_0 => gguf("gguf_q4_0", 2, 32, 18),
            GgufQ5_0 => gguf("gguf_q5_0", 6, 32, 22),
            GgufQ2_0 => gguf("gguf_q2_0", 42, 64, 18),
            GgufQ2K => gguf("gguf_q2_k", 10, 256, 84),
            GgufQ3K => gguf("gguf_q3_k", 11, 256, 110),
            GgufQ4K => gguf("gguf_q4_k", 12, 256, 144),
            GgufQ5K => gguf("gguf_q5_k", 13, 256, 176),
            GgufQ6K => gguf("gguf_q6_k", 14, 256, 210),
            GgufIq2Xxs => gguf("gguf_iq2_xxs", 16, 256, 66),
            GgufIq2Xs => gguf("gguf_iq2_xs", 17, 256, 74),
            GgufIq3Xxs => gguf("gguf_iq3_xxs", 18, 256, 98),
            GgufIq1S => gguf("gguf_iq1_s", 19, 256, 50),
            GgufIq4Nl => gguf("gguf_iq4_nl", 20, 32, 18),
            GgufIq3S => gguf("gguf_iq3_s", 21, 256, 110),
            GgufIq2S => gguf("gguf_iq2_s", 22, 256, 82),
            GgufIq4Xs => gguf("gguf_iq4_xs", 23, 256, 136),
            GgufIq1M => gguf("gguf_iq1_m", 29, 256, 56),
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
            Geometry::Direct { bytes } => 8.0 * bytes as f64,
            Geometry::Grouped { group, .. } => spec.code_bits.unwrap_or(0) as f64 + 16.0 / group as f64,
            Geometry::BlockScaled { group } => 4.0 + 8.0 / group as f64,
            Geometry::RowScaled { .. } => 8.0,
            Geometry::Block { values, bytes } => 8.0 * bytes as f64 / values as f64,
        }
    }

    /// Whether `layout` is one this format may be stored in.
    pub fn allows(self, layout: Layout) -> bool {
        self.spec().layouts.contains(&layout)
    }

    /// The format whose ggml type id is `id`, if it is registered.
    pub fn from_ggml_type(id: u32) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.spec().ggml_type == Some(id))
    }

    /// Checks that this format may use `layout`, naming the allowed layouts otherwise.
    pub fn check_layout(self, layout: Layout) -> Result<()> {
        if self.allows(layout) {
            return Ok(());
        }
        Err(Error::FormatLayout {
            format: self.name(),
            layout: layout.name(),
            allowed: self.spec().layouts.first().map(|l| l.name()).unwrap_or("no layout"),
        })
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
