//! The op registry: what a kernel computes (`Op`), with which optional features (`Variant`),
//! for how many columns (`Columns`), from which codec (`Codec`), and the key that names one
//! compiled kernel.

use crate::format::{Category, Format};
use crate::layout::Layout;

/// The most activation columns one matmul takes (each column costs 1 KiB of workgroup memory:
/// `partial` in `shaders/ops/matmul.wgsl` holds 8 × 256 sums).
pub const MAX_COLUMNS: usize = 8;
/// Columns per workgroup of the tiled kernel, each weight decoded once per tile. The tile's
/// activation chunk takes TILE_COLUMNS × 128 bytes of workgroup memory (8 KiB), which beside the
/// largest i-quant grid (6 KiB) fits WebGPU's 16 KiB.
pub const TILE_COLUMNS: u32 = 64;

/// The activation columns a product kernel is built for: matvec (one column) has a kernel of
/// its own, where the column loops are gone at compile time. With the column count a run-time
/// bound, a CPU driver keeps every decoded chunk of a row block live across the column loop and
/// spills it (docs/performance.md#kernel-geometry). Two to [`MAX_COLUMNS`] columns share the
/// other kernel: unrolling each count multiplied compile time on CPU drivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Columns {
    One,
    UpToMax,
    /// Many columns: the tiled kernel, a weight decoded once per [`TILE_COLUMNS`] columns.
    Tiled,
    /// The tiled kernel as CPU drivers take A32 products of two or more columns
    /// (`capability::tiled_columns`): eight rows an invocation instead of four, so each
    /// activation step a SIMD program loads and shuffles serves twice the rows; half the
    /// invocations take no rows, so a workgroup's rows, the planner's and the one-column path's
    /// stay as [`Columns::Tiled`]'s (docs/performance.md#eight-rows-an-invocation-on-cpu-drivers).
    /// The subgroup variant of A32 only (see [`Columns::exists`]), with an entry point and a
    /// source file of its own (`shaders/ops/matmul_tiled_tall.wgsl`).
    TiledTall,
    /// One column where the tall tiled kernel is bound, for the types whose records it stages a
    /// block at a time ([`staged_blocks`](super::staged_blocks): q2_K, q3_K, q6_K, tq1_0): the tall kernel's
    /// one-column path in a module of its own, whose block readers take every word from the
    /// stage (`shaders/ops/matmul_tall_blocks.wgsl`).
    TallOneColumn,
}

impl Columns {
    pub const ALL: [Columns; 5] =
        [Columns::One, Columns::UpToMax, Columns::Tiled, Columns::TiledTall, Columns::TallOneColumn];

    /// Whether a kernel of these columns is built for `format`, `op` and `variant`: the tall
    /// tiled kernel is A32's, and its idle invocations return before the columns loop, which
    /// only the subgroup variant (which stages nothing, so has no barriers there) allows; its
    /// one column of its own only for the types it stages a block at a time.
    pub fn exists(self, format: Format, op: Op, variant: Variant) -> bool {
        match self {
            Columns::One | Columns::UpToMax | Columns::Tiled => true,
            Columns::TiledTall => Columns::tall_exists(op, variant),
            Columns::TallOneColumn => Columns::tall_exists(op, variant) && super::staged_blocks(format),
        }
    }

    /// Whether the tall tiled kernel is built for `op` and `variant`, whatever the format.
    pub fn tall_exists(op: Op, variant: Variant) -> bool {
        op == Op::Matmul && variant == Variant::Subgroup
    }

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
            Columns::One | Columns::TallOneColumn => 1,
            Columns::UpToMax => MAX_COLUMNS,
            Columns::Tiled | Columns::TiledTall => TILE_COLUMNS as usize,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Columns::One => "j1",
            Columns::UpToMax => "j8",
            Columns::Tiled => "tiled",
            Columns::TiledTall => "tiled_tall",
            Columns::TallOneColumn => "tall_j1",
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

    pub(super) fn flag(self) -> &'static str {
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
        match format.layout() {
            Layout::ContiguousLeV1 => Codec::Contiguous,
            Layout::RowSplitK128V1 => Codec::RowSplit,
            Layout::BlockScaleK16M128x4V1 => Codec::BlockScale,
            Layout::RowScaleV1 | Layout::RowInterleavedV1 => Codec::Fp8Rows,
            Layout::GgufBlocksV1 => Codec::GgufBlocks,
        }
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
        match (self.op, self.variant, self.columns) {
            (Op::Dequant, _, _) => "dequant",
            (Op::Gather, _, _) => "gather",
            // Built for A32's subgroup variant only (Columns::exists).
            (Op::Matmul | Op::MatmulA8, _, Columns::TiledTall) => "matmul_tiled_tall",
            (Op::Matmul | Op::MatmulA8, _, Columns::TallOneColumn) => "matmul_tall_one_column",
            (Op::Matmul | Op::MatmulA8, Variant::Subgroup, Columns::Tiled) => "matmul_tiled_subgroup",
            (Op::Matmul | Op::MatmulA8, Variant::Workgroup | Variant::EmulatedDot, Columns::Tiled) => "matmul_tiled",
            (Op::Matmul | Op::MatmulA8, Variant::Workgroup | Variant::EmulatedDot, _) => "matmul",
            (Op::Matmul | Op::MatmulA8, Variant::Subgroup, _) => "matmul_subgroup",
        }
    }
}

/// A kernel over activations rather than weights: not keyed by a weight format, one pipeline per
/// device. Today the A8 profile's q8_1 quantize pass; an engine's norms, RoPE and attention are
/// the next rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActivationOp {
    /// f32 activation columns to ggml's q8_1 blocks (`shaders/ops/quantize_q8_1.wgsl`).
    QuantizeQ8_1,
}

impl ActivationOp {
    pub const ALL: [ActivationOp; 1] = [ActivationOp::QuantizeQ8_1];

    pub fn name(self) -> &'static str {
        match self {
            ActivationOp::QuantizeQ8_1 => "quantize_q8_1",
        }
    }

    /// The WGSL entry point of its module.
    pub fn entry_point(self) -> &'static str {
        match self {
            ActivationOp::QuantizeQ8_1 => "quantize_q8_1",
        }
    }
}
