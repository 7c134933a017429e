//! Pass planning on the CPU, without an adapter.

use super::*;
use crate::format::Format;
use crate::layout::PayloadGeometry;

fn limits(max_binding: u64, max_dim: u32) -> PlanLimits {
    PlanLimits { max_binding, max_buffer: 1 << 40, align: 256, max_workgroups_per_dimension: max_dim }
}

fn geometry(format: Format, shape: &[usize], divisors: usize) -> PayloadGeometry {
    PayloadGeometry::new(format, format.spec().layouts[0], shape, divisors).unwrap()
}

fn plan_of(format: Format, shape: &[usize], request: Request, l: &PlanLimits) -> Result<Plan> {
    let g = geometry(format, shape, 1);
    let len = (g.bytes() as u64).div_ceil(4) * 4;
    plan(format, &g, request, l, len)
}

/// Every payload window starts aligned, fits the binding limit and stays inside the buffer.
fn check_windows(p: &Plan, l: &PlanLimits, buffer_len: u64) {
    for pass in &p.passes {
        for plane in pass.planes {
            if let PlaneBinding::Payload(w) = plane {
                assert_eq!(w.start % l.align, 0, "window start {} is aligned", w.start);
                assert!(w.size <= l.max_binding, "window of {} bytes fits {}", w.size, l.max_binding);
                assert!(w.start + w.size <= buffer_len, "window ends inside the buffer");
            }
        }
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
        let len = (g.bytes() as u64).div_ceil(4) * 4;
        let p = plan(format, &g, Request::Dequant, &l, len).unwrap();
        assert!(p.passes.len() > 1, "{format}: {} passes under a 64 KiB binding", p.passes.len());
        check_windows(&p, &l, len);
        let mut next = 0;
        for pass in &p.passes {
            assert_eq!(pass.params.row0, next, "{format}: passes are consecutive");
            assert!(pass.out.size <= l.max_binding, "{format}: output window fits");
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
    let len = g.bytes() as u64;
    for request in [Request::Dequant, Request::Matmul { columns: 3 }] {
        let p = plan(Format::Nvfp4, &g, request, &l, len).unwrap();
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
    assert_eq!(pass.out, Window { start: 0, size: 120 });
    for columns in [0, MAX_COLUMNS + 1] {
        match plan_of(Format::Q8G32Fp16, &[10, 100], Request::Matmul { columns }, &l) {
            Err(Error::Unsupported(m)) => assert!(m.contains("1..=8") && m.contains(&columns.to_string()), "{m}"),
            other => panic!("J = {columns}: {other:?}"),
        }
    }
}

#[test]
fn gather_groups_requests_by_window_and_keeps_their_output_rows() {
    let l = limits(1 << 14, 65535);
    let rows: Vec<u32> = vec![599, 0, 599, 3, 300, 0, 17, 599];
    let g = geometry(Format::Q4G64Fp16, &[600, 256], 1);
    let len = g.bytes() as u64;
    let p = plan(Format::Q4G64Fp16, &g, Request::Gather { rows: &rows }, &l, len).unwrap();
    assert!(p.passes.len() > 1, "rows spread over several windows");
    check_windows(&p, &l, len);
    let mut seen = vec![None; rows.len()];
    for pass in &p.passes {
        for i in 0..pass.params.rows as usize {
            let at = 2 * (pass.params.index_off as usize + i);
            let (out, src) = (p.index[at] as usize, p.index[at + 1]);
            assert!(seen[out].is_none(), "output row {out} written once");
            seen[out] = Some(pass.params.row0 + src);
        }
    }
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
fn outputs_over_the_buffer_limit_are_refused_before_anything_runs() {
    let l = PlanLimits { max_buffer: 1 << 12, ..limits(1 << 30, 65535) };
    match plan_of(Format::Bf16, &[64, 64], Request::Dequant, &l) {
        Err(Error::Unsupported(m)) => assert!(m.contains("16384") && m.contains("4096"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn large_dispatches_spread_over_two_dimensions() {
    let l = limits(1 << 30, 16);
    let p = plan_of(Format::Fp32, &[5000, 64], Request::Matmul { columns: 1 }, &l).unwrap();
    for pass in &p.passes {
        let groups = pass.groups[0] as u64 * pass.groups[1] as u64;
        assert!(groups * MATMUL_ROWS as u64 >= pass.params.rows as u64);
        assert!(pass.groups[1] > 1 || p.passes.len() > 1);
    }
    assert_eq!(p.passes.iter().map(|p| p.params.rows as usize).sum::<usize>(), 5000);
}
