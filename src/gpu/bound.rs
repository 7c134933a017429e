//! Bound ops: a product, gather or dequant planned, validated and given its objects once, then
//! recorded into the caller's compute pass any number of times — no allocation, submit or wait
//! per record (docs/engine.md).
//!
//! A record's parameters depend only on its count (columns or rows), so they live in uniform
//! slots keyed by the count and written once, when a count is first recorded: every bind group
//! reads its parameters at a dynamic offset, and a slot is never rewritten, so any number of
//! records of any counts can share one submission. A new count takes slots from a block made at
//! bind time, or from a new block when that is full (the only allocation after binding).

use super::kernels::{ActivationOp, Columns, KernelKey, Op, Profile, Variant, TILED_ROW_BLOCK};
use super::operand::{DeviceSlice, Word};
use super::plan::{self, Kernel, OperandBinding, PlaneBinding, PlaneBindings, Record};
use super::{capability, dispatch::PARAMS_BYTES, Gpu, GpuTensor};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Parameter slots a bound op's first block holds beyond what its largest and smallest counts
/// take: room for a few more counts before a second block.
const SPARE_SLOTS: u64 = 32;

/// A buffer range bound at one binding.
#[derive(Clone)]
struct Bound {
    buffer: wgpu::Buffer,
    offset: u64,
    size: Option<NonZeroU64>,
}

impl Bound {
    fn whole(buffer: &wgpu::Buffer) -> Bound {
        Bound { buffer: buffer.clone(), offset: 0, size: None }
    }

    fn range(buffer: &wgpu::Buffer, start: u64, size: u64) -> Bound {
        Bound { buffer: buffer.clone(), offset: start, size: NonZeroU64::new(size.max(4)) }
    }

    fn operand(buffer: &wgpu::Buffer, b: &OperandBinding) -> Bound {
        Bound::range(buffer, b.start, b.size)
    }
}

/// What one bind group binds at bindings 1..=7.
type Set = [Bound; 7];

/// A block of parameter slots and its bind groups (one per set).
struct SlotBlock {
    buffer: wgpu::Buffer,
    groups: Vec<wgpu::BindGroup>,
    slots: u64,
    used: u64,
}

#[derive(Default)]
struct Slots {
    blocks: Vec<SlotBlock>,
    /// Per count: its block, and each dispatch with its dynamic offset.
    by_count: HashMap<u64, (usize, Vec<(Record, u32)>)>,
}

/// How a bound op's records are planned.
enum Plan {
    Product(plan::ProductPlan),
    Gather(plan::GatherPlan),
    Dequant(plan::DequantPlan),
}

/// How to bind a product, where the platform's choice is not wanted (tests, comparisons).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BindOptions {
    /// The variant; `None`: the platform's fastest ([`capability::best_variant`]).
    pub variant: Option<Variant>,
    /// The column count from which records take the tiled kernel (A32; `u32::MAX`: never);
    /// `None`: the capability table's ([`capability::tiled_from`]).
    pub tiled_from: Option<u32>,
}

/// What a bound gather found wrong with its ids (see [`BoundOp::read_status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatherStatus {
    /// Requests whose id was at or past the table's N, over every record since the status was
    /// last cleared. Their output rows hold the poison word [`super::POISON`].
    pub out_of_range: u32,
    /// The largest such id (meaningful when `out_of_range > 0`).
    pub largest_id: u32,
}

/// What a bind call decides: the op's plan, kernels and bindings.
struct Parts {
    label: String,
    plan: Plan,
    max_count: u64,
    /// The kernel of each record kind; products add matvec's own kernel for one-column records.
    pipelines: HashMap<Kernel, wgpu::ComputePipeline>,
    matvec: Option<wgpu::ComputePipeline>,
    /// The tiled kernel the product bound, if any ([`Columns::Tiled`] or `TiledTall`).
    tiled: Option<Columns>,
    sets: Vec<Set>,
    /// A gather's status words.
    status: Option<wgpu::Buffer>,
}

/// An op bound to its weights and operands, recorded with [`BoundOp::record`].
pub struct BoundOp {
    parts: Parts,
    slot_bytes: u64,
    slots: Mutex<Slots>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    layout: wgpu::BindGroupLayout,
    lost: Arc<AtomicBool>,
}

fn poisoned() -> Error {
    Error::Gpu("a bound op's slot table was poisoned by an earlier panic".into())
}

impl BoundOp {
    /// The largest count a record takes (columns or rows).
    pub fn max_count(&self) -> u32 {
        self.parts.max_count as u32
    }

    /// Records the op's dispatches for `count` columns (products) or rows (gather; a dequant
    /// takes a count of one) into `pass`. Nothing is allocated, submitted or waited for, except
    /// a new slot block the first time a count does not fit the existing ones.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, count: u32) -> Result<()> {
        // The flag only: a step records a couple of hundred ops, and a poll each would cost a
        // few percent of a step. The step's writes and its submit poll.
        if self.lost.load(Ordering::SeqCst) {
            return Err(super::lost_error());
        }
        let mut slots = self.slots.lock().map_err(|_| poisoned())?;
        if !slots.by_count.contains_key(&(count as u64)) {
            self.add_count(&mut slots, count as u64)?;
        }
        let (block, dispatches) = &slots.by_count[&(count as u64)];
        let groups = &slots.blocks[*block].groups;
        for (r, offset) in dispatches {
            let pipeline = match (&self.parts.matvec, r.kernel, r.params.columns) {
                (Some(matvec), Kernel::Product, 1) => Some(matvec),
                _ => self.parts.pipelines.get(&r.kernel),
            };
            let pipeline = pipeline.ok_or_else(|| {
                Error::Gpu(format!("{}: no {:?} kernel was built at bind (a planner bug)", self.parts.label, r.kernel))
            })?;
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &groups[r.set], &[*offset]);
            pass.dispatch_workgroups(r.groups[0], r.groups[1], r.groups[2]);
        }
        Ok(())
    }

    /// How many dispatches a record of `count` makes.
    pub fn dispatches(&self, count: u32) -> Result<usize> {
        Ok(self.records(count as u64)?.len())
    }

    /// The product kernel a record of `count` takes: `j1` (one column), `j8` (groups of up to
    /// 8 columns) or `tiled`; the op's name for a gather or dequant.
    pub fn kernel(&self, count: u32) -> Result<&'static str> {
        let records = self.records(count as u64)?;
        let has = |k| records.iter().any(|r| r.kernel == k);
        Ok(match &self.parts.plan {
            Plan::Product(_) if has(Kernel::Tiled) || has(Kernel::TiledOne) => "tiled",
            Plan::Product(_) if count == 1 && self.parts.matvec.is_some() => "j1",
            Plan::Product(_) => "j8",
            Plan::Gather(_) => "gather",
            Plan::Dequant(_) => "dequant",
        })
    }

    /// Rows an invocation of the tiled kernel a record of `count` takes: 8 where the product
    /// bound the tall tiled kernel and `count` is two or more (its one-column path takes 4), 4
    /// for the four-row kernel, `None` where the record takes no tiled kernel.
    pub fn tiled_rows(&self, count: u32) -> Result<Option<u32>> {
        let tiled = self.records(count as u64)?.iter().any(|r| matches!(r.kernel, Kernel::Tiled | Kernel::TiledOne));
        Ok(match (tiled, self.parts.tiled) {
            (false, _) | (true, None) => None,
            (true, Some(Columns::TiledTall)) if count >= 2 => Some(2 * TILED_ROW_BLOCK),
            (
                true,
                Some(Columns::Tiled | Columns::TiledTall | Columns::TallOneColumn | Columns::One | Columns::UpToMax),
            ) => Some(TILED_ROW_BLOCK),
        })
    }

    /// The dispatches of a record of `count`.
    fn records(&self, count: u64) -> Result<Vec<Record>> {
        match &self.parts.plan {
            Plan::Product(p) => p.records(count),
            Plan::Gather(p) => p.records(count),
            Plan::Dequant(p) => match count {
                1 => Ok(p.records.clone()),
                _ => Err(Error::Unsupported(format!("a bound dequant records a count of 1, got {count}"))),
            },
        }
    }

    /// Records into a compute pass of its own on `encoder`.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, count: u32) -> Result<()> {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(&self.parts.label),
            timestamp_writes: None,
        });
        self.record(&mut pass, count)
    }

    /// Plans `count`'s dispatches and writes their parameters into fresh slots.
    fn add_count(&self, slots: &mut Slots, count: u64) -> Result<()> {
        let records = self.records(count)?;
        let need = records.len() as u64;
        let fits = slots.blocks.last().is_some_and(|b| b.slots - b.used >= need);
        if !fits {
            let block = self.block(need.max(SPARE_SLOTS))?;
            slots.blocks.push(block);
        }
        let b = slots.blocks.len() - 1;
        let block = &mut slots.blocks[b];
        let mut bytes = vec![0u8; (need * self.slot_bytes) as usize];
        let mut dispatches = Vec::with_capacity(records.len());
        for (i, r) in records.into_iter().enumerate() {
            let at = i * self.slot_bytes as usize;
            bytes[at..at + std::mem::size_of::<super::params::Params>()].copy_from_slice(bytemuck::bytes_of(&r.params));
            let offset = u32::try_from((block.used + i as u64) * self.slot_bytes)
                .map_err(|_| Error::Unsupported("a parameter slot past 4 GiB".into()))?;
            dispatches.push((r, offset));
        }
        super::check_device(&self.device, &self.lost)?;
        super::in_scope_now(&self.device, &self.lost, "writing a bound op's parameters", || {
            self.queue.write_buffer(&block.buffer, block.used * self.slot_bytes, &bytes)
        })?;
        block.used += need;
        slots.by_count.insert(count, (b, dispatches));
        Ok(())
    }

    /// A block of `slots` parameter slots with a bind group per set.
    fn block(&self, slots: u64) -> Result<SlotBlock> {
        let size = slots
            .checked_mul(self.slot_bytes)
            .filter(|&s| s <= u32::MAX as u64)
            .ok_or_else(|| Error::Unsupported(format!("{slots} parameter slots are over 4 GiB")))?;
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("ninfer-wgpu bound params"),
            size,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let groups = self
            .parts
            .sets
            .iter()
            .map(|set| {
                let mut entries = vec![wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &buffer,
                        offset: 0,
                        size: NonZeroU64::new(PARAMS_BYTES),
                    }),
                }];
                for (i, b) in set.iter().enumerate() {
                    entries.push(wgpu::BindGroupEntry {
                        binding: i as u32 + 1,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &b.buffer,
                            offset: b.offset,
                            size: b.size,
                        }),
                    });
                }
                self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(&self.parts.label),
                    layout: &self.layout,
                    entries: &entries,
                })
            })
            .collect();
        Ok(SlotBlock { buffer, groups, slots, used: 0 })
    }

    /// The status words a bound gather writes (word 0: out-of-range requests, word 1: the largest
    /// such id), for an engine that reads them on the device; `None` for other ops.
    pub fn status_buffer(&self) -> Option<&wgpu::Buffer> {
        self.parts.status.as_ref()
    }

    /// Reads a bound gather's status (all zero for the other ops).
    pub async fn read_status(&self, gpu: &Gpu) -> Result<GatherStatus> {
        let Some(status) = &self.parts.status else { return Ok(GatherStatus { out_of_range: 0, largest_id: 0 }) };
        let words: Vec<u32> = gpu.read(DeviceSlice::new(status, 0, 2), 1).await?;
        Ok(GatherStatus { out_of_range: words[0], largest_id: words[1] })
    }

    /// Zeroes a bound gather's status before the next submission.
    pub fn clear_status(&self, gpu: &Gpu) -> Result<()> {
        match &self.parts.status {
            Some(status) => gpu.write(status, 0, &[0u32, 0]),
            None => Ok(()),
        }
    }
}

impl Gpu {
    /// The kernel a tiled product of `op` in the tiled `variant` takes: eight rows an invocation
    /// or four, as the options ask where the tall kernel exists, else the adapter's choice
    /// ([`capability::tiled_columns`]).
    pub(crate) fn tiled_columns(&self, op: Op, variant: Variant) -> Columns {
        match self.tall_tiles {
            Some(true) if Columns::tall_exists(op, variant) => Columns::TiledTall,
            Some(_) => Columns::Tiled,
            None => capability::tiled_columns(op, variant, &self.platform),
        }
    }

    /// Binds `Y = W X` in `profile` with the platform's fastest variant and kernels: up to
    /// `max_columns` columns of K values from `x`, their N outputs to `y` (column j at `y.offset +
    /// j * y.stride`). x's offset and stride are multiples of 4 elements (it is read as vec4).
    pub async fn bind_matmul(
        &self,
        weights: &GpuTensor,
        profile: Profile,
        x: DeviceSlice<'_, f32>,
        y: DeviceSlice<'_, f32>,
        max_columns: u32,
    ) -> Result<BoundOp> {
        self.bind_matmul_with(weights, profile, BindOptions::default(), x, y, max_columns).await
    }

    /// [`Gpu::bind_matmul`] with a chosen variant or crossover (tests run each).
    pub async fn bind_matmul_with(
        &self,
        weights: &GpuTensor,
        profile: Profile,
        options: BindOptions,
        x: DeviceSlice<'_, f32>,
        y: DeviceSlice<'_, f32>,
        max_columns: u32,
    ) -> Result<BoundOp> {
        self.check_alive()?;
        let desc = weights.desc();
        let op = profile.op();
        let best = capability::best_variant(desc.format, op, &self.platform);
        let variant = options.variant.unwrap_or(best);
        capability::check(desc.format, desc.layout, op, variant, Some(&self.platform))?;
        x.check_usage("matmul x")?;
        y.check_usage("matmul y")?;
        self.check_output(weights, y, &[x.buffer], "matmul")?;
        let io = [&x.operand(), &y.operand()];
        let limits = self.plan_limits();
        let tiled_from =
            options.tiled_from.or_else(|| capability::tiled_from(desc.format, op, variant, &self.platform));
        let (format, geometry, place) = (desc.format, weights.geometry(), weights.placement());
        let max = max_columns as u64;
        let counts = plan::ColumnCounts { max, tiled_from: tiled_from.map(u64::from) };
        let mut p = plan::bound_product(format, geometry, &limits, place, profile, io, counts)?;
        // The kernels its records can use, each compiled once per device: matvec's own for one
        // column with the default variant, the 8-column one, the tiled one past the crossover.
        let mut pipelines = HashMap::new();
        let mut tiled_columns = None;
        let key = |columns| KernelKey::new(format, op, variant, columns);
        if max_columns > 1 || variant != best {
            pipelines.insert(Kernel::Product, self.pipeline(key(Columns::UpToMax)).await?);
        }
        if p.tiled_from.is_some_and(|t| t <= max) {
            let tiled = capability::tiled_variant(variant, &self.platform);
            let columns = self.tiled_columns(op, tiled);
            pipelines.insert(Kernel::Tiled, self.pipeline(KernelKey::new(format, op, tiled, columns)).await?);
            tiled_columns = Some(columns);
            // TallOneColumn, where it is bound below, takes the same rows as TiledTall.
            p.tiled_rows = super::kernels::tiled_rows(columns);
            // One column takes the tall kernel's module of its own where the format has one.
            let own = Columns::TallOneColumn;
            if columns == Columns::TiledTall && own.exists(format, op, tiled) && p.tiled_from == Some(1) {
                pipelines.insert(Kernel::TiledOne, self.pipeline(KernelKey::new(format, op, tiled, own)).await?);
                p.tiled_one_column = true;
            }
        }
        let matvec = match variant == best {
            true => Some(self.pipeline(key(Columns::One)).await?),
            false => None,
        };
        let grid = self.grid_buffer(desc.format).await?;
        let q8 = match profile {
            Profile::A32 => None,
            Profile::A8 => {
                pipelines.insert(Kernel::Quantize, self.activation_pipeline(ActivationOp::QuantizeQ8_1).await?);
                Some(self.scoped_buffer(p.q8_words, "ninfer-wgpu q8_1 activation").await?)
            }
        };
        let input = match &q8 {
            Some(q8) => Bound::whole(q8),
            None => Bound::operand(x.buffer, &p.x),
        };
        let out = Bound::operand(y.buffer, &p.y);
        let mut sets: Vec<Set> = p
            .passes
            .iter()
            .map(|(planes, params)| self.set(weights, &grid, planes, params.vec0, &input, &out))
            .collect();
        if let Some(q8) = &q8 {
            let s = Bound::whole(&self.spare);
            let status = Bound::whole(&self.spare_status);
            sets.push([s.clone(), s.clone(), s.clone(), Bound::operand(x.buffer, &p.x), Bound::whole(q8), s, status]);
        }
        let label = format!("bound {} {:?}", key(Columns::UpToMax).label(), desc.shape);
        let plan = Plan::Product(p);
        let (max_count, tiled) = (max_columns as u64, tiled_columns);
        self.bound(Parts { label, plan, max_count, pipelines, matvec, tiled, sets, status: None }).await
    }

    /// Binds a gather of up to `max_rows` rows of `table`: request i's id is `ids`' element
    /// `ids.offset + i`, its K words go to `y` (row i at `y.offset + i * y.stride`). Ids are read
    /// on the device; one at or past N is never read from the table: its row is poisoned and
    /// counted in the op's status ([`BoundOp::read_status`]).
    pub async fn bind_gather(
        &self,
        table: &GpuTensor,
        ids: DeviceSlice<'_, u32>,
        y: DeviceSlice<'_, u32>,
        max_rows: u32,
    ) -> Result<BoundOp> {
        self.check_alive()?;
        let desc = table.desc();
        capability::check(desc.format, desc.layout, Op::Gather, Variant::Workgroup, Some(&self.platform))?;
        ids.check_usage("gather ids")?;
        y.check_usage("gather y")?;
        self.check_output(table, y, &[ids.buffer], "gather")?;
        let limits = self.plan_limits();
        let io = [&ids.operand(), &y.operand()];
        let p = plan::bound_gather(desc.format, table.geometry(), &limits, table.placement(), io, max_rows as u64)?;
        let pipeline = self.pipeline(KernelKey::new(desc.format, Op::Gather, Variant::Workgroup, Columns::One)).await?;
        let grid = self.grid_buffer(desc.format).await?;
        let status = self.scoped_buffer(2, "ninfer-wgpu gather status").await?;
        self.write(&status, 0, &[0u32, 0])?;
        let (input, out) = (Bound::operand(ids.buffer, &p.ids), Bound::operand(y.buffer, &p.y));
        let sets = p
            .windows
            .iter()
            .map(|(planes, params)| {
                let mut set = self.set(table, &grid, planes, params.vec0, &input, &out);
                set[6] = Bound::whole(&status);
                set
            })
            .collect();
        let label = format!("bound {}/gather {:?}", desc.format, desc.shape);
        let pipelines = HashMap::from([(Kernel::Gather, pipeline)]);
        let plan = Plan::Gather(p);
        self.bound(Parts {
            label,
            plan,
            max_count: max_rows as u64,
            pipelines,
            matvec: None,
            tiled: None,
            sets,
            status: Some(status),
        })
        .await
    }

    /// Binds a dequant of every weight into `y` (N·K words, C order), recorded with a count of 1.
    pub async fn bind_dequant(&self, weights: &GpuTensor, y: DeviceSlice<'_, u32>) -> Result<BoundOp> {
        self.check_alive()?;
        let desc = weights.desc();
        capability::check(desc.format, desc.layout, Op::Dequant, Variant::Workgroup, Some(&self.platform))?;
        y.check_usage("dequant y")?;
        self.check_output(weights, y, &[], "dequant")?;
        let limits = self.plan_limits();
        let p = plan::bound_dequant(desc.format, weights.geometry(), &limits, weights.placement(), &y.operand())?;
        let pipeline =
            self.pipeline(KernelKey::new(desc.format, Op::Dequant, Variant::Workgroup, Columns::One)).await?;
        let grid = self.grid_buffer(desc.format).await?;
        let (input, out) = (Bound::whole(&self.spare), Bound::operand(y.buffer, &p.y));
        let sets = p
            .sets
            .iter()
            .zip(&p.records)
            .map(|(planes, r)| self.set(weights, &grid, planes, r.params.vec0, &input, &out))
            .collect();
        let label = format!("bound {}/dequant {:?}", desc.format, desc.shape);
        let pipelines = HashMap::from([(Kernel::Dequant, pipeline)]);
        let plan = Plan::Dequant(p);
        self.bound(Parts { label, plan, max_count: 1, pipelines, matvec: None, tiled: None, sets, status: None }).await
    }

    /// Refuses an output that shares a buffer with the weights or an input: WebGPU forbids one
    /// buffer bound writable and read-only in one dispatch.
    fn check_output<T: Word>(
        &self,
        weights: &GpuTensor,
        y: DeviceSlice<'_, T>,
        inputs: &[&wgpu::Buffer],
        what: &str,
    ) -> Result<()> {
        if inputs.contains(&y.buffer) {
            return Err(Error::Unsupported(format!(
                "{what}: the output and the input are one buffer; a kernel cannot bind one buffer writable and read-only at once (WebGPU forbids it)"
            )));
        }
        if (0..weights.placement().segments.len()).any(|i| weights.buffer(i) == y.buffer) {
            return Err(Error::Unsupported(format!("{what}: the output buffer is the weights' own")));
        }
        Ok(())
    }

    /// A small storage buffer of `words` words, allocated inside an error scope.
    async fn scoped_buffer(&self, words: u64, label: &str) -> Result<wgpu::Buffer> {
        self.create_buffer(words.max(4), label).await
    }

    /// Bindings 1..=7 of a pass over `planes`.
    fn set(
        &self,
        weights: &GpuTensor,
        grid: &Option<wgpu::Buffer>,
        planes: &PlaneBindings,
        vec0: u32,
        input: &Bound,
        out: &Bound,
    ) -> Set {
        let plane = |i: usize| match (planes[i], grid) {
            (PlaneBinding::Grid, Some(grid)) => Bound::whole(grid),
            // A grid plane without a grid cannot be planned (`gguf_grid` decides both).
            (PlaneBinding::Grid, None) => Bound::whole(weights.buffer(0)),
            (PlaneBinding::Payload { segment, window }, _) => {
                Bound::range(weights.buffer(segment), window.start, window.size)
            }
        };
        let vec = match vec0 {
            0 => Bound::whole(&self.spare),
            _ => plane(0),
        };
        [plane(0), plane(1), plane(2), input.clone(), out.clone(), vec, Bound::whole(&self.spare_status)]
    }

    /// The bound op, with its first slot block (room for its largest and smallest counts)
    /// created inside an error scope, so a binding mistake is an error here, not at record.
    async fn bound(&self, parts: Parts) -> Result<BoundOp> {
        let align = self.platform.limits.min_uniform_buffer_offset_alignment as u64;
        let max_count = parts.max_count;
        let first = match &parts.plan {
            Plan::Product(p) => p.records(max_count)?.len() + p.records(1)?.len(),
            Plan::Gather(p) => p.records(max_count)?.len() + p.records(1)?.len(),
            Plan::Dequant(p) => p.records.len(),
        } as u64;
        let op = BoundOp {
            parts,
            slot_bytes: PARAMS_BYTES.div_ceil(align.max(1)) * align.max(1),
            slots: Mutex::new(Slots::default()),
            device: self.device.clone(),
            queue: self.queue.clone(),
            layout: self.layout.clone(),
            lost: self.lost.clone(),
        };
        let block = self.scoped(&format!("binding {}", op.parts.label), || op.block(first + SPARE_SLOTS)).await??;
        op.slots.lock().map_err(|_| poisoned())?.blocks.push(block);
        Ok(op)
    }
}
