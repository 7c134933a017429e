//! Shader assembly: constants generated from the registry, the parameter struct generated from
//! [`params`](super::params), `common.wgsl`, the layout family's codec, the shared weight-word
//! rules and the op. The registry is the only place format facts live; every WGSL constant below
//! is written from it by an exhaustive match, never by hand.

use crate::error::{Error, Result};
use crate::format::{Category, CodeMapping, Format, Geometry, ScaleWord};
use crate::layout::{row_split, Layout};
use std::fmt::Write;

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const CODEC_CONTIGUOUS: &str = include_str!("../../shaders/codecs/contiguous.wgsl");
const CODEC_ROW_SPLIT: &str = include_str!("../../shaders/codecs/row_split.wgsl");
const CODEC_BLOCK_SCALE: &str = include_str!("../../shaders/codecs/block_scale.wgsl");
const CODEC_FP8_ROWS: &str = include_str!("../../shaders/codecs/fp8_rows.wgsl");
const CODEC_GGUF_BLOCKS: &str = include_str!("../../shaders/codecs/gguf_blocks.wgsl");
const OP_WEIGHTS: &str = include_str!("../../shaders/ops/weights.wgsl");
const OP_DEQUANT: &str = include_str!("../../shaders/ops/dequant.wgsl");
const OP_GATHER: &str = include_str!("../../shaders/ops/gather.wgsl");
const CODEC_GGUF_CODES: &str = include_str!("../../shaders/codecs/gguf_codes.wgsl");
const CODEC_ROW_SPLIT_CODES: &str = include_str!("../../shaders/codecs/row_split_codes.wgsl");
const CODEC_BLOCK_SCALE_CODES: &str = include_str!("../../shaders/codecs/block_scale_codes.wgsl");
const OP_MATMUL: &str = include_str!("../../shaders/ops/matmul.wgsl");
const OP_MATMUL_A32: &str = include_str!("../../shaders/ops/matmul_a32.wgsl");
const OP_MATMUL_A8: &str = include_str!("../../shaders/ops/matmul_a8.wgsl");
const OP_DOT4_PACKED: &str = include_str!("../../shaders/ops/dot4_packed.wgsl");
const OP_DOT4_EMULATED: &str = include_str!("../../shaders/ops/dot4_emulated.wgsl");
const OP_QUANTIZE_Q8_1: &str = include_str!("../../shaders/ops/quantize_q8_1.wgsl");
const OP_MATMUL_SUBGROUP: &str = include_str!("../../shaders/ops/matmul_subgroup.wgsl");
pub(crate) const PROBE: &str = include_str!("../../shaders/ops/probe.wgsl");
pub(crate) const PROBE_SUBGROUP: &str = include_str!("../../shaders/ops/probe_subgroup.wgsl");

/// Values per chunk, the unit every codec decodes (`common.wgsl`).
pub const CHUNK: usize = 32;
/// Invocations per dequant/gather workgroup (`ops/*.wgsl`).
pub const WORDS_WG: usize = 64;
/// The product kernels' geometry, written into every product module as WGSL constants
/// (`product_geometry`): MATMUL_WG invocations per workgroup, `product_lanes` of them per block of
/// ROW_BLOCK rows (each invocation takes every lanes-th chunk of all ROW_BLOCK rows), so
/// `matmul_rows` rows per workgroup. Matvec's row-at-a-time kernels take blocks of twice the
/// rows with twice the lanes ([`RowBlock`]), the same rows per workgroup.
pub const MATMUL_WG: u32 = 64;
pub const ROW_BLOCK: u32 = 4;
/// Lanes of a row block that walk one contiguous run of its chunks together (lane `r` of a run
/// takes every MATMUL_RUN-th chunk of the run from its r-th). CPU drivers run 8 invocations as
/// one SIMD program and the runs one after another; with the row block's lanes interleaved
/// over the whole row, each SIMD program jumped a page per step and no prefetcher followed it
/// (lavapipe, bf16 4096x14336: the samples sat on the loads' cache misses). A GPU still reads
/// 8 consecutive chunks per run: whole sectors.
pub const MATMUL_RUN: u32 = 8;
/// Lanes per row block. Kernels with a grid copy it to workgroup memory once per workgroup, so
/// they take 32 lanes (each walks twice the chunks of 64, and the copy weighs half); measured
/// on lavapipe, 4096x14336, interleaved with 64 lanes: iq2_xs A8 75 -> 63 ms, iq3_s A32 112 -> 70,
/// A8 86 -> 78, 16 lanes no faster again. The others take 8, one run (MATMUL_RUN): with 64, a row
/// of K = 4096 gave each lane one or two chunks (q4_K's pairs: one), so each SIMD program of a
/// CPU driver touched its rows once and no stream formed. Measured on lavapipe against 64 lanes,
/// medians of 3-4 alternating rounds, A8 / A32: at 14336x4096 q4_K J=1 0.79 / 0.75, J=8 0.70 /
/// 0.75, q3_K J=8 0.73 / 0.83, q6_K J=8 0.81 / 0.84, q8_0 J=8 0.83 / 0.76, bf16 J=8 0.82; at
/// 4096x14336 mostly 0.76-1.02 (q4_0 A8 J=1 0.68; q4_K A8 J=8 1.24 from noisy rounds); at
/// 16384x14336 0.90-1.00 (docs/performance-history.md).
/// The subgroup variant needs the adapter's largest subgroup to fit one block (capability.rs):
/// lavapipe's 8 fits every family; where subgroups are wider only the grid kernels take it.
pub fn product_lanes(format: Format) -> u32 {
    if has_grid(format) {
        32
    } else {
        8
    }
}

/// How matvec's kernel (one column, [`Columns::One`]) orders a lane step's rows: each row's
/// chunk decoded and multiplied before the next is decoded, or all ROW_BLOCK rows decoded first
/// and then multiplied (the general kernel's order, which reuses the decoded rows across its
/// columns). With four rows' decoded chunks live at once, a CPU driver spills most of them.
/// Measured on lavapipe, 4096x14336, medians of 4 alternating rounds, row at a time against
/// rows together: A32 0.61-0.83 for every family (q4_0 0.62, q4_K 0.74, iq2_xs 0.65, bf16 0.79,
/// fp32 0.83, q4_g64_fp16 0.63, nvfp4 0.80); A8 0.60-0.91 for most (q4_K 0.87 and at 14336x4096
/// 0.60, iq3_s 0.70, iq2_s 0.67, iq4_nl 0.67, q5_0 0.77), 0.96-1.04 for iq2_xxs and q2_K, but
/// q4_0 1.20-1.50 and q8_0 0.97-1.11 slower: their codes are whole words masked, nothing is
/// spilled, and the four rows' loads lose their overlap. The native A8 kernels (the same
/// comparison, medians of 4 rounds): q4_g64_fp16 0.78, q6_g64_fp16 0.81, nvfp4 0.74, and
/// q8_g32_fp16, whose codes are whole aligned words, 0.76 (6 rounds) and at 14336x4096 0.60.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatvecOrder {
    RowAtATime,
    RowsTogether,
}

pub fn matvec_order(format: Format, op: Op) -> MatvecOrder {
    let a8 = match op {
        Op::Matmul => return MatvecOrder::RowAtATime,
        // No matvec: the constant is unused.
        Op::Dequant | Op::Gather => return MatvecOrder::RowsTogether,
        Op::MatmulA8 => format,
    };
    match a8 {
        Format::GgufQ8_0 | Format::GgufQ4_0 => MatvecOrder::RowsTogether,
        Format::Q2G64Fp16
        | Format::Q8G32Fp16
        | Format::Q4G64Fp16
        | Format::Q5G64Fp16
        | Format::Q6G64Fp16
        | Format::T2G128Fp16
        | Format::Nvfp4 => MatvecOrder::RowAtATime,
        Format::GgufQ5_0
        | Format::GgufQ2_0
        | Format::GgufIq4Nl
        | Format::GgufIq4Xs
        | Format::GgufQ2K
        | Format::GgufQ3K
        | Format::GgufQ4K
        | Format::GgufQ5K
        | Format::GgufQ6K
        | Format::GgufIq2Xxs
        | Format::GgufIq2Xs
        | Format::GgufIq2S
        | Format::GgufIq3Xxs
        | Format::GgufIq3S
        | Format::GgufIq1S
        | Format::GgufIq1M => MatvecOrder::RowAtATime,
        // No A8 kernel (capability.rs, format_rule): the constant is unused.
        Format::Bf16 | Format::Fp32 | Format::Int32 | Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => {
            MatvecOrder::RowsTogether
        }
    }
}

/// The rows of one row block and the lanes that share them in one product kernel. A lane loads
/// each activation chunk once for its block's rows, so taller blocks load less activation per
/// weight; every load with a per-invocation address is a per-lane loop on lavapipe (Mesa
/// 25.0.7; README, "Why four types stay under 2×, counted"), and in matvec a lane's activation
/// share was 1.4 shader instructions per weight in A8 and about 3.7 in A32 with four rows. The
/// row-at-a-time order keeps one row's decoded chunk live, so eight rows cost a private array
/// of eight sums and no spills. Rows together keep every row's chunk live: four in general,
/// eight (two quads) in the grid families' several-column A8 kernels, where each activation
/// pair serves every row and the spilled pairs cost a vector store and load each. Counted at
/// J = 8 (A8, 1024x14336, per weight over the eight columns), four rows against eight: iq1_s
/// 21.64 -> 17.17, iq3_s 23.84 -> 19.97, iq2_xxs 21.44 -> 17.26. Timed head to head on
/// lavapipe they run about as fast as four rows (iq1_s 42.6 against 42.2 ms, medians of six
/// alternating rounds, 4096x14336; README): kept for the count, the measure for GPUs with
/// little ALU per byte. The K-quants' counts fell as much (q4_K 18.37 -> 14.17, q6_K 26.52 ->
/// 22.34), but their eight-row kernels doubled lavapipe's compile time (conformance of q6_K 20
/// -> 39 s, q4_K 15 -> 30 s; iq1_s 9 -> 15 s), which is most of a CI run, for types already at
/// 4.7-9.7x at n = 8: they stay at four. Lanes double with the rows, so rows per workgroup
/// (`matmul_rows`, which the planner uses without knowing the kernel) stay the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowBlock {
    pub rows: u32,
    pub lanes: u32,
}

impl RowBlock {
    pub fn for_kernel(format: Format, op: Op, columns: Columns) -> RowBlock {
        let base = RowBlock { rows: ROW_BLOCK, lanes: product_lanes(format) };
        let tall = RowBlock { rows: 2 * base.rows, lanes: 2 * base.lanes };
        match (columns, matvec_order(format, op), op, has_grid(format)) {
            (Columns::One, MatvecOrder::RowAtATime, _, _) => tall,
            (Columns::One, MatvecOrder::RowsTogether, _, _) => base,
            (Columns::UpToMax, _, Op::MatmulA8, true) => tall,
            (Columns::UpToMax, _, Op::MatmulA8, false)
            | (Columns::UpToMax, _, Op::Matmul | Op::Dequant | Op::Gather, _) => base,
        }
    }
}

/// Rows per product workgroup for `format`.
pub fn matmul_rows(format: Format) -> usize {
    (MATMUL_WG / product_lanes(format) * ROW_BLOCK) as usize
}

/// The largest i-quant grid (u32 words) a product kernel copies to workgroup memory: 6 KiB, so
/// with the reduction's (`partial`, at most 8 KiB, or the subgroup variant's `subgroup_sums`, at
/// most 4 KiB) it stays within WebGPU's default 16 KiB. Every grid fits since the 8-byte entries
/// are packed (`gguf_grid`; iq2_s's and iq1's, the largest, are 1024 words).
pub const GRID_WORKGROUP_WORDS: usize = 1536;
/// The most activation columns one matmul takes (each column costs 1 KiB of workgroup memory:
/// `partial` in `ops/matmul.wgsl` holds 8 × 256 sums).
pub const MAX_COLUMNS: usize = 8;

/// The activation columns a product kernel is built for: matvec (one column) has a kernel of
/// its own, where the column loops are gone at compile time. With the column count a run-time
/// bound, a CPU driver keeps every decoded chunk of a row block live across the column loop and
/// spills it (lavapipe, 4096x14336, one column, medians of four rounds alternating with the
/// one-kernel build: q4_K A8 23.5 -> 19.7 ms, q8_0 A8 36.2 -> 30.4, iq2_s A8 35.8 -> 29.5,
/// bf16 A32 46.4 -> 41.5). Two to [`MAX_COLUMNS`] columns share the other kernel: unrolling
/// each count multiplied compile time on CPU drivers (ops/matmul.wgsl).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Columns {
    One,
    UpToMax,
}

impl Columns {
    pub const ALL: [Columns; 2] = [Columns::One, Columns::UpToMax];

    /// The kernel that serves `count` columns (1..=MAX_COLUMNS, checked by the caller) with a
    /// variant that is (`default_variant`) or is not the one the platform runs when none is
    /// named (`capability::best_variant`). Matvec's own kernel is built for the default variant
    /// only: a variant asked for by name (a comparison, a test) serves one column with the
    /// general kernel, which computes the same sums. So conformance, which runs every variant
    /// at J = 1, compiles one more kernel per product op rather than one per variant (on
    /// lavapipe two instead of five per gguf type; CPU drivers' compile time is most of a run).
    pub fn for_request(count: usize, default_variant: bool) -> Columns {
        match (count, default_variant) {
            (1, true) => Columns::One,
            _ => Columns::UpToMax,
        }
    }

    /// The most columns the kernel's accumulators and reduction slots hold.
    pub fn capacity(self) -> usize {
        match self {
            Columns::One => 1,
            Columns::UpToMax => MAX_COLUMNS,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Columns::One => "j1",
            Columns::UpToMax => "j8",
        }
    }
}

/// An operation a kernel implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Every weight's exact word, C order.
    Dequant,
    /// `Y = W X` for 1..=8 activation columns (one column: matvec), A32 profile: exact
    /// weights times the f32 activation.
    Matmul,
    /// `Y = W X`, A8 profile: the activation quantized on the GPU to ggml's q8_1, integer dot
    /// products with the weights' int8 codes, f32 accumulation (ggml blocks, the grouped
    /// formats and nvfp4: the weights that are integer codes times a scale).
    MatmulA8,
    /// The exact words of requested rows, in request order.
    Gather,
}

/// Which optional platform features a kernel uses: `Workgroup` reduces through workgroup memory
/// (for A8: with `dot4I8Packed`), `Subgroup` with subgroup operations where offered, and
/// `EmulatedDot` is A8 without WGSL's packed_4x8_integer_dot_product (the portable fallback,
/// tested on every platform).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    Workgroup,
    Subgroup,
    EmulatedDot,
}

/// The WGSL codec of each layout family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    Contiguous,
    RowSplit,
    BlockScale,
    Fp8Rows,
    GgufBlocks,
}

/// What a format applies once per row, after a row's sum (or to each dequantized weight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowRule {
    /// Nothing: the chunk's affine map is the whole weight.
    None,
    /// fp8 rows: one multiplier per row (bf16 or binary16).
    Multiplier,
    /// nvfp4: an FP32 divisor per stacked source matrix.
    Divisor,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Dequant, Op::Matmul, Op::MatmulA8, Op::Gather];
    pub fn name(self) -> &'static str {
        match self {
            Op::Dequant => "dequant",
            Op::Matmul => "matmul",
            Op::MatmulA8 => "matmul_a8",
            Op::Gather => "gather",
        }
    }

    /// Whether the op multiplies by activation columns (either profile).
    pub fn is_product(self) -> bool {
        match self {
            Op::Matmul | Op::MatmulA8 => true,
            Op::Dequant | Op::Gather => false,
        }
    }
}

/// The arithmetic a product uses (criteria.md): a user's choice, `--profile a32|a8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Profile {
    A32,
    A8,
}

impl Profile {
    pub const ALL: [Profile; 2] = [Profile::A32, Profile::A8];

    pub fn name(self) -> &'static str {
        match self {
            Profile::A32 => "a32",
            Profile::A8 => "a8",
        }
    }

    pub fn parse(s: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == s)
    }

    /// The op that computes a product in this profile.
    pub fn op(self) -> Op {
        match self {
            Profile::A32 => Op::Matmul,
            Profile::A8 => Op::MatmulA8,
        }
    }
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Workgroup, Variant::Subgroup, Variant::EmulatedDot];
    pub fn name(self) -> &'static str {
        match self {
            Variant::Workgroup => "workgroup",
            Variant::Subgroup => "subgroup",
            Variant::EmulatedDot => "emulated-dot",
        }
    }
}

impl RowRule {
    pub const ALL: [RowRule; 3] = [RowRule::None, RowRule::Multiplier, RowRule::Divisor];

    pub fn for_format(format: Format) -> RowRule {
        match format.category() {
            Category::DirectFloat | Category::DirectInt | Category::Grouped | Category::GgufBlock => RowRule::None,
            Category::RowScaledFloat => RowRule::Multiplier,
            Category::BlockScaledFloat => RowRule::Divisor,
        }
    }

    fn flag(self) -> &'static str {
        match self {
            RowRule::None => "ROW_NONE",
            RowRule::Multiplier => "ROW_MULTIPLIER",
            RowRule::Divisor => "ROW_DIVISOR",
        }
    }
}

impl Codec {
    /// Every format has a codec: the family of the layouts it may be stored in.
    pub fn for_format(format: Format) -> Codec {
        match format.spec().layouts[0] {
            Layout::ContiguousLeV1 => Codec::Contiguous,
            Layout::RowSplitK128V1 => Codec::RowSplit,
            Layout::BlockScaleK16M128x4V1 => Codec::BlockScale,
            Layout::RowScaleV1 | Layout::RowInterleavedV1 => Codec::Fp8Rows,
            Layout::GgufBlocksV1 => Codec::GgufBlocks,
        }
    }

    fn source(self) -> &'static str {
        match self {
            Codec::Contiguous => CODEC_CONTIGUOUS,
            Codec::RowSplit => CODEC_ROW_SPLIT,
            Codec::BlockScale => CODEC_BLOCK_SCALE,
            Codec::Fp8Rows => CODEC_FP8_ROWS,
            Codec::GgufBlocks => CODEC_GGUF_BLOCKS,
        }
    }

    /// The codec's A8 part (`ops/matmul_a8.wgsl`'s codec interface: int8 codes per chunk), for
    /// the codecs whose weights are integer codes times a scale (nvfp4's E2M1 values are
    /// half-integers); capability.rs, format_rule, keeps every other codec from an A8 kernel.
    fn a8_source(self) -> Result<&'static str> {
        match self {
            Codec::GgufBlocks => Ok(CODEC_GGUF_CODES),
            Codec::RowSplit => Ok(CODEC_ROW_SPLIT_CODES),
            Codec::BlockScale => Ok(CODEC_BLOCK_SCALE_CODES),
            Codec::Contiguous | Codec::Fp8Rows => {
                Err(Error::Unsupported(format!("the {self:?} codec has no A8 (int8 code) reader")))
            }
        }
    }
}

/// Whether an A8 kernel goes two chunks at a time (`ops/matmul_a8.wgsl`, A8_PAIRS): ggml's blocks
/// of 64 values or more, whose pair decoders load the words two sub-blocks share once. Grouped
/// codes share no words between chunks, so they go a chunk at a time.
pub fn a8_pairs(format: Format) -> bool {
    match format.spec().geometry {
        Geometry::Block { values, .. } => values >= 64,
        Geometry::Direct { .. }
        | Geometry::Grouped { .. }
        | Geometry::BlockScaled { .. }
        | Geometry::RowScaled { .. } => false,
    }
}

/// Whether the format's affine map subtracts an offset (`a q - b`, ggml's "min" k-quants).
pub fn has_offset(format: Format) -> bool {
    use Format::*;
    match format {
        GgufQ2K | GgufQ4K | GgufQ5K => true,
        GgufQ8_0 | GgufQ4_0 | GgufQ5_0 | GgufQ2_0 | GgufIq4Nl | GgufQ3K | GgufQ6K => false,
        GgufIq2Xxs | GgufIq2Xs | GgufIq2S | GgufIq3Xxs | GgufIq3S | GgufIq1S | GgufIq1M | GgufIq4Xs => false,
        Bf16 | Fp32 | Int32 | Q2G64Fp16 | Q4G64Fp16 | Q5G64Fp16 | Q6G64Fp16 | Q8G32Fp16 | T2G128Fp16 => false,
        Nvfp4 | Fp8E4m3fnRowBf16 | Fp8E4m3fnRowFp16 => false,
    }
}

/// The flag `codecs/gguf_blocks.wgsl` tests for a ggml block format: `IS_` and its ggml name
/// (`gguf_q4_k` → `IS_Q4_K`), or `None` for formats outside the family.
pub fn gguf_flag(format: Format) -> Option<String> {
    match format.category() {
        Category::GgufBlock => Some(format!("IS_{}", format.name().trim_start_matches("gguf_").to_uppercase())),
        Category::DirectFloat
        | Category::DirectInt
        | Category::Grouped
        | Category::BlockScaledFloat
        | Category::RowScaledFloat => None,
    }
}

/// A compiled kernel's identity: what the pipeline cache is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelKey {
    pub format: Format,
    pub op: Op,
    pub variant: Variant,
    /// Products only: dequant and gather take no columns and are always `Columns::One`.
    pub columns: Columns,
}

impl KernelKey {
    /// The kernel of `op` with `columns` (products; dequant and gather have one kernel).
    pub fn new(format: Format, op: Op, variant: Variant, columns: Columns) -> KernelKey {
        let columns = match op {
            Op::Matmul | Op::MatmulA8 => columns,
            Op::Dequant | Op::Gather => Columns::One,
        };
        KernelKey { format, op, variant, columns }
    }

    pub fn label(&self) -> String {
        match self.op {
            Op::Matmul | Op::MatmulA8 => {
                format!("{}/{}/{}/{}", self.format, self.op.name(), self.variant.name(), self.columns.name())
            }
            Op::Dequant | Op::Gather => format!("{}/{}/{}", self.format, self.op.name(), self.variant.name()),
        }
    }

    pub fn entry_point(&self) -> &'static str {
        match (self.op, self.variant) {
            (Op::Dequant, _) => "dequant",
            (Op::Gather, _) => "gather",
            (Op::Matmul | Op::MatmulA8, Variant::Workgroup | Variant::EmulatedDot) => "matmul",
            (Op::Matmul | Op::MatmulA8, Variant::Subgroup) => "matmul_subgroup",
        }
    }
}

/// The levels an 8-byte grid entry's values take: ggml's iq2 grids hold 0x08, 0x19 and 0x2b, its
/// iq1s_grid the int8 bytes -1, 0 and 1. A level's index is what the device grid stores.
const IQ2_GRID_LEVELS: [u8; 3] = [0x08, 0x19, 0x2b];
const IQ1_GRID_LEVELS: [u8; 3] = [0xff, 0x00, 0x01];

/// How an 8-byte grid entry is stored over its levels' indices (codecs/gguf_blocks.wgsl,
/// grid_level_indices; generated as GRID_NIBBLES).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryBits {
    /// One word per entry, value v's index in the nibble at bit 8 (v % 4) + 4 (v / 4): the
    /// indices of values 0..3 and 4..7 are then the word masked, one operation each. For the
    /// iq2 grids, which fit workgroup memory so (iq2_s: 1024 words).
    Nibbles,
    /// 16 bits per entry, value v's index at bits 2v, entry e in half e % 2 of word e / 2: a
    /// quarter of ggml's bytes, which every grid needs to fit (iq1s_grid: 2048 entries).
    Pairs,
}

/// ggml's 8-byte grid entries stored as codecs/gguf_blocks.wgsl reads them (`EntryBits`). A byte
/// outside `levels` would store as index 3, which no decoder maps back: `packed_grids_are_lossless`
/// proves every table is inside its levels.
fn pack_grid(grid: &[u64], levels: [u8; 3], bits: EntryBits) -> Vec<u32> {
    let entry = |e: u64| {
        e.to_le_bytes().iter().enumerate().fold(0u32, |word, (v, byte)| {
            let index = levels.iter().position(|l| l == byte).unwrap_or(3) as u32;
            word | match bits {
                EntryBits::Nibbles => index << (8 * (v % 4) + 4 * (v / 4)),
                EntryBits::Pairs => index << (2 * v),
            }
        })
    };
    match bits {
        EntryBits::Nibbles => grid.iter().map(|&e| entry(e)).collect(),
        EntryBits::Pairs => {
            grid.chunks(2).map(|pair| pair.iter().rev().fold(0, |word, &e| word << 16 | entry(e))).collect()
        }
    }
}

/// Where a format's grid comes from: iq3's 4-byte entries as they are, the 8-byte ones packed
/// over their levels (`pack_grid`).
enum GridSource {
    Words(&'static [u32]),
    Packed(&'static [u64], [u8; 3], EntryBits),
}

/// The grid an i-quant kernel reads from plane1, as u32 words: ggml's tables from
/// `gguf::tables`, iq3's 4-byte entries as they are and the 8-byte ones packed (`pack_grid`).
pub fn gguf_grid(format: Format) -> Option<Vec<u32>> {
    grid_source(format).map(|source| match source {
        GridSource::Words(words) => words.to_vec(),
        GridSource::Packed(grid, levels, bits) => pack_grid(grid, levels, bits),
    })
}

/// Whether `format`'s grid entries are stored one per word in nibbles (`EntryBits::Nibbles`).
fn grid_nibbles(format: Format) -> bool {
    matches!(grid_source(format), Some(GridSource::Packed(_, _, EntryBits::Nibbles)))
}

/// Whether `format`'s kernels bind a grid (without building it).
pub fn has_grid(format: Format) -> bool {
    grid_source(format).is_some()
}

fn grid_source(format: Format) -> Option<GridSource> {
    use crate::gguf::tables::*;
    match format {
        Format::GgufIq2Xxs => Some(GridSource::Packed(&IQ2XXS_GRID, IQ2_GRID_LEVELS, EntryBits::Nibbles)),
        Format::GgufIq2Xs => Some(GridSource::Packed(&IQ2XS_GRID, IQ2_GRID_LEVELS, EntryBits::Nibbles)),
        Format::GgufIq2S => Some(GridSource::Packed(&IQ2S_GRID, IQ2_GRID_LEVELS, EntryBits::Nibbles)),
        Format::GgufIq3Xxs => Some(GridSource::Words(&IQ3XXS_GRID)),
        Format::GgufIq3S => Some(GridSource::Words(&IQ3S_GRID)),
        Format::GgufIq1S | Format::GgufIq1M => Some(GridSource::Packed(&IQ1S_GRID, IQ1_GRID_LEVELS, EntryBits::Pairs)),
        Format::GgufQ8_0
        | Format::GgufQ4_0
        | Format::GgufQ5_0
        | Format::GgufQ2_0
        | Format::GgufIq4Nl
        | Format::GgufIq4Xs => None,
        Format::GgufQ2K | Format::GgufQ3K | Format::GgufQ4K | Format::GgufQ5K | Format::GgufQ6K => None,
        Format::Bf16
        | Format::Fp32
        | Format::Int32
        | Format::Q2G64Fp16
        | Format::Q4G64Fp16
        | Format::Q5G64Fp16
        | Format::Q6G64Fp16
        | Format::Q8G32Fp16
        | Format::T2G128Fp16 => None,
        Format::Nvfp4 | Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => None,
    }
}

/// The kernel's WGSL constants, written from the registry.
pub fn constants(key: KernelKey) -> Result<String> {
    let format = key.format;
    let mut s = format!("// {}: constants generated from the format registry (src/gpu/kernels.rs).\n", key.label());
    let w = |e: std::fmt::Error| Error::Unsupported(format!("writing {format}'s constants: {e}"));
    let rule = RowRule::for_format(format);
    for r in RowRule::ALL {
        writeln!(s, "const {}: bool = {};", r.flag(), r == rule).map_err(w)?;
    }
    let direct = matches!(format.category(), Category::DirectFloat | Category::DirectInt);
    writeln!(s, "const LEVELS_ARE_WORDS: bool = {direct};\nconst HAS_OFFSET: bool = {};", has_offset(format))
        .map_err(w)?;
    writeln!(s, "const COMPUTED_NAN: u32 = {:#x}u;", crate::gguf::COMPUTED_NAN).map_err(w)?;
    match format.spec().geometry {
        Geometry::Direct { bytes } => writeln!(s, "const WORD_BYTES: u32 = {bytes}u;").map_err(w)?,
        Geometry::Grouped { group, mapping, .. } => {
            let p = row_split::plane_spec(format)
                .ok_or_else(|| Error::Unsupported(format!("{format} has no row_split plane spec")))?;
            let base_bits = 8 * p.base_bytes / group;
            let high_bits = 8 * p.high_bytes / group;
            let offset_one = match mapping {
                CodeMapping::OffsetOne => true,
                CodeMapping::TwosComplement => false,
            };
            writeln!(s, "const GROUP: u32 = {group}u;\nconst CODE_BITS: u32 = {}u;\nconst BASE_BITS: u32 = {base_bits}u;\nconst HIGH_BITS: u32 = {high_bits}u;\nconst OFFSET_ONE: bool = {offset_one};", p.code_bits).map_err(w)?
        }
        Geometry::BlockScaled { .. } => {}
        Geometry::RowScaled { scale } => {
            let bf16 = match scale {
                ScaleWord::Bf16 => true,
                ScaleWord::Binary16 => false,
            };
            writeln!(s, "const SCALE_BF16: bool = {bf16};").map_err(w)?
        }
        Geometry::Block { values, bytes } => {
            writeln!(s, "const BLOCK_VALUES: u32 = {values}u;\nconst BLOCK_BYTES: u32 = {bytes}u;").map_err(w)?;
            // Products copy a grid that fits to workgroup memory (codecs/gguf_blocks.wgsl).
            let grid = gguf_grid(format).map_or(0, |g| g.len());
            let in_workgroup = key.op.is_product() && grid > 0 && grid <= GRID_WORKGROUP_WORDS;
            writeln!(
                s,
                "const GRID_WORDS: u32 = {grid}u;\nconst GRID_IN_WORKGROUP: bool = {in_workgroup};\nconst GRID_WG_WORDS: u32 = {}u;\nconst GRID_NIBBLES: bool = {};",
                if in_workgroup { grid } else { 1 },
                grid_nibbles(format)
            )
            .map_err(w)?;
            // One flag per ggml type of the registry, exactly one true.
            for other in Format::ALL {
                if let Some(flag) = gguf_flag(other) {
                    writeln!(s, "const {flag}: bool = {};", other == format).map_err(w)?;
                }
            }
        }
    }
    s.push_str(&super::params::wgsl());
    Ok(s)
}

/// The product kernels' geometry as WGSL constants (see [`product_lanes`] and [`Columns`]).
/// KERNEL_COLUMNS and SUM_VECS size the column accumulators (ops/matmul.wgsl's Sums: ROW_QUARTERS
/// vec4 per column); PARTIAL_SLOTS sizes `partial` (ops/matmul.wgsl: a sum per column, row of a
/// four-row reduction pass and invocation); SUBGROUP_SLOTS sizes `subgroup_sums` (ops/matmul_subgroup.wgsl: per column and row,
/// one per subgroup, of at least 4 invocations).
fn product_geometry(block: RowBlock, columns: Columns, order: MatvecOrder) -> String {
    let RowBlock { rows: row_block, lanes } = block;
    let rows = MATMUL_WG / lanes * row_block;
    let quarters = row_block / 4;
    let columns = columns.capacity() as u32;
    let row_at_a_time = match order {
        MatvecOrder::RowAtATime => true,
        MatvecOrder::RowsTogether => false,
    };
    format!(
        "const MATMUL_WG: u32 = {MATMUL_WG}u;\nconst MATMUL_LANES: u32 = {lanes}u;\nconst MATMUL_RUN: u32 = {MATMUL_RUN}u;\nconst ROW_BLOCK: u32 = {row_block}u;\nconst ROW_QUARTERS: u32 = {quarters}u;\nconst MATMUL_ROWS: u32 = {rows}u;\nconst KERNEL_COLUMNS: u32 = {columns}u;\nconst SUM_VECS: u32 = {}u;\nconst MATVEC_ROW_AT_A_TIME: bool = {row_at_a_time};\nconst PARTIAL_SLOTS: u32 = {}u;\nconst SUBGROUP_SLOTS: u32 = {}u;\n",
        columns * quarters,
        columns * 4 * MATMUL_WG,
        columns * row_block * (MATMUL_WG / 4)
    )
}

/// The complete WGSL module for one kernel.
pub fn assemble(key: KernelKey) -> Result<String> {
    // No `enable subgroups;` line here: see [`for_device`].
    let mut s = constants(key)?;
    // The capability table keeps every combination below from being built where it is not
    // supported; the variant of an op without alternatives changes nothing in its source.
    let codec = Codec::for_format(key.format);
    let op: Vec<&str> = match (key.op, key.variant) {
        (Op::Dequant, _) => vec![OP_WEIGHTS, OP_DEQUANT],
        (Op::Gather, _) => vec![OP_WEIGHTS, OP_GATHER],
        (Op::Matmul, Variant::Workgroup | Variant::EmulatedDot) => vec![OP_MATMUL_A32, OP_MATMUL],
        (Op::Matmul, Variant::Subgroup) => vec![OP_MATMUL_A32, OP_MATMUL, OP_MATMUL_SUBGROUP],
        (Op::MatmulA8, Variant::Workgroup) => vec![codec.a8_source()?, OP_DOT4_PACKED, OP_MATMUL_A8, OP_MATMUL],
        (Op::MatmulA8, Variant::Subgroup) => {
            vec![codec.a8_source()?, OP_DOT4_PACKED, OP_MATMUL_A8, OP_MATMUL, OP_MATMUL_SUBGROUP]
        }
        (Op::MatmulA8, Variant::EmulatedDot) => vec![codec.a8_source()?, OP_DOT4_EMULATED, OP_MATMUL_A8, OP_MATMUL],
    };
    if key.op.is_product() {
        let block = RowBlock::for_kernel(key.format, key.op, key.columns);
        s.push_str(&product_geometry(block, key.columns, matvec_order(key.format, key.op)));
    }
    if key.op == Op::MatmulA8 {
        s.push_str(&format!("const A8_PAIRS: bool = {};\n", a8_pairs(key.format)));
    }
    for part in [COMMON, codec.source()].iter().chain(&op) {
        s.push('\n');
        s.push_str(part);
    }
    Ok(s)
}

/// The A8 activation kernel (`ops/quantize_q8_1.wgsl`): format-independent, one per device.
pub fn quantize_q8_1_source() -> String {
    format!("// quantize_q8_1\n{}\n{COMMON}\n{OP_QUANTIZE_Q8_1}", super::params::wgsl())
}

/// Words per chunk of the A8 activation (`ops/matmul_a8.wgsl`): 8 of codes, d, two sums, 0.
pub const Q8_1_CHUNK_WORDS: usize = 12;

/// A module as the device's compiler takes it. In a browser, wgpu's WebGPU backend hands WGSL
/// to the browser's own compiler, which requires `enable subgroups;` before subgroup builtins;
/// naga (every native backend) refuses that directive and enables them through the device's
/// SUBGROUP feature instead.
pub fn for_device(source: String, uses_subgroups: bool) -> String {
    match (cfg!(target_arch = "wasm32"), uses_subgroups) {
        (true, true) => format!("enable subgroups;\n{source}"),
        _ => source,
    }
}

/// The probe modules: (name, WGSL, needs subgroups).
pub fn probe_sources() -> Vec<(&'static str, String, bool)> {
    vec![("subnormal", PROBE.to_string(), false), ("subgroup_layout", subgroup_probe_source(), true)]
}

/// The subgroup-layout probe, which checks subgroup sizes against the products' MATMUL_WG.
pub(crate) fn subgroup_probe_source() -> String {
    format!(
        "{}{PROBE}\n{PROBE_SUBGROUP}",
        product_geometry(RowBlock { rows: ROW_BLOCK, lanes: MATMUL_WG }, Columns::One, MatvecOrder::RowsTogether)
    )
}

#[cfg(test)]
#[path = "kernels_tests.rs"]
mod tests;
