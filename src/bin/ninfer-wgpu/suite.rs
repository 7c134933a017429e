//! The main jobs on one adapter: `conformance` (and `--compare` of two saved runs) and `bench`.

use crate::args::GpuArgs;
use crate::progress;
use crate::{json, open};
use ninfer_wgpu::args::{parse_formats, parse_ops, parse_shape};
use ninfer_wgpu::bench::{self, BenchRow, Timing};
use ninfer_wgpu::conformance::{self, Tier};
use ninfer_wgpu::gpu::{BindOptions, Op, Profile, Variant, MAX_HOST_COLUMNS};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{report, Error, Format};

pub fn run_conformance(
    args: &GpuArgs,
    formats: &[String],
    seed: Option<u64>,
    slow: bool,
    per_case: bool,
    as_json: bool,
    html: Option<&std::path::Path>,
) -> Result<bool, Error> {
    let formats = parse_formats(formats)?;
    let gpu = open(args)?;
    let seed = match seed {
        Some(seed) => seed,
        None => ninfer_wgpu::testgen::fresh_seed()?,
    };
    let tier = if slow { Tier::Slow } else { Tier::Fast };
    let per_case = per_case && !as_json;
    if !as_json {
        println!("conformance on {}", gpu.platform().summary());
        println!("seed {seed} (replay with --seed {seed})");
    }
    if per_case {
        println!(
            "{:<22} {:<10} {:<10} {:<14} {:<16} {:<18} {:>10}  detail",
            "format", "op", "variant", "shape", "criterion", "verdict", "max error"
        );
    }
    // A spinner on a terminal while the summary is being gathered (hidden off a TTY).
    let spinner = indicatif::ProgressBar::new_spinner();
    let planned = conformance::plan(&formats, gpu.platform(), tier);
    let results = block_on(conformance::run(&gpu, &planned, seed, |r| {
        if !per_case {
            spinner.set_message(format!("{} {} {}", r.format, r.op, r.variant));
            spinner.tick();
        }
        if per_case {
            let op = match r.op.as_str() {
                "matmul" => format!("matmul×{}", r.columns),
                op => op.to_string(),
            };
            println!(
                "{:<22} {:<10} {:<10} {:<14} {:<16} {:<18} {:>10.3e}  {}",
                r.format,
                op,
                r.variant,
                format!("{:?}", r.shape),
                r.criterion,
                format!("{:?}", r.verdict),
                r.max_error,
                r.detail
            );
        }
    }));
    spinner.finish_and_clear();
    let report = conformance::Report::new(gpu.platform(), seed, &formats, &planned, results);
    if let Some(path) = html {
        write_text(path, &report::conformance_html(&report))?;
        eprintln!("report written to {}", path.display());
    }
    if as_json {
        json(&report)?;
        return Ok(report.succeeded());
    }
    if !per_case {
        println!(
            "{:<22} {:<8} {:<10} {:<16} {:>6} {:>6} {:>10} {:>6} {:>11}",
            "format", "op", "variant", "criterion", "cases", "pass", "deviation", "fail", "worst/bound"
        );
        for s in &report.summary {
            println!(
                "{:<22} {:<8} {:<10} {:<16} {:>6} {:>6} {:>10} {:>6} {:>11.3e}",
                s.format,
                s.op,
                s.variant,
                s.criterion,
                s.cases,
                s.passed,
                s.platform_deviations,
                s.failed,
                s.worst_of_bound
            );
        }
        for r in report.exceptions() {
            println!("{:?}: {} {} {} {:?}: {}", r.verdict, r.format, r.op, r.variant, r.shape, r.detail);
        }
    }
    if !report.not_run.is_empty() {
        println!("not run (capability table):");
        for n in &report.not_run {
            println!("  {} {} {}: {}", n.format, n.op, n.variant, n.reason);
        }
    }
    // Fewer cases than planned is a failure whatever their verdicts: coverage lost, not passed.
    for short in report.shortfall() {
        println!("FAIL: {short}");
    }
    println!("{}", report.summary_line());
    Ok(report.succeeded())
}

/// Writes a whole text file (an HTML report, an SVG chart).
pub fn write_text(path: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Reads a saved `conformance --json` report.
pub fn read_report(path: &std::path::Path) -> Result<conformance::Report, Error> {
    let text = ninfer_wgpu::files::read_at_most(path, 256 << 20, "a conformance report")?;
    serde_json::from_slice(&text)
        .map_err(|e| Error::Io(format!("{}: not a `conformance --json` report: {e}", path.display())))
}

/// `conformance --compare A B`: where two saved reports differ. Exits 1 when a verdict differs.
pub fn compare_reports(a: &std::path::Path, b: &std::path::Path, as_json: bool) -> Result<bool, Error> {
    let (ra, rb) = (read_report(a)?, read_report(b)?);
    let diffs = conformance::compare(&ra, &rb);
    let verdicts = diffs.iter().filter(|d| d.verdicts_differ).count();
    if as_json {
        json(&serde_json::json!({ "a": ra.platform, "b": rb.platform, "differences": diffs }))?;
        return Ok(verdicts == 0);
    }
    println!("A: {} — {} ({})", a.display(), ra.platform.summary(), ra.summary_line());
    println!("B: {} — {} ({})", b.display(), rb.platform.summary(), rb.summary_line());
    if ra.seed != rb.seed {
        println!("note: different seeds, so different random inputs; error sizes compare only roughly");
    }
    let cell = |s: &Option<conformance::SummaryRow>| match s {
        Some(s) => format!("{:?} {}/{} {:.3}", s.verdict(), s.passed, s.cases, s.worst_of_bound),
        None => "not run".to_string(),
    };
    if !diffs.is_empty() {
        println!("{:<22} {:<8} {:<10} {:<30} {:<30} difference", "format", "op", "variant", "A", "B");
    }
    for d in &diffs {
        println!("{:<22} {:<8} {:<10} {:<30} {:<30} {}", d.format, d.op, d.variant, cell(&d.a), cell(&d.b), d.what);
    }
    println!(
        "{} rows compared, {verdicts} verdicts differ, {} error sizes differ",
        ra.summary.len().max(rb.summary.len()),
        diffs.len() - verdicts
    );
    Ok(verdicts == 0)
}

/// What `bench` times besides formats and shapes.
pub struct BenchChoice<'a> {
    pub ops: &'a [String],
    pub profiles: &'a [Profile],
    pub variant: Option<Variant>,
    pub runs: Option<u16>,
    /// Products: the column count from which the tiled kernel runs (default: the platform's).
    pub tiled_from: Option<u32>,
}

pub fn run_bench(
    args: &GpuArgs,
    formats: &[String],
    shape: Option<String>,
    columns: &[usize],
    choice: BenchChoice,
    as_json: bool,
    plot: Option<&std::path::Path>,
) -> Result<bool, Error> {
    let formats = parse_formats(formats)?;
    // `matmul` stands for the product in every chosen profile.
    let profiles = if choice.profiles.is_empty() { Profile::ALL.to_vec() } else { choice.profiles.to_vec() };
    let mut ops = Vec::new();
    for op in parse_ops(choice.ops)? {
        let expanded = match op {
            Op::Matmul | Op::MatmulA8 if choice.ops.is_empty() => profiles.iter().map(|p| p.op()).collect(),
            Op::Matmul => profiles.iter().map(|p| p.op()).collect(),
            Op::MatmulA8 | Op::Dequant | Op::Gather => vec![op],
        };
        for o in expanded {
            if !ops.contains(&o) {
                ops.push(o);
            }
        }
    }
    let columns = if columns.is_empty() { vec![1] } else { columns.to_vec() };
    if let Some(&bad) = columns.iter().find(|&&j| j == 0 || j > MAX_HOST_COLUMNS) {
        return Err(Error::Unsupported(format!("--columns takes 1..={MAX_HOST_COLUMNS}, got {bad}")));
    }
    let shapes = match shape {
        Some(s) => vec![parse_shape(&s)?],
        None => vec![(4096, 4096), (14336, 4096)],
    };
    for &(n, k) in &shapes {
        bench::check_shape(n, k)?;
    }
    let gpu = open(args)?;
    // `--runs` is 1 or more (its parser's range), so no count falls back to the default.
    let fixed = choice.runs.and_then(|n| std::num::NonZeroUsize::new(usize::from(n)));
    let timing = fixed.map_or_else(Timing::default, Timing::fixed);
    eprint!("measuring buffer-copy bandwidth…");
    let copy = bench::copy_bandwidth(&gpu, 256 << 20, timing)? / 1e9;
    eprintln!(" {copy:.2} GB/s");
    let mut rng = Rng::new(Rng::seed_from_time());
    let mut cases: Vec<(Format, Op, usize, (usize, usize))> = Vec::new();
    for &f in &formats {
        for &op in &ops {
            let js: &[usize] = if op.is_product() { &columns } else { &[1] };
            for &j in js {
                cases.extend(shapes.iter().map(|&s| (f, op, j, s)));
            }
        }
    }
    let mut rows: Vec<BenchRow> = Vec::new();
    let mut skipped = Vec::new();
    let bar = progress::bar(cases.len() as u64, "timing {pos}/{len} {bar:30} {msg}");
    for &(format, op, j, (n, k)) in &cases {
        bar.set_message(format!("{format} {}×{j} {n}x{k}", op.name()));
        let options = BindOptions { variant: choice.variant, tiled_from: choice.tiled_from };
        match bench::bench_case(&gpu, format, op, options, j, (n, k), copy, timing, &mut rng) {
            Ok(r) => rows.push(r),
            Err(e) => skipped.push(format!("{format} {}×{j} {n}x{k}: {e}", op.name())),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let Some(path) = plot {
        write_text(path, &report::bench_svg(&rows, copy, &gpu.platform().name)?)?;
        eprintln!("chart written to {}", path.display());
    }
    if as_json {
        json(
            &serde_json::json!({ "platform": gpu.platform(), "copy_gb_per_s": copy, "rows": rows, "skipped": skipped }),
        )?;
        return Ok(true);
    }
    println!("bench on {}", gpu.platform().summary());
    println!("buffer-copy bandwidth: {copy:.2} GB/s (256 MiB copy, median)");
    println!(
        "{:<22} {:<8} {:>4} {:<10} {:<6} {:>12} {:>12} {:>10} {:>9} {:>8}",
        "format", "op", "J", "variant", "kernel", "NxK", "bytes", "median ms", "GB/s", "vs copy"
    );
    for r in &rows {
        println!(
            "{:<22} {:<8} {:>4} {:<10} {:<6} {:>12} {:>12} {:>10.3} {:>9.2} {:>7.1}%",
            r.format,
            r.op,
            r.columns,
            r.variant,
            r.kernel.unwrap_or("-"),
            format!("{}x{}", r.n, r.k),
            r.encoded_bytes,
            r.median_ms,
            r.gb_per_s,
            100.0 * r.copy_ratio
        );
    }
    for s in skipped {
        println!("skipped: {s}");
    }
    Ok(true)
}
