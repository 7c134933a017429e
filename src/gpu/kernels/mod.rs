//! Shader assembly: constants generated from the registry, the parameter struct generated from
//! [`params`](super::params), `common.wgsl`, the layout family's codec, the shared weight-word
//! rules and the op. The registry is the only place format facts live; every WGSL constant below
//! is written from it by an exhaustive match, never by hand.

mod geometry;
mod grids;
mod ops;

pub use geometry::*;
use grids::grid_nibbles;
pub use grids::{gguf_grid, has_grid};
#[cfg(test)]
use grids::{IQ1_GRID_LEVELS, IQ2_GRID_LEVELS};
pub use ops::*;

use crate::error::{Error, Result};
use crate::format::{A8Reader, Category, CodeMapping, DirectWord, Geometry, ScaleWord};
use crate::layout::row_split;
use std::fmt::Write;

const COMMON: &str = include_str!("../../../shaders/common.wgsl");
const CODEC_CONTIGUOUS: &str = include_str!("../../../shaders/codecs/contiguous.wgsl");
const CODEC_ROW_SPLIT: &str = include_str!("../../../shaders/codecs/row_split.wgsl");
const CODEC_BLOCK_SCALE: &str = include_str!("../../../shaders/codecs/block_scale.wgsl");
const CODEC_FP8_ROWS: &str = include_str!("../../../shaders/codecs/fp8_rows.wgsl");
const CODEC_GGUF_BLOCKS: &str = include_str!("../../../shaders/codecs/gguf_blocks.wgsl");
const CODEC_GGUF_IQUANTS: &str = include_str!("../../../shaders/codecs/gguf_iquants.wgsl");
const CODEC_GGUF_RECORDS: &str = include_str!("../../../shaders/codecs/gguf_records.wgsl");
const OP_WEIGHTS: &str = include_str!("../../../shaders/ops/weights.wgsl");
const OP_DEQUANT: &str = include_str!("../../../shaders/ops/dequant.wgsl");
const OP_GATHER: &str = include_str!("../../../shaders/ops/gather.wgsl");
const CODEC_GGUF_CODES: &str = include_str!("../../../shaders/codecs/gguf_codes.wgsl");
const CODEC_ROW_SPLIT_CODES: &str = include_str!("../../../shaders/codecs/row_split_codes.wgsl");
const CODEC_BLOCK_SCALE_CODES: &str = include_str!("../../../shaders/codecs/block_scale_codes.wgsl");
const OP_MATMUL: &str = include_str!("../../../shaders/ops/matmul.wgsl");
const OP_MATMUL_A32: &str = include_str!("../../../shaders/ops/matmul_a32.wgsl");
const OP_MATMUL_A8: &str = include_str!("../../../shaders/ops/matmul_a8.wgsl");
const OP_DOT4_PACKED: &str = include_str!("../../../shaders/ops/dot4_packed.wgsl");
const OP_DOT4_EMULATED: &str = include_str!("../../../shaders/ops/dot4_emulated.wgsl");
const OP_QUANTIZE_Q8_1: &str = include_str!("../../../shaders/ops/quantize_q8_1.wgsl");
const OP_MATMUL_TILED: &str = include_str!("../../../shaders/ops/matmul_tiled.wgsl");
const OP_MATMUL_TILE: &str = include_str!("../../../shaders/ops/matmul_tile.wgsl");
const OP_MATMUL_TILED_A8: &str = include_str!("../../../shaders/ops/matmul_tiled_a8.wgsl");
const OP_MATMUL_TILED_WORKGROUP: &str = include_str!("../../../shaders/ops/matmul_tiled_workgroup.wgsl");
const OP_MATMUL_TILED_SUBGROUP: &str = include_str!("../../../shaders/ops/matmul_tiled_subgroup.wgsl");
const OP_MATMUL_TILED_TALL: &str = include_str!("../../../shaders/ops/matmul_tiled_tall.wgsl");
const OP_MATMUL_TILED_TALL_DIRECT: &str = include_str!("../../../shaders/ops/matmul_tiled_tall_direct.wgsl");
const OP_MATMUL_TILED_TALL_PAIRS: &str = include_str!("../../../shaders/ops/matmul_tiled_tall_pairs.wgsl");
const CODEC_GGUF_PAIRS: &str = include_str!("../../../shaders/codecs/gguf_pairs.wgsl");
const OP_CODES: &str = include_str!("../../../shaders/ops/codes.wgsl");
const OP_MATMUL_TILED_TALL_STAGED: &str = include_str!("../../../shaders/ops/matmul_tiled_tall_staged.wgsl");
const OP_MATMUL_TILED_STAGE: &str = include_str!("../../../shaders/ops/matmul_tiled_stage.wgsl");
const OP_MATMUL_TALL_BLOCKS: &str = include_str!("../../../shaders/ops/matmul_tall_blocks.wgsl");
const OP_MATMUL_SUBGROUP: &str = include_str!("../../../shaders/ops/matmul_subgroup.wgsl");
pub(crate) const PROBE: &str = include_str!("../../../shaders/ops/probe.wgsl");
pub(crate) const PROBE_SUBGROUP: &str = include_str!("../../../shaders/ops/probe_subgroup.wgsl");

/// The WGSL source of each codec, kept beside the other sources.
impl Codec {
    /// The codec's files, in the order they are assembled.
    pub(super) fn sources(self) -> &'static [&'static str] {
        match self {
            Codec::Contiguous => &[CODEC_CONTIGUOUS],
            Codec::RowSplit => &[CODEC_ROW_SPLIT],
            Codec::BlockScale => &[CODEC_BLOCK_SCALE],
            Codec::Fp8Rows => &[CODEC_FP8_ROWS],
            Codec::GgufBlocks => &[CODEC_GGUF_BLOCKS, CODEC_GGUF_IQUANTS],
        }
    }

    /// The codec's A8 part (`shaders/ops/matmul_a8.wgsl`'s codec interface: int8 codes per chunk), for
    /// the codecs whose weights are integer codes times a scale (nvfp4's E2M1 values are
    /// half-integers); capability.rs, format_rule, keeps every other codec from an A8 kernel.
    pub(super) fn a8_source(self) -> Result<&'static str> {
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

/// The kernel's WGSL constants, written from the registry.
pub fn constants(key: KernelKey) -> Result<String> {
    let format = key.format;
    let mut s = format!("// {}: constants generated from the format registry (src/gpu/kernels/mod.rs).\n", key.label());
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
        Geometry::Direct { bytes, word } => {
            let binary16 = match word {
                DirectWord::Binary16 => true,
                DirectWord::Bf16 | DirectWord::Binary32 | DirectWord::Int32 => false,
            };
            writeln!(s, "const WORD_BYTES: u32 = {bytes}u;\nconst WORD_BINARY16: bool = {binary16};").map_err(w)?
        }
        Geometry::Grouped { group, mapping, .. } => {
            let p = row_split::plane_spec(format)
                .ok_or_else(|| Error::Unsupported(format!("{format} has no row_split plane spec")))?;
            let base_bits = 8 * p.base_bytes / group;
            let high_bits = 8 * p.high_bytes / group;
            let offset_one = match mapping {
                CodeMapping::OffsetOne => true,
                CodeMapping::TwosComplement => false,
            };
            // The codecs branch on the packing, one flag each, so a packing the WGSL does not
            // read cannot pass for another (shaders/codecs/row_split.wgsl).
            let (crumbs, nibbles, bytes) = match p.packing {
                row_split::Packing::Crumbs => (true, false, false),
                row_split::Packing::Nibbles { .. } => (false, true, false),
                row_split::Packing::Bytes => (false, false, true),
            };
            writeln!(s, "const GROUP: u32 = {group}u;\nconst CODE_BITS: u32 = {}u;\nconst BASE_BITS: u32 = {base_bits}u;\nconst HIGH_BITS: u32 = {high_bits}u;\nconst OFFSET_ONE: bool = {offset_one};\nconst PACK_CRUMBS: bool = {crumbs};\nconst PACK_NIBBLES: bool = {nibbles};\nconst PACK_BYTES: bool = {bytes};", p.code_bits).map_err(w)?
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
            // Products copy a grid that fits to workgroup memory (shaders/codecs/gguf_blocks.wgsl).
            let grid = gguf_grid(format).map_or(0, |g| g.len());
            let in_workgroup = key.op.is_product() && grid > 0 && grid <= GRID_WORKGROUP_WORDS;
            writeln!(
                s,
                "const GRID_WORDS: u32 = {grid}u;\nconst GRID_IN_WORKGROUP: bool = {in_workgroup};\nconst GRID_WG_WORDS: u32 = {}u;\nconst GRID_NIBBLES: bool = {};",
                if in_workgroup { grid } else { 1 },
                grid_nibbles(format)
            )
            .map_err(w)?;
            s.push_str(&block_decoders(key)?);
        }
    }
    s.push_str(&params_wgsl());
    Ok(s)
}

/// `struct Params` (src/gpu/params.rs, which knows nothing of kernels) and the row tile its
/// `tiled_rows` counts in (src/gpu/plan/tiles.rs).
fn params_wgsl() -> String {
    format!("{}const ROW_TILE: u32 = {ROW_TILE}u;\n", super::params::wgsl())
}

/// A ggml type's decoders as the codecs call them: `block_levels` and `block_affine` for every
/// op, and for A8 `block_codes`, `block_affine8` and `block_pair8`, each a call of the decoder the
/// registry names (`src/format.rs`, GgufType). The decoders all take (block's first byte, chunk
/// in the block, chunk in the row); a type whose decoders are missing fails to compile.
fn block_decoders(key: KernelKey) -> Result<String> {
    let t = key.format.gguf().ok_or_else(|| Error::Unsupported(format!("{} is not a ggml block type", key.format)))?;
    let name = t.ggml_name.to_lowercase();
    let call =
        |f: &str, ty: &str, body: String| format!("fn {f}(base: u32, j: u32, c: u32) -> {ty} {{ return {body}; }}\n");
    let mut s = call("block_levels", "Chunk", format!("levels_{name}(base, j, c)"));
    s += &call("block_affine", "vec4<f32>", format!("affine_{name}(base, j, c)"));
    let code_pairs = tall_pairs(key) && a32_code_pairs(key.format);
    if tall_pairs(key) {
        let body = match code_pairs {
            true => format!("level_pair_of_codes(pair_{name}(base, j, c))"),
            false => format!("level_pair_{name}(base, j, c)"),
        };
        s += &call("block_level_pair", "LevelPair", body);
    }
    if key.op == Op::MatmulA8 || code_pairs {
        let poison = "vec4<f32>(poison_f32())";
        let (codes, affine8, pair) = match t.a8 {
            A8Reader::Chunk => (
                format!("codes_{name}(base, j, c)"),
                format!("affine8_{name}(base, j, c)"),
                // Never called: chunk_pair8 takes the chunk decoders twice (PAIR_DECODER).
                format!("Pair8(nan_codes(), nan_codes(), {poison}, {poison})"),
            ),
            // Never called: chunk_pair8 takes the pair decoder (PAIR_DECODER).
            A8Reader::Pair => ("nan_codes()".to_string(), poison.to_string(), format!("pair_{name}(base, j, c)")),
        };
        s += &call("block_codes", "Codes", codes);
        s += &call("block_affine8", "vec4<f32>", affine8);
        s += &call("block_pair8", "Pair8", pair);
        s += &format!("const PAIR_DECODER: bool = {};\n", pair_decoder(key.format));
    }
    Ok(s)
}

/// Whether `key`'s module is the tall tiled kernel whose one column reads sub-blocks in pairs
/// ([`a32_pairs`]; A32's, the only op the tall kernel has).
fn tall_pairs(key: KernelKey) -> bool {
    key.columns == Columns::TiledTall && key.op == Op::Matmul && a32_pairs(key.format)
}

/// The product kernels' geometry as WGSL constants (see [`product_lanes`] and [`Columns`]).
/// KERNEL_COLUMNS and SUM_VECS size the column accumulators (shaders/ops/matmul.wgsl's Sums: ROW_QUARTERS
/// vec4 per column); PARTIAL_SLOTS sizes `partial` (shaders/ops/matmul.wgsl: a sum per column, row of a
/// four-row reduction pass and invocation); SUBGROUP_SLOTS sizes `subgroup_sums` (shaders/ops/matmul_subgroup.wgsl: per column and row,
/// one per subgroup, of at least 4 invocations).
fn product_geometry(block: RowBlock, columns: Columns, order: MatvecOrder) -> String {
    let RowBlock { rows: row_block, lanes } = block;
    let rows = MATMUL_WG / lanes * row_block;
    let (tiled_wg, tiled_rows) = (tiled_wg(columns), tiled_rows(columns));
    let quarters = row_block / 4;
    // The tiled kernel sizes its own sums (TILE_COLUMNS); the 8-column kernel's parts it is
    // assembled with go unused, sized for one column so they reserve no workgroup memory.
    let columns = match columns {
        Columns::One | Columns::UpToMax => columns.capacity() as u32,
        Columns::Tiled | Columns::TiledTall | Columns::TallOneColumn => 1,
    };
    let row_at_a_time = match order {
        MatvecOrder::RowAtATime => true,
        MatvecOrder::RowsTogether => false,
    };
    format!(
        "const TILED_WG: u32 = {tiled_wg}u;\nconst TILED_ROW_BLOCK: u32 = {TILED_ROW_BLOCK}u;\nconst TILED_ROWS: u32 = {tiled_rows}u;\nconst TILE_COLUMNS: u32 = {TILE_COLUMNS}u;\nconst TILE_X_VECS: u32 = {}u;\nconst MATMUL_WG: u32 = {MATMUL_WG}u;\nconst MATMUL_LANES: u32 = {lanes}u;\nconst MATMUL_RUN: u32 = {MATMUL_RUN}u;\nconst ROW_BLOCK: u32 = {row_block}u;\nconst ROW_QUARTERS: u32 = {quarters}u;\nconst MATMUL_ROWS: u32 = {rows}u;\nconst KERNEL_COLUMNS: u32 = {columns}u;\nconst SUM_VECS: u32 = {}u;\nconst MATVEC_ROW_AT_A_TIME: bool = {row_at_a_time};\nconst PARTIAL_SLOTS: u32 = {}u;\nconst SUBGROUP_SLOTS: u32 = {}u;\n",
        TILE_COLUMNS * 8,
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
    let dot4 = match key.variant {
        Variant::EmulatedDot => OP_DOT4_EMULATED,
        Variant::Workgroup | Variant::Subgroup => OP_DOT4_PACKED,
    };
    // The op's base files, then the tail its columns and variant add.
    let mut op: Vec<&str> = match key.op {
        Op::Dequant => vec![OP_WEIGHTS, OP_DEQUANT],
        Op::Gather => vec![OP_WEIGHTS, OP_GATHER],
        Op::Matmul => vec![OP_MATMUL_A32, OP_MATMUL],
        Op::MatmulA8 => vec![OP_CODES, codec.a8_source()?, dot4, OP_MATMUL_A8, OP_MATMUL],
    };
    if key.op.is_product() {
        let tiled = match key.op {
            Op::MatmulA8 => OP_MATMUL_TILED_A8,
            Op::Matmul | Op::Dequant | Op::Gather => OP_MATMUL_TILED,
        };
        match (key.columns, key.variant) {
            (Columns::TiledTall, variant) if key.columns.exists(key.format, key.op, variant) => {
                let reads: &[&str] = match (staged_records(key.format), tall_pairs(key)) {
                    (true, _) => &[OP_MATMUL_TILED_STAGE, OP_MATMUL_TILED_TALL_STAGED],
                    (false, true) if a32_code_pairs(key.format) => {
                        &[OP_CODES, CODEC_GGUF_CODES, CODEC_GGUF_PAIRS, OP_MATMUL_TILED_TALL_PAIRS]
                    }
                    (false, true) => &[OP_CODES, CODEC_GGUF_PAIRS, OP_MATMUL_TILED_TALL_PAIRS],
                    (false, false) => &[OP_MATMUL_TILED_TALL_DIRECT],
                };
                op.extend([OP_MATMUL_TILE, tiled, OP_MATMUL_TILED_SUBGROUP, OP_MATMUL_TILED_TALL]);
                op.extend(reads);
            }
            (Columns::TallOneColumn, variant) if key.columns.exists(key.format, key.op, variant) => op.extend([
                OP_MATMUL_TILE,
                tiled,
                OP_MATMUL_TILED_SUBGROUP,
                OP_MATMUL_TILED_STAGE,
                OP_MATMUL_TALL_BLOCKS,
            ]),
            (Columns::TiledTall, _) => {
                return Err(Error::Unsupported(format!(
                    "{}: the tall tiled kernel is A32's subgroup variant only",
                    key.label()
                )))
            }
            (Columns::TallOneColumn, _) => {
                return Err(Error::Unsupported(format!(
                    "{}: the tall kernel's one column of its own is A32's subgroup variant of the types it stages a block at a time only",
                    key.label()
                )))
            }
            (Columns::Tiled, Variant::Subgroup) => op.extend([OP_MATMUL_TILE, tiled, OP_MATMUL_TILED_SUBGROUP]),
            (Columns::Tiled, Variant::Workgroup | Variant::EmulatedDot) => {
                op.extend([OP_MATMUL_TILE, tiled, OP_MATMUL_TILED_WORKGROUP])
            }
            (Columns::One | Columns::UpToMax, Variant::Subgroup) => op.push(OP_MATMUL_SUBGROUP),
            (Columns::One | Columns::UpToMax, Variant::Workgroup | Variant::EmulatedDot) => {}
        }
    }
    if key.op.is_product() {
        let block = RowBlock::for_kernel(key.format, key.op, key.columns);
        s.push_str(&product_geometry(block, key.columns, matvec_order(key.format, key.op)));
    }
    if key.op == Op::MatmulA8 {
        s.push_str(&format!("const A8_PAIRS: bool = {};\n", a8_pairs(key.format)));
    }
    // The block readers' words come from the buffer, or from the tall kernel's stage where it
    // stages the type's records (shaders/ops/matmul_tiled_stage.wgsl): a chunk at a time, or a
    // block at a time in the one column of its own (staged_blocks).
    let records: &[&str] = match (codec, key.columns, staged_records(key.format)) {
        (Codec::GgufBlocks, Columns::TiledTall, true) | (Codec::GgufBlocks, Columns::TallOneColumn, _) => &[],
        (Codec::GgufBlocks, _, _) => &[CODEC_GGUF_RECORDS],
        _ => &[],
    };
    for part in [COMMON].iter().chain(codec.sources()).chain(records).chain(&op) {
        s.push('\n');
        s.push_str(part);
    }
    Ok(s)
}

/// The complete WGSL module of an activation kernel: Params, `common.wgsl` and its op file.
pub fn assemble_activation(op: ActivationOp) -> String {
    let source = match op {
        ActivationOp::QuantizeQ8_1 => OP_QUANTIZE_Q8_1,
    };
    format!("// {}\n{}\n{COMMON}\n{source}", op.name(), params_wgsl())
}

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
use crate::format::Format;
#[cfg(test)]
mod tests;
