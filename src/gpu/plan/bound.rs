//! Bound ops' planning: an engine's operands as bindings, and the dispatches one record of a bound
//! op makes for its column (or request) count. Pure like the rest of the planner; `gpu::bound`
//! creates the objects.
//!
//! A bound op is planned for its largest count once. What a record with a smaller count changes
//! is only its parameters and dispatch sizes, so a record is a list of [`Record`]s: which kernel,
//! which bind group ([`Record::set`]) and which parameters — never a new binding.

use super::{dispatch_size, to_u32, Frame, Plan};
use crate::error::{Error, Result};
use crate::gpu::kernels::{self, Profile, MAX_COLUMNS, Q8_1_CHUNK_WORDS, TILED_ROWS, TILE_COLUMNS, WORDS_WG};
use crate::gpu::params::Params;

/// An engine's operand in 4-byte words: `count` runs (columns, or gathered rows) of `len` words,
/// `stride` words apart, from word `offset` of a buffer of `buffer_words` words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operand {
    pub offset: u64,
    pub len: u64,
    pub stride: u64,
    pub buffer_words: u64,
}

/// The part of an operand's buffer one binding shows: `start` and `size` in bytes, and the
/// operand's first word (`first`) counted from the binding's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperandBinding {
    pub start: u64,
    pub size: u64,
    pub first: u64,
}

impl Operand {
    /// The word after the operand's last, for `count` runs.
    fn end(&self, count: u64) -> u64 {
        self.offset + (count - 1) * self.stride + self.len
    }

    /// Whether a kernel may read the operand as vec4<f32>: it starts and its runs start on whole
    /// vec4s, and the last vec4 it touches lies inside the buffer.
    pub fn vec4_ready(&self, count: u64) -> bool {
        self.vec4_failures(count).is_empty()
    }

    /// The rules of [`Operand::vec4_ready`] that `count` runs break, each with its numbers.
    pub fn vec4_failures(&self, count: u64) -> Vec<String> {
        let last = self.end(count).div_ceil(4) * 4;
        [
            (!self.offset.is_multiple_of(4))
                .then(|| format!("its offset ({} elements) is not a multiple of 4", self.offset)),
            (count > 1 && !self.stride.is_multiple_of(4))
                .then(|| format!("its column stride ({} elements) is not a multiple of 4", self.stride)),
            (last > self.buffer_words).then(|| {
                format!("its last vec4 ends at element {last}, past the buffer's {} elements", self.buffer_words)
            }),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The binding of `count` runs: refused, naming the numbers, when a run is longer than its
    /// stride, the operand passes its buffer's end, or the binding is over `limit` bytes. The
    /// binding starts on the storage offset alignment (`align`, and on a vec4 where `vec4`).
    pub fn bind(&self, what: &str, count: u64, align: u64, limit: u64, vec4: bool) -> Result<OperandBinding> {
        if count == 0 || self.len == 0 {
            return Err(Error::Unsupported(format!(
                "{what}: an operand of {count} run(s) of {} elements is empty",
                self.len
            )));
        }
        if count > 1 && self.stride < self.len {
            return Err(Error::Unsupported(format!(
                "{what}: a stride of {} elements is shorter than its runs of {}, so they would overlap",
                self.stride, self.len
            )));
        }
        let end = self
            .offset
            .checked_add((count - 1).saturating_mul(self.stride))
            .and_then(|e| e.checked_add(self.len))
            .filter(|&e| e <= self.buffer_words)
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "{what}: {count} run(s) of {} elements, {} apart, from element {} pass the buffer's end ({} elements)",
                    self.len, self.stride, self.offset, self.buffer_words
                ))
            })?;
        let align = if vec4 { align.max(16) } else { align.max(4) };
        let start = self.offset * 4 / align * align;
        let end_bytes = if vec4 { end.div_ceil(4) * 16 } else { end * 4 };
        let size = end_bytes - start;
        if size > limit {
            return Err(Error::Unsupported(format!(
                "{what}: the operand spans {size} bytes, over this adapter's {limit}-byte storage binding limit"
            )));
        }
        Ok(OperandBinding { start, size, first: (self.offset * 4 - start) / 4 })
    }
}

/// Which kernel a record dispatches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// The A8 profile's activation quantization.
    Quantize,
    /// The product kernel (1..=8 columns a dispatch).
    Product,
    /// The tiled product kernel (any columns, a tile of them per workgroup along z).
    Tiled,
    /// One column of a tiled product in a kernel of its own, the tiled kernel's geometry
    /// (`Columns::TallOneColumn`, where the plan's `tiled_one_column` says so).
    TiledOne,
    Gather,
    Dequant,
}

/// One dispatch of a record: its kernel, bind group (an index into the bound op's sets) and
/// parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub kernel: Kernel,
    pub set: usize,
    pub params: Params,
    /// Workgroups along x, y and z.
    pub groups: [u32; 3],
}

/// A bound product: row passes planned once (`Frame`'s windows), the activation and output
/// bindings, and the counts a record may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductPlan {
    pub profile: Profile,
    pub max_columns: u64,
    /// The row passes' planes and base parameters: bind group i is pass i's, and A8's quantize
    /// pass takes bind group `passes.len()`.
    pub passes: Vec<(super::PlaneBindings, Params)>,
    /// Where x is bound (the caller's buffer; A8: read by the quantize pass).
    pub x: OperandBinding,
    /// Vec4s between x's columns as the caller laid them out.
    pub x_stride: u64,
    pub y: OperandBinding,
    pub y_stride: u64,
    /// A8: words of the private q8_1 buffer for `max_columns` columns.
    pub q8_words: u64,
    /// The count from which records take the tiled kernel (`None`: never).
    pub tiled_from: Option<u64>,
    /// Whether a record of one column through the tiled kernel takes [`Kernel::TiledOne`]
    /// instead (set by the binder, which knows the kernels).
    pub tiled_one_column: bool,
    /// Rows a workgroup of the tiled kernel takes (`kernels::tiled_rows`; set by the binder,
    /// which knows the kernel).
    pub tiled_rows: u32,
    rows_per_group: u64,
    max_dim: u64,
    max_groups: u64,
    base: Params,
}

/// The column counts a bound product takes: at most `max`, and from `tiled_from` on through the
/// tiled kernel (`None`: never).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnCounts {
    pub max: u64,
    pub tiled_from: Option<u64>,
}

/// Plans a product of up to `counts.max` columns of `x` into `y` (both in f32 words; y's runs
/// are N long, x's K long).
pub(super) fn product(f: &Frame, profile: Profile, io: [&Operand; 2], counts: ColumnCounts) -> Result<ProductPlan> {
    let [x, y] = io;
    let ColumnCounts { max: max_columns, tiled_from } = counts;
    let (v, limit) = (&f.v, f.limit);
    if x.len != v.k || y.len != v.rows {
        return Err(Error::Shape {
            layout: f.layout,
            rule: "x's columns hold K values and y's N",
            detail: format!("K = {}, N = {}: x columns of {}, y columns of {}", v.k, v.rows, x.len, y.len),
        });
    }
    let xb = x.bind("matmul x", max_columns, f.align, limit, true)?;
    let failures = x.vec4_failures(max_columns);
    if !failures.is_empty() {
        return Err(Error::Unsupported(format!("matmul reads x as vec4<f32>: {}", failures.join("; "))));
    }
    let yb = y.bind("matmul y", max_columns, f.align, limit, false)?;
    // The row passes are the host product's for one column: the windows do not depend on J.
    let one: Plan = super::matmul::plan(f, profile, 1)?;
    let passes = one.passes.iter().map(|p| (p.planes, p.params)).collect();
    let q8_words = match profile {
        Profile::A32 => 0,
        Profile::A8 => {
            let words = max_columns * f.chunks * Q8_1_CHUNK_WORDS as u64;
            if words * 4 > limit {
                return Err(Error::Unsupported(format!(
                    "{max_columns} columns of K = {} take {} bytes as q8_1, over the {limit}-byte binding limit",
                    v.k,
                    words * 4
                )));
            }
            if (max_columns * f.chunks).div_ceil(WORDS_WG as u64) > f.max_groups {
                return Err(Error::Unsupported(format!(
                    "{max_columns} columns of {} q8_1 blocks need more workgroups than one dispatch takes",
                    f.chunks
                )));
            }
            words
        }
    };
    Ok(ProductPlan {
        profile,
        max_columns,
        passes,
        x: xb,
        x_stride: x.stride / 4,
        y: yb,
        y_stride: y.stride,
        q8_words,
        tiled_from,
        tiled_one_column: false,
        tiled_rows: TILED_ROWS,
        rows_per_group: kernels::matmul_rows(f.format) as u64,
        max_dim: f.max_dim,
        max_groups: f.max_groups,
        base: f.base,
    })
}

impl ProductPlan {
    /// The dispatches of one record of `columns` columns (1..=max_columns): A8's quantize pass,
    /// then every row pass for each group of up to [`MAX_COLUMNS`] columns.
    pub fn records(&self, columns: u64) -> Result<Vec<Record>> {
        if columns == 0 || columns > self.max_columns {
            return Err(Error::Unsupported(format!(
                "this matmul was bound for 1..={} columns, got {columns}",
                self.max_columns
            )));
        }
        let mut records = Vec::new();
        let chunks = self.base.chunks as u64;
        // What the product kernel reads: the caller's x (A32) or the q8_1 words (A8).
        let (in_first, in_stride) = match self.profile {
            Profile::A32 => (self.x.first / 4, self.x_stride),
            Profile::A8 => {
                let groups = dispatch_size((columns * chunks).div_ceil(WORDS_WG as u64), self.max_dim);
                let params = Params {
                    k: self.base.k,
                    chunks: self.base.chunks,
                    columns: columns as u32,
                    x_stride: to_u32(self.x_stride, "activation stride")?,
                    in_off: to_u32(self.x.first / 4, "activation offset")?,
                    groups_x: groups[0],
                    ..Params::default()
                };
                let groups = [groups[0], groups[1], 1];
                records.push(Record { kernel: Kernel::Quantize, set: self.passes.len(), params, groups });
                (0, chunks * Q8_1_CHUNK_WORDS as u64 / 4)
            }
        };
        if self.tiled_from.is_some_and(|t| columns >= t) {
            // Every column at once: a workgroup per tiled_rows rows and TILE_COLUMNS columns.
            let kernel = match columns == 1 && self.tiled_one_column {
                true => Kernel::TiledOne,
                false => Kernel::Tiled,
            };
            for (i, (_, base)) in self.passes.iter().enumerate() {
                let mut p = *base;
                p.columns = columns as u32;
                p.in_off = to_u32(in_first, "activation offset")?;
                p.x_stride = to_u32(in_stride, "activation stride")?;
                p.out_off = to_u32(self.y.first + p.row0 as u64, "output offset")?;
                p.out_stride = to_u32(self.y_stride, "output stride")?;
                let rows = dispatch_size((p.rows as u64).div_ceil(self.tiled_rows as u64), self.max_dim);
                p.groups_x = rows[0];
                let tiles = to_u32(columns.div_ceil(TILE_COLUMNS as u64), "column tiles")?;
                records.push(Record { kernel, set: i, params: p, groups: [rows[0], rows[1], tiles] });
            }
            return Ok(records);
        }
        let mut j0 = 0;
        while j0 < columns {
            let group = (columns - j0).min(MAX_COLUMNS as u64);
            for (i, (_, base)) in self.passes.iter().enumerate() {
                let mut p = *base;
                p.columns = group as u32;
                p.in_off = to_u32(in_first + j0 * in_stride, "activation offset")?;
                p.x_stride = to_u32(in_stride, "activation stride")?;
                p.out_off = to_u32(self.y.first + p.row0 as u64 + j0 * self.y_stride, "output offset")?;
                p.out_stride = to_u32(self.y_stride, "output stride")?;
                let groups = dispatch_size((p.rows as u64).div_ceil(self.rows_per_group), self.max_dim);
                debug_assert!(groups[0] as u64 * groups[1] as u64 <= self.max_groups);
                p.groups_x = groups[0];
                records.push(Record { kernel: Kernel::Product, set: i, params: p, groups: [groups[0], groups[1], 1] });
            }
            j0 += group;
        }
        Ok(records)
    }
}

/// A bound dequant: the host's passes (bind group i is pass i's planes), writing into `y`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DequantPlan {
    pub sets: Vec<super::PlaneBindings>,
    pub y: OperandBinding,
    pub records: Vec<Record>,
}

/// Plans a bound dequant into `y`, which one binding holds.
pub(super) fn dequant(f: &Frame, y: &Operand) -> Result<DequantPlan> {
    let words = f.v.rows * f.v.k;
    if y.len != words {
        return Err(Error::Shape {
            layout: f.layout,
            rule: "dequant writes N·K values",
            detail: format!("N·K = {words}: y of {}", y.len),
        });
    }
    let yb = y.bind("dequant y", 1, f.align, f.limit, false)?;
    let plan = super::dequant::plan(f)?;
    let (mut sets, mut records) = (Vec::new(), Vec::new());
    for (set, pass) in plan.passes.iter().enumerate() {
        let mut p = pass.params;
        p.out_off = to_u32(yb.first + p.row0 as u64 * f.v.k, "output offset")?;
        records.push(Record { kernel: Kernel::Dequant, set, params: p, groups: [pass.groups[0], pass.groups[1], 1] });
        sets.push(pass.planes);
    }
    Ok(DequantPlan { sets, y: yb, records })
}
