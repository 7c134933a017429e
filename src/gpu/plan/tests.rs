//! Pass planning on the CPU, without an adapter.

use super::*;
use crate::format::Format;
use crate::gpu::kernels::{MAX_COLUMNS, WORDS_WG};
use crate::layout::PayloadGeometry;

fn limits(max_binding: u64, max_dim: u32) -> PlanLimits {
    PlanLimits { max_binding, max_buffer: 1 << 40, align: 256, max_workgroups_per_dimension: max_dim, vec4_loads: true }
}

fn geometry(format: Format, shape: &[usize], divisors: usize) -> PayloadGeometry {
    PayloadGeometry::new(format, format.layout(), shape, divisors).unwrap()
}

fn placed(g: &PayloadGeometry, l: &PlanLimits) -> Placement {
    place(g, g.bytes() as u64, l, Arrangement::RowByRow).unwrap()
}

fn plan_of(format: Format, shape: &[usize], request: Request, l: &PlanLimits) -> Result<Plan> {
    let g = geometry(format, shape, 1);
    plan(format, &g, request, l, &place(&g, g.bytes() as u64, l, Arrangement::RowByRow)?)
}

/// Every payload window starts aligned, fits the binding limit and stays inside its segment;
/// every output window inside its output buffer.
fn check_windows(p: &Plan, l: &PlanLimits, place: &Placement) {
    for pass in &p.passes {
        for plane in pass.planes {
            if let PlaneBinding::Payload { segment, window: w } = plane {
                assert_eq!(w.start % l.align, 0, "window start {} is aligned", w.start);
                assert!(w.size <= l.max_binding, "window of {} bytes fits {}", w.size, l.max_binding);
                assert!(w.start + w.size <= place.buffer_len(segment), "window ends inside its segment");
            }
        }
        let (o, w) = pass.out;
        assert!(w.start + w.size <= (p.outputs[o] * 4).max(4), "output window inside output buffer {o}");
        assert!(w.size <= l.max_binding && p.outputs[o] * 4 <= l.max_buffer.max(4));
        assert!(pass.groups[0] <= l.max_workgroups_per_dimension && pass.groups[1] <= l.max_workgroups_per_dimension);
        assert_eq!(pass.params.groups_x, pass.groups[0]);
    }
}

#[test]
fn windowed_dequant_covers_every_row_once_within_the_binding_limit() {
    let l = limits(1 << 16, 8);
    for (format, shape) in [
        (Format::Q4G64Fp16, vec![600, 4096]),
        (Format::Bf16, vec![300, 2001]),
        (Format::GgufQ6K, vec![40, 2048]),
        (Format::Fp8E4m3fnRowFp16, vec![70, 1001]),
    ] {
        let g = geometry(format, &shape, 1);
        let place = placed(&g, &l);
        let p = plan(format, &g, Request::Dequant, &l, &place).unwrap();
        assert!(p.passes.len() > 1, "{format}: {} passes under a 64 KiB binding", p.passes.len());
        check_windows(&p, &l, &place);
        let mut next = 0;
        for pass in &p.passes {
            assert_eq!(pass.params.row0, next, "{format}: passes are consecutive");
            assert!(pass.out.1.size <= l.max_binding, "{format}: output window fits");
            let groups = pass.groups[0] as u64 * pass.groups[1] as u64 * WORDS_WG as u64;
            assert!(
                groups >= pass.params.rows as u64 * pass.params.chunks as u64,
                "{format}: the dispatch covers every chunk"
            );
            next += pass.params.rows;
        }
        assert_eq!(next as usize, shape[0]);
        assert_eq!(p.out_words, (shape[0] * shape[1]) as u64);
    }
}

#[test]
fn nvfp4_passes_start_on_128_row_tiles() {
    // A 128-row tile of dequant output is 256 KiB; matmul windows hold about 1150 rows.
    let l = limits(300_000, 65535);
    let g = geometry(Format::Nvfp4, &[2048, 512], 2);
    for request in [Request::Dequant, Request::Matmul { columns: 3 }] {
        let p = plan(Format::Nvfp4, &g, request, &l, &placed(&g, &l)).unwrap();
        assert!(p.passes.len() > 1);
        for pass in &p.passes {
            assert_eq!(pass.params.row0 % 128, 0, "pass at row {}", pass.params.row0);
            assert_eq!(pass.params.aux1, 1024, "rows per divisor");
        }
    }
}

#[test]
fn matmul_lays_out_columns_back_to_back() {
    let l = limits(1 << 30, 65535);
    let p = plan_of(Format::Q8G32Fp16, &[10, 100], Request::Matmul { columns: 3 }, &l).unwrap();
    assert_eq!(p.out_words, 30);
    // K = 100 is padded to 4 chunks (128 values) per column.
    assert_eq!(p.x_words, 3 * 128);
    let pass = &p.passes[0];
    assert_eq!((pass.params.out_stride, pass.params.x_stride, pass.params.out_off), (10, 32, 0));
    assert_eq!(pass.out, (0, Window { start: 0, size: 120 }));
    for columns in [0, MAX_COLUMNS + 1] {
        match plan_of(Format::Q8G32Fp16, &[10, 100], Request::Matmul { columns }, &l) {
            Err(Error::Unsupported(m)) => assert!(m.contains("1..=8") && m.contains(&columns.to_string()), "{m}"),
            other => panic!("J = {columns}: {other:?}"),
        }
    }
}

/// What the gather kernel does with a plan: for each pass, request `in_off + i` (i < rows) whose
/// id lies in the pass's window writes output row `out_off / K + i` of its output buffer. The
/// source row each request's output got, asserting each is written exactly once.
fn gathered(p: &Plan, k: u64) -> Vec<Option<u32>> {
    let firsts: Vec<u64> = p.outputs.iter().scan(0, |at, &w| Some(std::mem::replace(at, *at + w / k))).collect();
    let mut seen = vec![None; p.index.len()];
    for pass in &p.passes {
        let q = pass.params;
        assert_eq!(q.out_stride as u64, k, "rows back to back");
        for i in 0..q.rows {
            let id = p.index[(q.in_off + i) as usize];
            if id >= q.row0 && id - q.row0 < q.span {
                let out = (firsts[pass.out.0] + q.out_off as u64 / k) as usize + i as usize;
                assert!(seen[out].is_none(), "output row {out} written once");
                seen[out] = Some(id);
            }
        }
    }
    seen
}

#[test]
fn gather_groups_requests_by_window_and_keeps_their_output_rows() {
    let l = limits(1 << 14, 65535);
    let rows: Vec<u32> = vec![599, 0, 599, 3, 300, 0, 17, 599];
    let g = geometry(Format::Q4G64Fp16, &[600, 256], 1);
    let place = placed(&g, &l);
    let p = plan(Format::Q4G64Fp16, &g, Request::Gather { rows: &rows }, &l, &place).unwrap();
    assert!(p.passes.len() > 1, "rows spread over several windows");
    check_windows(&p, &l, &place);
    let seen = gathered(&p, 256);
    assert_eq!(seen, rows.iter().map(|&r| Some(r)).collect::<Vec<_>>(), "every request maps to its source row");
    assert_eq!(p.out_words, rows.len() as u64 * 256);
}

#[test]
fn gather_refuses_a_row_past_n_naming_both() {
    let l = limits(1 << 30, 65535);
    match plan_of(Format::Int32, &[5, 3], Request::Gather { rows: &[1, 5] }, &l) {
        Err(Error::Shape { detail, .. }) => {
            assert!(detail.contains("row index 5") && detail.contains("N = 5"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_row_wider_than_the_binding_is_refused_with_both_sizes() {
    let l = limits(4096, 65535);
    match plan_of(Format::Fp32, &[2, 2000], Request::Dequant, &l) {
        Err(Error::Unsupported(m)) => assert!(m.contains("4096") && m.contains("window"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_row_whose_output_is_over_one_buffer_is_refused_before_anything_runs() {
    let l = PlanLimits { max_buffer: 1 << 12, ..limits(1 << 30, 65535) };
    // bf16 [2, 1100]: a 2200-byte payload row, a 4400-byte output row.
    match plan_of(Format::Bf16, &[2, 1100], Request::Dequant, &l) {
        Err(Error::Unsupported(m)) => assert!(m.contains("4400") && m.contains("4096"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A payload row over one buffer cannot be placed at all.
    let g = geometry(Format::Fp32, &[2, 1100], 1);
    match place(&g, g.bytes() as u64, &l, Arrangement::RowByRow) {
        Err(Error::Unsupported(m)) => assert!(m.contains("4400") && m.contains("4096"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// The placement covers every plane byte of every row exactly once, in segments of at most
/// one buffer, on the layout's row boundaries.
fn check_placement(g: &PayloadGeometry, l: &PlanLimits, place: &Placement) {
    let v = View::of(g).arranged(place.tiles.as_ref());
    let mut next = 0;
    for block in &place.blocks {
        assert_eq!(block.rows.start, next, "blocks are consecutive");
        assert_eq!(block.rows.start % v.row_quantum, 0, "blocks start on the row quantum");
        next = block.rows.end;
        for (i, p) in v.planes.iter().enumerate() {
            if let PlaneRef::Rows { offset, stride } = *p {
                let (segment, at) = block.planes[i].unwrap();
                assert_eq!(at, 0);
                assert_eq!(
                    place.segments[segment],
                    offset + block.rows.start * stride..offset + block.rows.end * stride,
                    "plane {i} of rows {:?}",
                    block.rows
                );
            }
        }
    }
    assert_eq!(next, v.rows, "every row placed");
    for i in 0..place.segments.len() {
        assert!(place.buffer_len(i) <= l.max_buffer, "segment {i} fits one buffer");
    }
}

#[test]
fn payloads_over_one_buffer_are_placed_in_row_blocks_per_plane_and_planned_within_them() {
    let l = PlanLimits { max_buffer: 1 << 16, ..limits(1 << 16, 65535) };
    for (format, shape, divisors) in [
        (Format::Q5G64Fp16, vec![600, 1000], 1),
        (Format::Nvfp4, vec![2048, 64], 2),
        (Format::Fp8E4m3fnRowBf16, vec![300, 701], 1),
        (Format::Fp8E4m3fnRowFp16, vec![300, 701], 1),
        (Format::GgufQ4K, vec![300, 512], 1),
        (Format::Bf16, vec![200, 333], 1),
    ] {
        let g = geometry(format, &shape, divisors);
        let place = placed(&g, &l);
        assert!(place.segments.len() > 1, "{format}: {} segments", place.segments.len());
        check_placement(&g, &l, &place);
        let rows: Vec<u32> = (0..shape[0] as u32).rev().step_by(7).chain([0, 0]).collect();
        for request in [Request::Dequant, Request::Matmul { columns: 2 }, Request::Gather { rows: &rows }] {
            let p = plan(format, &g, request, &l, &place).unwrap();
            check_windows(&p, &l, &place);
            for pass in &p.passes {
                let block = place.blocks.iter().find(|b| b.rows.contains(&(pass.params.row0 as u64))).unwrap();
                if request.op() != Op::Gather {
                    assert!(pass.params.row0 as u64 + pass.params.rows as u64 <= block.rows.end, "no pass straddles");
                }
            }
            assert_eq!(p.outputs.iter().sum::<u64>(), p.out_words, "{format}: outputs add up");
        }
    }
}

/// In row tiles, blocks and passes start on whole tiles, and each pass's `tiled_rows` counts the
/// rows of whole tiles in it: all of them but in the last pass over a tail of rows.
#[test]
fn row_tiles_keep_blocks_and_passes_on_whole_tiles() {
    let t = ROW_TILE as u64;
    for l in [
        limits(1 << 30, 65535),
        // Windowed: a few tiles per binding.
        limits(1 << 15, 65535),
        // Split over buffers too.
        PlanLimits { max_buffer: 1 << 15, ..limits(1 << 15, 65535) },
    ] {
        for (format, shape) in [(Format::GgufQ5_0, vec![1000, 64]), (Format::Q5G64Fp16, vec![300, 200])] {
            let g = geometry(format, &shape, 1);
            let place = place(&g, g.bytes() as u64, &l, Arrangement::RowTiles).unwrap();
            let whole = place.tiles.as_ref().expect("tiled").tiled_rows();
            assert_eq!(whole, shape[0] as u64 / t * t);
            if place.segments.len() > 1 {
                check_placement(&g, &l, &place);
            }
            let rows: Vec<u32> = (0..shape[0] as u32).rev().step_by(7).collect();
            for request in [Request::Dequant, Request::Matmul { columns: 1 }, Request::Gather { rows: &rows }] {
                let p = plan(format, &g, request, &l, &place).unwrap();
                check_windows(&p, &l, &place);
                for pass in &p.passes {
                    let (r0, q) = (pass.params.row0 as u64, &pass.params);
                    assert_eq!(r0 % t, 0, "{format} {request:?}: a pass from row {r0}");
                    let end = r0 + if request.op() == Op::Gather { q.span } else { q.rows } as u64;
                    assert_eq!(q.tiled_rows as u64, whole.min(end).saturating_sub(r0), "{format} rows {r0}..{end}");
                }
            }
        }
    }
    // A tile (with its dequant output) must fit a binding: else rows stay as stored.
    let g = geometry(Format::Q5G64Fp16, &[300, 200], 1);
    assert!(place(&g, g.bytes() as u64, &limits(1 << 14, 65535), Arrangement::RowTiles).unwrap().tiles.is_none());
    // And a tile's dequant dispatch must fit the workgroup limits (8 × 8 here).
    let g = geometry(Format::Q6G64Fp16, &[400, 4100], 1);
    assert!(place(&g, g.bytes() as u64, &limits(1 << 30, 8), Arrangement::RowTiles).unwrap().tiles.is_none());
    // As stored, and where no whole tile exists, nothing is tiled.
    let g = geometry(Format::GgufQ5_0, &[31, 64], 1);
    assert!(place(&g, g.bytes() as u64, &limits(1 << 30, 65535), Arrangement::RowTiles).unwrap().tiles.is_none());
    let g = geometry(Format::GgufQ5_0, &[64, 64], 1);
    let plain = place(&g, g.bytes() as u64, &limits(1 << 30, 65535), Arrangement::RowByRow).unwrap();
    assert!(plain.tiles.is_none());
    let p = plan(Format::GgufQ5_0, &g, Request::Matmul { columns: 1 }, &limits(1 << 30, 65535), &plain).unwrap();
    assert!(p.passes.iter().all(|p| p.params.tiled_rows == 0));
}

#[test]
fn gather_and_dequant_outputs_over_one_buffer_are_cut_by_requests_and_rows() {
    let l = PlanLimits { max_buffer: 1 << 14, ..limits(1 << 13, 65535) };
    // bf16 [300, 64]: 256 output bytes a row, 64 rows (16 KiB) per output buffer; gather's
    // buffers are bound whole, so 32 requests (8 KiB) each.
    let rows: Vec<u32> = (0..100).map(|i| (i * 37 % 300) as u32).collect();
    let p = plan_of(Format::Bf16, &[300, 64], Request::Gather { rows: &rows }, &l).unwrap();
    assert_eq!(p.outputs, [32 * 64, 32 * 64, 32 * 64, 4 * 64]);
    let seen = gathered(&p, 64);
    assert_eq!(seen, rows.iter().map(|&r| Some(r)).collect::<Vec<_>>());
    let p = plan_of(Format::Bf16, &[300, 64], Request::Dequant, &l).unwrap();
    assert_eq!(p.outputs, [64 * 64, 64 * 64, 64 * 64, 64 * 64, 44 * 64]);
    for pass in &p.passes {
        let o = pass.out.0 as u32;
        assert!(pass.params.row0 >= 64 * o && pass.params.row0 + pass.params.rows <= 64 * (o + 1));
    }
}

#[test]
fn large_dispatches_spread_over_two_dimensions() {
    let l = limits(1 << 30, 16);
    let p = plan_of(Format::Fp32, &[5000, 64], Request::Matmul { columns: 1 }, &l).unwrap();
    for pass in &p.passes {
        let groups = pass.groups[0] as u64 * pass.groups[1] as u64;
        assert!(groups * kernels::matmul_rows(Format::Fp32) as u64 >= pass.params.rows as u64);
        assert!(pass.groups[1] > 1 || p.passes.len() > 1);
    }
    assert_eq!(p.passes.iter().map(|p| p.params.rows as usize).sum::<usize>(), 5000);
}

#[test]
fn the_vec4_view_is_offered_only_for_windows_on_whole_vec4s() {
    let request = Request::Matmul { columns: 1 };
    let vec0 = |format, shape: &[usize], l: &PlanLimits| -> Vec<u32> {
        plan_of(format, shape, request, l).unwrap().passes.iter().map(|p| p.params.vec0).collect()
    };
    let l = limits(1 << 30, 65535);
    // 3 rows of 2 x 144 bytes, 9 rows of 2000 bytes: windows of whole vec4s.
    assert_eq!(vec0(Format::GgufQ4K, &[3, 512], &l), [1]);
    assert_eq!(vec0(Format::Bf16, &[9, 1000], &l), [1]);
    // 3 x 6 bytes, and one q6_K row of 210: the window ends inside a vec4. (3 x 10 bytes fill
    // two vec4s: the view is offered, and kernels see that rows of 10 bytes are not on vec4s.)
    assert_eq!(vec0(Format::Bf16, &[3, 3], &l), [0]);
    assert_eq!(vec0(Format::Bf16, &[3, 5], &l), [1]);
    assert_eq!(vec0(Format::GgufQ6K, &[1, 256], &l), [0]);
    // Windowed passes: each window decides for itself.
    let small = limits(1 << 16, 65535);
    let windows = vec0(Format::GgufQ4K, &[600, 4096], &small);
    assert!(windows.len() > 1 && windows.iter().all(|&v| v == 1), "{windows:?}");
    // Turned off, never.
    let words = PlanLimits { vec4_loads: false, ..l };
    assert_eq!(vec0(Format::GgufQ4K, &[3, 512], &words), [0]);
}

#[test]
fn an_operand_binds_from_an_aligned_start_and_is_refused_past_its_buffer() {
    let op = Operand { offset: 70, len: 10, stride: 12, buffer_words: 200 };
    // 3 runs end at word 70 + 2·12 + 10 = 104; the binding starts at byte 256 (word 64).
    assert_eq!(
        op.bind("x", 3, 256, 1 << 20, false).unwrap(),
        OperandBinding { start: 256, size: 104 * 4 - 256, first: 6 }
    );
    // vec4 reads: the binding ends on a whole vec4 (word 104 is one already).
    assert_eq!(op.bind("x", 3, 4, 1 << 20, true).unwrap(), OperandBinding { start: 272, size: 144, first: 2 });
    let err = |r: Result<OperandBinding>| r.unwrap_err().to_string();
    assert!(err(op.bind("x", 12, 4, 1 << 20, false)).contains("pass the buffer's end (200 elements)"));
    assert!(err(op.bind("x", 3, 4, 100, false)).contains("100-byte storage binding limit"));
    assert!(err(Operand { stride: 9, ..op }.bind("x", 2, 4, 1 << 20, false)).contains("overlap"));
    assert!(
        err(Operand { offset: u64::MAX - 4, ..op }.bind("x", 3, 4, 1 << 20, false)).contains("pass the buffer's end")
    );
    assert!(!Operand { offset: 2, ..op }.vec4_ready(1) && op.vec4_ready(1) == op.offset.is_multiple_of(4));
}

#[test]
fn a_bound_product_records_column_groups_over_every_row_pass() {
    // q4_K [600, 512] (288 bytes a row) over 64 KiB bindings: three row passes.
    let l = limits(1 << 16, 65535);
    let g = geometry(Format::GgufQ4K, &[600, 512], 1);
    let place = placed(&g, &l);
    let x = Operand { offset: 8, len: 512, stride: 516, buffer_words: 8 + 516 * 20 };
    let y = Operand { offset: 3, len: 600, stride: 601, buffer_words: 3 + 601 * 20 };
    for profile in [Profile::A32, Profile::A8] {
        let counts = ColumnCounts { max: 20, tiled_from: None };
        let p = bound_product(Format::GgufQ4K, &g, &l, &place, profile, [&x, &y], counts).unwrap();
        assert_eq!(p.passes.len(), 3, "three row passes");
        let records = p.records(19).unwrap();
        let (quantize, products): (Vec<&Record>, Vec<&Record>) =
            records.iter().partition(|r| r.kernel == Kernel::Quantize);
        assert_eq!(quantize.len(), usize::from(profile == Profile::A8));
        if let Some(q) = quantize.first() {
            assert_eq!((q.params.columns, q.set), (19, 3), "A8 quantizes every column once, from its own set");
        }
        // Groups of 8, 8 and 3 columns, each over every pass.
        let groups: Vec<(u32, usize)> = products.iter().map(|r| (r.params.columns, r.set)).collect();
        let expected: Vec<(u32, usize)> = [8, 8, 3].into_iter().flat_map(|j| (0..3).map(move |s| (j, s))).collect();
        assert_eq!(groups, expected);
        for (i, r) in products.iter().enumerate() {
            let j0 = 8 * (i as u64 / 3);
            let q = r.params;
            assert_eq!(q.out_off as u64, p.y.first + q.row0 as u64 + j0 * 601, "column {j0}'s outputs");
            let in_stride = match profile {
                Profile::A32 => 516 / 4,
                Profile::A8 => 16 * 12 / 4,
            };
            let in_first = if profile == Profile::A32 { p.x.first / 4 } else { 0 };
            assert_eq!((q.in_off as u64, q.x_stride as u64), (in_first + j0 * in_stride, in_stride));
        }
        assert!(p.records(21).unwrap_err().to_string().contains("1..=20"));
    }
}

#[test]
fn past_the_crossover_records_take_the_tiled_kernel_in_either_profile() {
    // 72 KiB of weights over 64 KiB windows: two row passes; 32 columns of x and y fit one.
    let l = limits(1 << 16, 65535);
    let g = geometry(Format::GgufQ4K, &[256, 512], 1);
    let place = placed(&g, &l);
    let x = Operand { offset: 0, len: 512, stride: 512, buffer_words: 512 * 32 };
    let y = Operand { offset: 0, len: 256, stride: 256, buffer_words: 256 * 32 };
    let counts = ColumnCounts { max: 32, tiled_from: Some(16) };
    let a32 = bound_product(Format::GgufQ4K, &g, &l, &place, Profile::A32, [&x, &y], counts).unwrap();
    assert!(a32.records(15).unwrap().iter().all(|r| r.kernel == Kernel::Product), "below the crossover");
    let tiled = a32.records(32).unwrap();
    assert_eq!(tiled.len(), a32.passes.len(), "one dispatch per row pass");
    assert!(a32.passes.len() > 1);
    for (i, r) in tiled.iter().enumerate() {
        assert_eq!((r.kernel, r.set, r.params.columns), (Kernel::Tiled, i, 32));
        let rows = (r.params.rows as u64).div_ceil(crate::gpu::kernels::TILED_ROWS as u64);
        assert_eq!(
            r.groups[0] as u64 * r.groups[1] as u64,
            rows.max(1),
            "a workgroup per {} rows",
            crate::gpu::kernels::TILED_ROWS
        );
        assert_eq!(r.groups[2], 32u32.div_ceil(crate::gpu::kernels::TILE_COLUMNS), "a z-workgroup per column tile");
    }
    let a8 = bound_product(Format::GgufQ4K, &g, &l, &place, Profile::A8, [&x, &y], counts).unwrap();
    let kinds: Vec<Kernel> = a8.records(32).unwrap().iter().map(|r| r.kernel).collect();
    assert_eq!(kinds, [Kernel::Quantize, Kernel::Tiled, Kernel::Tiled], "A8: the quantize pass, then tiled passes");
    // Where the binder marks one column as a kernel of its own (the tall kernel's, for q6_K),
    // one column takes it with the tiled kernel's geometry, and two or more the tiled kernel.
    let counts = ColumnCounts { max: 32, tiled_from: Some(1) };
    let mut one = bound_product(Format::GgufQ4K, &g, &l, &place, Profile::A32, [&x, &y], counts).unwrap();
    let plain = one.records(1).unwrap();
    assert!(plain.iter().all(|r| r.kernel == Kernel::Tiled));
    one.tiled_one_column = true;
    let own = one.records(1).unwrap();
    assert!(own.iter().all(|r| r.kernel == Kernel::TiledOne));
    let same = |r: &[Record]| r.iter().map(|r| (r.set, r.params, r.groups)).collect::<Vec<_>>();
    assert_eq!(same(&own), same(&plain), "the same dispatches and parameters");
    assert!(one.records(2).unwrap().iter().all(|r| r.kernel == Kernel::Tiled));
}
