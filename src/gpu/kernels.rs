//! Shader assembly: constants generated from the registry, `common.wgsl`, the
//! layout family's codec, and the op. The registry is the only place format facts live; the
//! WGSL constants below are written from it, never by hand.

use crate::error::{Error, Result};
use crate::format::{CodeMapping, Format, Geometry, ScaleWord};
use crate::layout::{row_split, Layout};
use std::fmt::Write;

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const CODEC_CONTIGUOUS: &str = include_str!("../../shaders/codecs/contiguous.wgsl");
const CODEC_ROW_SPLIT: &str = include_str!("../../shaders/codecs/row_split.wgsl");
const CODEC_BLOCK_SCALE: &str = include_str!("../../shaders/codecs/block_scale.wgsl");
const CODEC_FP8_ROWS: &str = include_str!("../../shaders/codecs/fp8_rows.wgsl");
const CODEC_GGUF_BLOCKS: &str = include_str!("../../shaders/codecs/gguf_blocks.wgsl");
const OP_DEQUANT: &str = include_str!("../../shaders/ops/dequant.wgsl");
const OP_MATVEC: &str = include_str!("../../shaders/ops/matvec.wgsl");
const OP_MATVEC_SUBGROUP: &str = include_str!("../../shaders/ops/matvec_subgroup.wgsl");
pub(crate) const PROBE: &str = include_str!("../../shaders/ops/probe.wgsl");
pub(crate) const PROBE_SUBGROUP: &str = include_str!("../../shaders/ops/probe_subgroup.wgsl");

/// Values per chunk, the unit every codec decodes (`common.wgsl`).
pub const CHUNK: usize = 32;
/// Rows per matvec workgroup and invocations per dequant workgroup (`ops/*.wgsl`).
pub const MATVEC_ROWS: usize = 4;
pub const DEQUANT_WG: usize = 64;
/// Invocations per matvec workgroup, and the largest subgroup the subgroup variant accepts.
pub const MATVEC_WG: u32 = 256;
pub const MATVEC_LANES: u32 = 64;

/// An operation a kernel implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Dequant,
    Matvec,
}

/// How a kernel reduces: portable workgroup memory, or subgroup operations where offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    Workgroup,
    Subgroup,
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

impl Op {
    pub const ALL: [Op; 2] = [Op::Dequant, Op::Matvec];
    pub fn name(self) -> &'static str {
        match self {
            Op::Dequant => "dequant",
            Op::Matvec => "matvec",
        }
    }
}

impl Variant {
    pub const ALL: [Variant; 2] = [Variant::Workgroup, Variant::Subgroup];
    pub fn name(self) -> &'static str {
        match self {
            Variant::Workgroup => "workgroup",
            Variant::Subgroup => "subgroup",
        }
    }
}

impl Codec {
    /// The codec of a format; `None` where no kernel exists yet (k-quants and i-quants).
    pub fn for_format(format: Format) -> Option<Codec> {
        match format.spec().layouts[0] {
            Layout::ContiguousLeV1 => Some(Codec::Contiguous),
            Layout::RowSplitK128V1 => Some(Codec::RowSplit),
            Layout::BlockScaleK16M128x4V1 => Some(Codec::BlockScale),
            Layout::RowScaleV1 | Layout::RowInterleavedV1 => Some(Codec::Fp8Rows),
            Layout::GgufBlocksV1 => gguf_kind(format).map(|_| Codec::GgufBlocks),
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
}

/// A compiled kernel's identity: what the pipeline cache is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelKey {
    pub format: Format,
    pub op: Op,
    pub variant: Variant,
}

impl KernelKey {
    pub fn label(&self) -> String {
        format!("{}/{}/{}", self.format, self.op.name(), self.variant.name())
    }

    pub fn entry_point(&self) -> &'static str {
        match (self.op, self.variant) {
            (Op::Dequant, _) => "dequant",
            (Op::Matvec, Variant::Workgroup) => "matvec",
            (Op::Matvec, Variant::Subgroup) => "matvec_subgroup",
        }
    }
}

/// The inner decoder of `codecs/gguf_blocks.wgsl` for a ggml block format (its `KIND_*`
/// constants): every gguf_* format.
pub fn gguf_kind(format: Format) -> Option<u32> {
    use Format::*;
    match format {
        GgufQ8_0 => Some(0),
        GgufQ4_0 => Some(1),
        GgufQ5_0 => Some(2),
        GgufIq4Nl => Some(3),
        GgufQ2_0 => Some(4),
        GgufQ4K => Some(5),
        GgufQ5K => Some(6),
        GgufQ6K => Some(7),
        GgufQ2K => Some(8),
        GgufQ3K => Some(9),
        GgufIq2Xxs => Some(10),
        GgufIq2Xs => Some(11),
        GgufIq2S => Some(12),
        GgufIq3Xxs => Some(13),
        GgufIq3S => Some(14),
        GgufIq1S => Some(15),
        GgufIq1M => Some(16),
        GgufIq4Xs => Some(17),
        Bf16 | Fp32 | Int32 | Q2G64Fp16 | Q4G64Fp16 | Q5G64Fp16 | Q6G64Fp16 | Q8G32Fp16 | T2G128Fp16 | Nvfp4 | Fp8E4m3fnRowBf16 | Fp8E4m3fnRowFp16 => None,
    }
}

/// The grid an i-quant kernel reads from plane1, as u32 words (a u64 entry low word first):
/// ggml's tables from `gguf::tables`.
pub fn gguf_grid(format: Format) -> Option<Vec<u32>> {
    use crate::gguf::tables::*;
    let split = |t: &[u64]| t.iter().flat_map(|&e| [e as u32, (e >> 32) as u32]).collect();
    match format {
        Format::GgufIq2Xxs => Some(split(&IQ2XXS_GRID)),
        Format::GgufIq2Xs => Some(split(&IQ2XS_GRID)),
        Format::GgufIq2S => Some(split(&IQ2S_GRID)),
        Format::GgufIq3Xxs => Some(IQ3XXS_GRID.to_vec()),
        Format::GgufIq3S => Some(IQ3S_GRID.to_vec()),
        Format::GgufIq1S | Format::GgufIq1M => Some(split(&IQ1S_GRID)),
        Format::GgufQ8_0 | Format::GgufQ4_0 | Format::GgufQ5_0 | Format::GgufQ2_0 | Format::GgufIq4Nl | Format::GgufIq4Xs => None,
        Format::GgufQ2K | Format::GgufQ3K | Format::GgufQ4K | Format::GgufQ5K | Format::GgufQ6K => None,
        Format::Bf16 | Format::Fp32 | Format::Int32 | Format::Q2G64Fp16 | Format::Q4G64Fp16 | Format::Q5G64Fp16 | Format::Q6G64Fp16 | Format::Q8G32Fp16 | Format::T2G128Fp16 => None,
        Format::Nvfp4 | Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => None,
    }
}

/// The format's WGSL constants, written from the registry.
fn constants(format: Format) -> Result<String> {
    let mut s = format!("// {format}: constants generated from the format registry.\n");
    let spec = format.spec();
    let unsupported = || Error::Unsupported(format!("{format} has no WGSL codec"));
    match spec.geometry {
        Geometry::Direct { bytes } => writeln!(s, "const WORD_BYTES: u32 = {bytes}u;"),
        Geometry::Grouped { group, mapping, .. } => {
            let p = row_split::plane_spec(format).ok_or_else(unsupported)?;
            let base_bits = 8 * p.base_bytes / group;
            let high_bits = 8 * p.high_bytes / group;
            writeln!(
                s,
                "const GROUP: u32 = {group}u;\nconst CODE_BITS: u32 = {}u;\nconst BASE_BITS: u32 = {base_bits}u;\nconst HIGH_BITS: u32 = {high_bits}u;\nconst OFFSET_ONE: bool = {};",
                p.code_bits,
                mapping == CodeMapping::OffsetOne
            )
        }
        Geometry::BlockScaled { .. } => Ok(()),
        Geometry::RowScaled { scale } => writeln!(s, "const SCALE_BF16: bool = {};", scale == ScaleWord::Bf16),
        Geometry::Block { values, bytes } => {
            let kind = gguf_kind(format).ok_or_else(unsupported)?;
            writeln!(s, "const BLOCK_VALUES: u32 = {values}u;\nconst BLOCK_BYTES: u32 = {bytes}u;\nconst GGUF_KIND: u32 = {kind}u;")
        }
    }
    .map_err(|e| Error::Unsupported(e.to_string()))?;
    Ok(s)
}

/// The complete WGSL module for one kernel.
pub fn assemble(key: KernelKey) -> Result<String> {
    let codec = Codec::for_format(key.format).ok_or_else(|| Error::Unsupported(format!("{}: no kernel yet", key.format)))?;
    // No `enable subgroups;` line: naga (wgpu's native front end) does not accept that directive
    // yet and enables subgroup builtins through the device's SUBGROUP feature instead. A browser
    // build, whose WGSL goes to the browser's own compiler, must prepend it.
    let mut s = String::new();
    s.push_str(&constants(key.format)?);
    for part in [COMMON, codec.source()] {
        s.push_str(part);
        s.push('\n');
    }
    match (key.op, key.variant) {
        (Op::Dequant, _) => s.push_str(OP_DEQUANT),
        (Op::Matvec, Variant::Workgroup) => s.push_str(OP_MATVEC),
        (Op::Matvec, Variant::Subgroup) => {
            s.push_str(OP_MATVEC);
            s.push('\n');
            s.push_str(OP_MATVEC_SUBGROUP);
        }
    }
    Ok(s)
}

/// The probe modules: (name, WGSL, needs subgroups).
pub fn probe_sources() -> Vec<(&'static str, String, bool)> {
    vec![("subnormal", PROBE.to_string(), false), ("subgroup_layout", format!("{PROBE}\n{PROBE_SUBGROUP}"), true)]
}
