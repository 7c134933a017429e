//! Kernel geometry: how many invocations, lanes, rows and columns a kernel is built for. These
//! are tuning decisions, each made by measurement; the measurements are in
//! docs/performance.md#kernel-geometry and the comments here say what each decision trades.

use super::ops::{Columns, Op};
pub use crate::format::MatvecOrder;
use crate::format::{A8Reader, Category, Format, Geometry};

/// Values per chunk, the unit every codec decodes (`shaders/common.wgsl`).
pub const CHUNK: usize = 32;
/// Invocations per dequant/gather workgroup (`shaders/ops/dequant.wgsl`, `gather.wgsl`).
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
/// one SIMD program and the runs one after another: with a block's lanes interleaved over the
/// whole row, each program jumped a page per step and no prefetcher followed it. A GPU still
/// reads 8 consecutive chunks per run, whole sectors.
pub const MATMUL_RUN: u32 = 8;

/// The largest i-quant grid (u32 words) a product kernel copies to workgroup memory: 6 KiB, so
/// with the reduction's (`partial`, at most 8 KiB, or the subgroup variant's `subgroup_sums`, at
/// most 4 KiB) it stays within WebGPU's default 16 KiB. Every grid fits since the 8-byte entries
/// are packed (`gguf_grid`; iq2_s's and iq1's, the largest, are 1024 words).
pub const GRID_WORKGROUP_WORDS: usize = 1536;
/// The tiled product kernel (`shaders/ops/matmul_tiled.wgsl`): TILED_WG invocations of
/// TILED_ROW_BLOCK rows each, and [`TILE_COLUMNS`](super::TILE_COLUMNS) columns per workgroup.
/// The tall kernels (CPU drivers) take [`TALL_WG`] instead ([`tiled_wg`]).
pub const TILED_WG: u32 = 64;
pub const TILED_ROW_BLOCK: u32 = 4;
pub const TILED_ROWS: u32 = TILED_WG * TILED_ROW_BLOCK;
/// The tall kernels' workgroup ([`Columns::TiledTall`], [`Columns::TallOneColumn`]: CPU
/// drivers' A32 products), 64 rows: with 256 a model's 576- or 640-row products (SmolLM2-135M's
/// and gemma-3-270m's output and down products) made three workgroups for two cores, one core
/// taking two (measured: docs/performance.md#tiled-products). A CPU driver runs a workgroup's
/// 8-lane programs one after another, so fewer invocations cost no parallelism.
pub const TALL_WG: u32 = 16;

/// Invocations a workgroup of the tiled kernel `columns` takes: [`TALL_WG`] for the tall ones,
/// [`TILED_WG`] for the others (GPUs'; the row-block kernels' header carries it unused).
pub fn tiled_wg(columns: Columns) -> u32 {
    match columns {
        Columns::TiledTall | Columns::TallOneColumn => TALL_WG,
        Columns::Tiled | Columns::One | Columns::UpToMax => TILED_WG,
    }
}

/// Rows a workgroup of the tiled kernel `columns` takes (the binder sizes its grid by them).
pub fn tiled_rows(columns: Columns) -> u32 {
    tiled_wg(columns) * TILED_ROW_BLOCK
}
/// Rows per row tile (`src/gpu/plan/tiles.rs`): a SIMD program of the one-column path covers
/// 8 lanes × TILED_ROW_BLOCK rows, so at each chunk it reads one tile's records side by side.
pub const ROW_TILE: u32 = 8 * TILED_ROW_BLOCK;
/// Words per chunk of the A8 activation (`shaders/ops/matmul_a8.wgsl`): 8 of codes, d, two
/// sums, 0.
pub const Q8_1_CHUNK_WORDS: usize = 12;

/// Lanes per row block. Kernels with a grid copy it to workgroup memory once per workgroup, so
/// they take 32 lanes: each walks twice the chunks, and the copy weighs half. The others take
/// one run (MATMUL_RUN): with more lanes, a row of K = 4096 gave each lane one or two chunks, so
/// a CPU driver's SIMD program touched its rows once and no stream formed.
/// The subgroup variant needs the adapter's largest subgroup to fit one block (capability.rs):
/// lavapipe's 8 fits every family; where subgroups are wider only the grid kernels take it.
pub fn product_lanes(format: Format) -> u32 {
    if super::has_grid(format) {
        32
    } else {
        MATMUL_RUN
    }
}

/// How matvec's kernel (one column, [`Columns::One`]) orders a lane step's rows. With four
/// rows' decoded chunks live at once a CPU driver spills most of them, so A32 goes row at a
/// time; A8 follows the registry's per-type choice ([`crate::format::GgufType::a8_matvec`]):
/// types whose codes are whole words masked spill nothing and lose the rows' overlapping loads.
pub fn matvec_order(format: Format, op: Op) -> MatvecOrder {
    match op {
        Op::Matmul => MatvecOrder::RowAtATime,
        // No matvec: the constant is unused.
        Op::Dequant | Op::Gather => MatvecOrder::RowsTogether,
        Op::MatmulA8 => match (format.gguf(), format.spec().geometry) {
            (Some(t), _) => t.a8_matvec,
            // The grouped formats and nvfp4 decode codes by spreading bits: row at a time.
            (None, Geometry::Grouped { .. } | Geometry::BlockScaled { .. }) => MatvecOrder::RowAtATime,
            // No A8 kernel (capability.rs, format_rule): the constant is unused.
            (None, Geometry::Direct { .. } | Geometry::RowScaled { .. } | Geometry::Block { .. }) => {
                MatvecOrder::RowsTogether
            }
        },
    }
}

/// The rows of one row block and the lanes that share them in one product kernel. A lane loads
/// each activation chunk once for its block's rows, so taller blocks load less activation per
/// weight, and every load with a per-invocation address is costly on CPU drivers. The
/// row-at-a-time order keeps one row's decoded chunk live, so eight rows cost a private array of
/// eight sums and no spills. Rows together keep every row's chunk live: four in general, eight
/// (two quads) in the grid families' several-column A8 kernels, where each activation pair
/// serves every row. The K-quants' several-column kernels stay at four rows: eight doubled a CPU
/// driver's compile time, most of a CI run, for types far ahead already. Lanes double with the
/// rows, so rows per workgroup (`matmul_rows`, which the planner uses without knowing the
/// kernel) stay the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowBlock {
    pub rows: u32,
    pub lanes: u32,
}

impl RowBlock {
    pub fn for_kernel(format: Format, op: Op, columns: Columns) -> RowBlock {
        let base = RowBlock { rows: ROW_BLOCK, lanes: product_lanes(format) };
        let tall = RowBlock { rows: 2 * base.rows, lanes: 2 * base.lanes };
        match (columns, matvec_order(format, op), op, super::has_grid(format)) {
            (Columns::One, MatvecOrder::RowAtATime, _, _) => tall,
            (Columns::One, MatvecOrder::RowsTogether, _, _) => base,
            (Columns::UpToMax, _, Op::MatmulA8, true) => tall,
            (Columns::UpToMax, _, Op::MatmulA8, false)
            | (Columns::UpToMax, _, Op::Matmul | Op::Dequant | Op::Gather, _) => base,
            // The tiled kernel has no row blocks; the constants are unused.
            (Columns::Tiled | Columns::TiledTall | Columns::TallOneColumn, _, _, _) => base,
        }
    }
}

/// Whether one column's A32 product on a CPU driver goes through the tiled kernel's one-column
/// path (`shaders/ops/matmul_tiled.wgsl`: each invocation owns four whole rows, the activation
/// chunk loaded once per subgroup and shuffled) instead of matvec's kernel (lanes share a row
/// and reduce). There every load is a per-lane loop (docs/performance.md#every-load-is-a-per-lane-loop-on-lavapipe):
/// the one-column path loads the activation an eighth as often and has no reduction, which
/// pays where decoding is dear and loses where it is a masked word (measured on lavapipe,
/// docs/performance.md#one-column-by-rows).
pub fn matvec_by_rows(format: Format) -> bool {
    // A category (and word size) fact, so a new format of a category needs no row here.
    match format.category() {
        // 16-bit float words gain with row tiles of 32-value chunks; fp32's lost
        // (docs/performance.md#float-words-by-rows). int32 has no product.
        Category::DirectFloat => matches!(format.spec().geometry, Geometry::Direct { bytes: 2, .. }),
        Category::DirectInt => false,
        // Ties by rows alone, gains with the row tiles that come with it
        // (docs/performance.md#one-column-by-rows).
        Category::Grouped | Category::BlockScaledFloat | Category::RowScaledFloat | Category::GgufBlock => true,
    }
}

/// Whether the tall tiled kernel (CPU drivers' A32 products, [`Columns::TiledTall`]) loads an
/// invocation's rows' records of a chunk as vec4s into a stage, where the block readers take
/// their words (`record_word`), instead of a word or two per load. On a CPU driver every load
/// is a per-lane loop whose cost is mostly per load, not per word
/// (docs/performance.md#records-staged-a-vec4-at-a-time). It needs 32-value GGUF blocks of an
/// even size, so that eight rows' records fill whole vec4s and four rows' whole vec4s and at
/// most two words: q4_0, q5_0, q8_0, iq4_nl, q4_1, q5_1. Blocks of 256 values are read a part
/// per chunk, and mxfp4's 17 bytes are odd.
pub fn staged_records(format: Format) -> bool {
    match format.spec().geometry {
        Geometry::Block { values: 32, bytes } => bytes % 2 == 0,
        Geometry::Block { .. }
        | Geometry::Direct { .. }
        | Geometry::Grouped { .. }
        | Geometry::BlockScaled { .. }
        | Geometry::RowScaled { .. } => false,
    }
}

/// Whether one column's product where the tall tiled kernel is bound takes a kernel of its own
/// ([`Columns::TallOneColumn`]) that stages the four rows' records a block at a time: the
/// 256-value types whose chunks are read a few words at a time from records off a word or a
/// vec4 (q6_K's 210 bytes: 20 loads a row and chunk), where counts and times on lavapipe fell
/// (docs/performance.md#256-value-records-staged-a-block-at-a-time). Not q4_K or q5_K, whose
/// records are whole vec4s and whose stage spilled (they read sub-blocks in pairs instead:
/// [`a32_pairs`]), nor the i-quants, whose grid lookups dominate: staged, they were no faster.
pub fn staged_blocks(format: Format) -> bool {
    matches!(format, Format::GgufQ2K | Format::GgufQ3K | Format::GgufQ6K | Format::GgufTq1_0)
}

/// Whether one column where the tall tiled kernel is bound steps two chunks at a time, each row's
/// pair of sub-blocks decoded from one load of the bytes they share
/// (shaders/codecs/gguf_pairs.wgsl, shaders/ops/matmul_tiled_tall_pairs.wgsl): q4_K and q5_K,
/// whose sub-blocks j and j + 1 are the two nibbles of the same 32 bytes, so that a chunk at a
/// time loads them and the block's head twice (docs/performance.md#k-quant-pairs-in-one-column).
/// Staged a block at a time instead, four rows' 144 or 176 bytes left the stage on the stack.
/// The grid i-quants too ([`a32_code_pairs`]).
pub fn a32_pairs(format: Format) -> bool {
    matches!(format, Format::GgufQ4K | Format::GgufQ5K) || a32_code_pairs(format)
}

/// The [`a32_pairs`] types whose pairs are their A8 pair decoders' (shaders/codecs/gguf_codes.wgsl),
/// read as levels: the grid i-quants, whose two sub-blocks' index, sign and scale bytes lie side
/// by side and load as one window (docs/performance.md#i-quant-pair-decoders), and whose maps
/// have no offset, so that each code is the level itself (or eight times it, for iq1). Not the
/// other k-quants, whose A8 codes are unsigned with the offset in the map.
pub fn a32_code_pairs(format: Format) -> bool {
    use Format::*;
    matches!(format, GgufIq2Xxs | GgufIq2Xs | GgufIq2S | GgufIq3Xxs | GgufIq3S | GgufIq1S | GgufIq1M)
}

/// Rows per product workgroup for `format`.
pub fn matmul_rows(format: Format) -> usize {
    (MATMUL_WG / product_lanes(format) * ROW_BLOCK) as usize
}

/// Whether an A8 kernel steps two chunks at a time (`shaders/ops/matmul_a8.wgsl`, A8_PAIRS):
/// ggml's blocks of 64 values or more. Their codec's pair step is a shared-word decoder where
/// the registry names one ([`A8Reader::Pair`]), else its chunk decoder twice. Grouped codes share
/// no words between chunks, so they go a chunk at a time.
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
    format.gguf().is_some_and(|t| t.offset)
}

/// Whether the codec's pair step has a decoder of its own (see [`a8_pairs`]).
pub fn pair_decoder(format: Format) -> bool {
    format.gguf().is_some_and(|t| match t.a8 {
        A8Reader::Pair => true,
        A8Reader::Chunk => false,
    })
}
