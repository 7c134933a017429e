//! The capability table: every (format, layout, op, variant) with its status and reason, as data.
//! It is consulted before upload and dispatch, so an unsupported combination is an
//! `Unsupported` error naming the rule — never a wgpu validation panic or a silent wrong answer.
//! Every rule is an exhaustive match: a new format category, op or variant breaks the build here
//! until someone decides what it may do.

use super::kernels::{self, Columns, KernelKey, Op, Profile, Variant};
use super::plan::Arrangement;
use super::platform::Platform;
use crate::error::{Error, Result};
use crate::format::{Category, Format};
use crate::layout::Layout;
use serde::Serialize;

/// Whether a row can run, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "snake_case")]
pub enum Status {
    Supported,
    Unsupported(String),
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub format: &'static str,
    pub layout: &'static str,
    pub op: &'static str,
    pub variant: &'static str,
    #[serde(flatten)]
    pub status: Status,
    /// A supported product: the column count from which it takes the tiled kernel here
    /// ([`tiled_from`]); absent where it never does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiled_from: Option<u32>,
}

/// The format-level rule, independent of the platform. Every format has a codec; what differs
/// is which ops make sense for its values.
fn format_rule(format: Format, op: Op) -> Status {
    match (format.category(), op) {
        (Category::DirectInt, Op::Matmul | Op::MatmulA8) => {
            Status::Unsupported("int32 has no matmul: integer tensors are indexes, not weights".into())
        }
        (Category::DirectInt, Op::Dequant | Op::Gather) => Status::Supported,
        // A8's products are int8 codes times q8_1 activation codes: for the weights that are
        // integer codes times a scale.
        (Category::GgufBlock | Category::Grouped | Category::BlockScaledFloat, Op::MatmulA8) => Status::Supported,
        (Category::DirectFloat | Category::RowScaledFloat, Op::MatmulA8) => Status::Unsupported(format!(
            "the A8 profile multiplies int8 weight codes (gguf blocks, grouped formats, nvfp4); {format} runs A32"
        )),
        (
            Category::DirectFloat
            | Category::Grouped
            | Category::BlockScaledFloat
            | Category::RowScaledFloat
            | Category::GgufBlock,
            Op::Dequant | Op::Matmul | Op::Gather,
        ) => Status::Supported,
    }
}

/// The op-level rule for a variant.
fn variant_rule(op: Op, variant: Variant) -> Status {
    match (op, variant) {
        (Op::Dequant | Op::Gather | Op::Matmul | Op::MatmulA8, Variant::Workgroup)
        | (Op::Matmul | Op::MatmulA8, Variant::Subgroup)
        | (Op::MatmulA8, Variant::EmulatedDot) => Status::Supported,
        (Op::Dequant | Op::Gather, Variant::Subgroup) => {
            Status::Unsupported(format!("{} has no reduction, so no subgroup variant", op.name()))
        }
        (Op::Dequant | Op::Gather | Op::Matmul, Variant::EmulatedDot) => {
            Status::Unsupported(format!("{} has no integer dot product to emulate", op.name()))
        }
    }
}

/// The platform-level rule for a variant of `format`'s kernel.
fn platform_rule(platform: &Platform, format: Format, op: Op, variant: Variant) -> Status {
    let packed = match (op, variant) {
        (Op::MatmulA8, Variant::Workgroup | Variant::Subgroup) if !platform.has_packed_dot => Status::Unsupported(
            "the platform's WGSL lacks packed_4x8_integer_dot_product (the emulated-dot variant runs instead)".into(),
        ),
        _ => Status::Supported,
    };
    if packed != Status::Supported {
        return packed;
    }
    match variant {
        Variant::Workgroup | Variant::EmulatedDot => Status::Supported,
        Variant::Subgroup if !platform.has_subgroups => Status::Unsupported("the adapter does not offer the SUBGROUP feature".into()),
        Variant::Subgroup if platform.probes.subgroups_contiguous != Some(true) => Status::Unsupported(format!(
            "subgroups are not runs of 4 or more consecutive invocations with a size dividing {} here (probe: {:?}, sizes {}..{})",
            super::kernels::MATMUL_WG,
            platform.probes.subgroups_contiguous,
            platform.subgroup_min_size,
            platform.subgroup_max_size
        )),
        // A driver may pick any size up to the maximum per pipeline; a subgroup wider than the
        // kernel's row block would add two blocks' rows together.
        Variant::Subgroup if platform.subgroup_max_size > super::kernels::product_lanes(format) => {
            Status::Unsupported(format!(
                "subgroups here may be up to {} invocations, wider than {format}'s {}-lane row blocks",
                platform.subgroup_max_size,
                super::kernels::product_lanes(format)
            ))
        }
        Variant::Subgroup => Status::Supported,
    }
}

/// The status of one combination; `platform` adds the adapter's rules.
pub fn status(format: Format, layout: Layout, op: Op, variant: Variant, platform: Option<&Platform>) -> Status {
    if !format.allows(layout) {
        return Status::Unsupported(format!("{format} is not stored in {layout}"));
    }
    for rule in [format_rule(format, op), variant_rule(op, variant)] {
        if let Status::Unsupported(reason) = rule {
            return Status::Unsupported(reason);
        }
    }
    match platform {
        Some(p) => platform_rule(p, format, op, variant),
        None => Status::Supported,
    }
}

/// Refuses an unsupported combination with its reason.
pub fn check(format: Format, layout: Layout, op: Op, variant: Variant, platform: Option<&Platform>) -> Result<()> {
    match status(format, layout, op, variant, platform) {
        Status::Supported => Ok(()),
        Status::Unsupported(reason) => {
            Err(Error::Unsupported(format!("{format} in {layout}, {} ({}): {reason}", op.name(), variant.name())))
        }
    }
}

/// The whole table, for printing: every op, and the subgroup variant where an op has one.
pub fn table(platform: Option<&Platform>) -> Vec<Row> {
    let mut rows = Vec::new();
    for format in Format::ALL {
        let layout = format.layout();
        for op in Op::ALL {
            for variant in Variant::ALL {
                if variant_rule(op, variant) != Status::Supported {
                    continue;
                }
                let status = status(format, layout, op, variant, platform);
                let tiled = match (&status, platform) {
                    (Status::Supported, Some(p)) => tiled_from(format, op, variant, p),
                    _ => None,
                };
                rows.push(Row {
                    format: format.name(),
                    layout: layout.name(),
                    op: op.name(),
                    variant: variant.name(),
                    status,
                    tiled_from: tiled,
                });
            }
        }
    }
    rows
}

/// Every kernel that exists (supported on some platform): what the portability test compiles.
/// A product has three kernels per variant: one column, up to MAX_COLUMNS, and tiled
/// (kernels::Columns).
pub fn kernel_keys() -> Vec<KernelKey> {
    let mut keys = Vec::new();
    for format in Format::ALL {
        for op in Op::ALL {
            for variant in Variant::ALL {
                if format_rule(format, op) != Status::Supported || variant_rule(op, variant) != Status::Supported {
                    continue;
                }
                let columns: &[Columns] = match op {
                    Op::Matmul | Op::MatmulA8 => &Columns::ALL,
                    Op::Dequant | Op::Gather => &[Columns::One],
                };
                let built = columns.iter().filter(|c| c.exists(format, op, variant));
                keys.extend(built.map(|&columns| KernelKey { format, op, variant, columns }));
            }
        }
    }
    keys
}

/// The fastest supported variant of an op on this platform: subgroups where they work, the
/// packed dot product where the platform has it.
pub fn best_variant(format: Format, op: Op, platform: &Platform) -> Variant {
    let layout = format.layout();
    [Variant::Subgroup, Variant::Workgroup, Variant::EmulatedDot]
        .into_iter()
        .find(|&v| status(format, layout, op, v, Some(platform)) == Status::Supported)
        .unwrap_or(Variant::Workgroup)
}

/// The column count from which a product of `variant` takes the tiled kernel on this platform
/// (`None` for dequant and gather). The 8-column kernel decodes
/// every weight once per 8 columns and loads each activation chunk per lane; the tiled one
/// decodes once per 64 and stages the activation (docs/performance.md#tiled-products).
pub fn tiled_from(format: Format, op: Op, variant: Variant, platform: &Platform) -> Option<u32> {
    let cpu = platform.device_type == "Cpu";
    match (op, tiled_variant(variant, platform)) {
        // One column by rows on a CPU driver, for the formats it pays for (kernels::matvec_by_rows).
        (Op::Matmul, Variant::Subgroup) if cpu && kernels::matvec_by_rows(format) => Some(1),
        (Op::Matmul | Op::MatmulA8, Variant::Subgroup) => Some(TILED_FROM_SUBGROUP),
        (Op::Matmul | Op::MatmulA8, Variant::Workgroup | Variant::EmulatedDot) => Some(TILED_FROM_WORKGROUP),
        (Op::Dequant | Op::Gather, _) => None,
    }
}

/// The tiled kernel a product of `op` takes in its tiled `variant` (see [`tiled_variant`]):
/// eight rows an invocation for A32 on a CPU driver's subgroup variant, where each activation
/// step is a loop of per-lane loads and shuffles that more rows share
/// (docs/performance.md#eight-rows-an-invocation-on-cpu-drivers); four elsewhere. Not in a
/// browser: its idle invocations skip the shuffles, which WGSL's subgroup uniformity rule
/// refuses (naga, every native backend, does not check it). GPUs keep four rows: no GPU has
/// measured eight.
pub fn tiled_columns(op: Op, variant: Variant, platform: &Platform) -> Columns {
    tiled_columns_on(op, variant, &platform.device_type, cfg!(target_arch = "wasm32"))
}

/// [`tiled_columns`] for an adapter of `device_type` (wgpu's name: "Cpu", "DiscreteGpu", …),
/// in a browser or not.
pub fn tiled_columns_on(op: Op, variant: Variant, device_type: &str, browser: bool) -> Columns {
    match Columns::tall_exists(op, variant) && device_type == "Cpu" && !browser {
        true => Columns::TiledTall,
        false => Columns::Tiled,
    }
}

/// How an upload of `format` for `profile`'s products arranges its rows on this platform: in
/// row tiles where the profile's one-column product takes whole rows per invocation (A32's
/// one-column path of the tiled kernel, on CPU drivers), whose SIMD programs then read each
/// chunk's records side by side (src/gpu/plan/tiles.rs); as stored where a row's lanes read
/// along the row (GPUs; A8's one-column kernel, which tiles slow down:
/// docs/performance.md#row-tiles).
pub fn arrangement(format: Format, profile: Profile, platform: &Platform) -> Arrangement {
    let op = profile.op();
    let variant = best_variant(format, op, platform);
    match tiled_from(format, op, variant, platform) {
        Some(1) => Arrangement::RowTiles,
        Some(_) | None => Arrangement::RowByRow,
    }
}

/// The variant of the tiled kernel a product of `variant` takes: its subgroup variant shuffles
/// each activation step from a subgroup's first 8 lanes, so it needs subgroups of 8 or more;
/// elsewhere the workgroup-memory staging runs (A8's emulated dot product keeps its own).
pub fn tiled_variant(variant: Variant, platform: &Platform) -> Variant {
    match variant {
        Variant::Subgroup if platform.subgroup_min_size >= 8 => Variant::Subgroup,
        Variant::Subgroup | Variant::Workgroup => Variant::Workgroup,
        Variant::EmulatedDot => Variant::EmulatedDot,
    }
}

/// The crossovers, measured on lavapipe (docs/performance.md#tiled-products): the subgroup
/// variant is ahead of the 8-column kernel from two columns, the workgroup variant from 32. No
/// GPU here has timed both kernels; these stand for every device until one does.
const TILED_FROM_SUBGROUP: u32 = 2;
const TILED_FROM_WORKGROUP: u32 = 32;
