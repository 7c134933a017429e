//! The ninfer-wgpu command line: devices, capabilities, conformance and benchmarks on the
//! user's own GPU, and the `.ninfer` file commands. Spellings are fixed so scripts can rely on
//! them.

mod files;
mod inspect;
mod progress;
mod verify;

use clap::{Parser, Subcommand};
use ninfer_wgpu::args::{parse_formats, parse_ops, parse_shape};
use ninfer_wgpu::bench::{self, BenchRow, Timing};
use ninfer_wgpu::conformance::{self, Tier};
use ninfer_wgpu::encode::convert::Method;
use ninfer_wgpu::gpu::{self, capability, Gpu, GpuOptions, Op, Profile, Variant, MAX_COLUMNS};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{report, Error, Format};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ninfer-wgpu",
    version,
    about = "NInfer's weight formats on any GPU: exact dequant, fast matvec, conformance against the oracle"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the adapters and their platform facts.
    Devices {
        #[arg(long)]
        json: bool,
    },
    /// Print the capability table for an adapter.
    Capabilities {
        #[command(flatten)]
        gpu: GpuArgs,
        #[arg(long)]
        json: bool,
    },
    /// Run every format × op against the oracle on fresh random words; non-zero exit on failure.
    Conformance {
        #[command(flatten)]
        gpu: GpuArgs,
        /// Comma-separated canonical format names (default: every format with a kernel).
        #[arg(long, value_delimiter = ',')]
        formats: Vec<String>,
        /// Random seed (default: NINFER_WGPU_SEED when set, else from the clock; always printed).
        #[arg(long)]
        seed: Option<u64>,
        /// Add the large shapes (K >= 14336, N >= 4096).
        #[arg(long)]
        slow: bool,
        /// One line per case as it runs, instead of the summary per format × op × variant.
        #[arg(long)]
        cases: bool,
        /// Also write a self-contained HTML report (device facts, summary, deviations, chart).
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Compare two saved `--json` reports instead of running; exits 1 when a verdict differs.
        #[arg(long, num_args = 2, value_names = ["A.json", "B.json"], conflicts_with_all = ["formats", "slow", "cases", "report"])]
        compare: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Time matvec and dequant per format; report GB/s of encoded bytes and the ratio to the
    /// adapter's buffer-copy bandwidth.
    Bench {
        #[command(flatten)]
        gpu: GpuArgs,
        #[arg(long, value_delimiter = ',')]
        formats: Vec<String>,
        /// NxK (default: 4096x4096 and 14336x4096).
        #[arg(long)]
        shape: Option<String>,
        /// Activation columns J for matmul, comma-separated (default: 1).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<usize>,
        /// Ops to time, comma-separated: dequant, matmul, gather (default: all).
        #[arg(long, value_delimiter = ',')]
        ops: Vec<String>,
        /// Profiles a matmul is timed in, comma-separated: a32 (exact weights, f32 activation),
        /// a8 (q8_1 activation, integer dot products; gguf types). Default: both.
        #[arg(long, value_delimiter = ',', value_parser = parse_profile)]
        profile: Vec<Profile>,
        /// A kernel variant to time instead of the fastest supported one (workgroup, subgroup,
        /// emulated-dot).
        #[arg(long, value_parser = parse_variant)]
        variant: Option<Variant>,
        /// Exactly N timed runs after one warm-up, whatever they take (default: at least 5 runs
        /// and 0.5 s). A fixed count lets an instruction counter divide by the dispatches it saw
        /// (tools/lavapipe-icount.sh).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        runs: Option<u16>,
        /// Also draw GB/s and the copy-bandwidth ratio per format as an SVG chart.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print the format registry.
    Formats {
        #[arg(long)]
        json: bool,
    },
    /// List a .ninfer artifact's (or a .gguf file's) tensors with capability status, and the artifact's files, resources, bindings
    /// and uses.
    Inspect {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        /// Adapter whose capability status is shown (default: as for the other commands).
        #[command(flatten)]
        gpu: GpuArgs,
    },
    /// Write a tensor's values as raw little-endian f32 (int32 tensors: i32), C order.
    Dequant {
        file: PathBuf,
        /// An object id or binding name (.ninfer), or a tensor name (.gguf).
        tensor: String,
        /// cpu: the exact oracle; gpu: the kernel on the chosen adapter.
        #[arg(long, value_enum, default_value = "cpu")]
        device: files::Device,
        #[command(flatten)]
        gpu: GpuArgs,
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Write Y = W X as raw little-endian f32 for a rank-2 tensor: X is J columns of K raw f32
    /// values back to back, Y is J columns of N values back to back (J = 1: y = W x). Exits 1
    /// when an output is not finite although every weight and activation is (a sum overflowed).
    Matvec {
        file: PathBuf,
        /// An object id or binding name (.ninfer), or a tensor name (.gguf).
        tensor: String,
        #[arg(long)]
        x: PathBuf,
        /// Activation columns J in X (1..=8).
        #[arg(long, default_value_t = 1)]
        columns: usize,
        #[arg(long, value_enum, default_value = "cpu")]
        device: files::Device,
        /// The product's arithmetic on the GPU: a32 (exact weights, f32 activation) or a8
        /// (activation quantized to q8_1, integer dot products; gguf types).
        #[arg(long, value_parser = parse_profile, default_value = "a32")]
        profile: Profile,
        #[command(flatten)]
        gpu: GpuArgs,
        /// Output file (default: standard output).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Write the values of chosen rows (embedding lookup) as raw little-endian f32 (int32
    /// tensors: i32), in request order.
    Gather {
        file: PathBuf,
        /// An object id or binding name (.ninfer), or a tensor name (.gguf).
        tensor: String,
        /// Row indices: `3,17,5`, or `@FILE` of little-endian u32 values.
        #[arg(long)]
        rows: String,
        #[arg(long, value_enum, default_value = "cpu")]
        device: files::Device,
        #[command(flatten)]
        gpu: GpuArgs,
        /// Output file (default: standard output).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Check every tensor of a .ninfer or .gguf file on the GPU against the oracle: dequant by
    /// its criterion, gather and matmul (2 random columns, A32) for matrices. Exits 1 on any
    /// failure.
    Verify {
        file: PathBuf,
        #[command(flatten)]
        gpu: GpuArgs,
        /// Random seed for activations and rows (default: NINFER_WGPU_SEED when set, else from the clock; always printed).
        #[arg(long)]
        seed: Option<u64>,
        /// Also write a self-contained HTML report (device facts, per-tensor table, chart).
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Import a GGUF file into a .ninfer artifact: every tensor of a registered type keeps its
    /// bytes (gguf_* blocks, F32/BF16/I32 words), bound under its GGUF name; the GGUF metadata
    /// goes into the artifact's metadata.
    Import {
        input: PathBuf,
        output: PathBuf,
        /// Import the registered tensors and list the others, instead of refusing the file.
        #[arg(long)]
        skip_unsupported: bool,
    },
    /// Convert a checkpoint (.npy, safetensors, or a *.safetensors.index.json of shards) into a
    /// .ninfer artifact: float matrices to --format, other float tensors to --vectors, integers
    /// to int32 (range checked), overridable by --keep and --format-for; provenance recorded.
    Quantize {
        input: PathBuf,
        output: PathBuf,
        /// Target format: q4_g64_fp16, q5_g64_fp16, q6_g64_fp16, q8_g32_fp16,
        /// fp8_e4m3fn_row_bf16, fp8_e4m3fn_row_fp16, bf16 or fp32.
        #[arg(long)]
        format: String,
        /// Conversion method (default: grouped_absmax for grouped formats, fp8_row_maxabs for
        /// fp8 rows; bf16 and fp32 take none).
        #[arg(long, value_parser = method_parser())]
        method: Option<Method>,
        /// Keep tensors whose name matches this glob in a direct format (repeatable).
        #[arg(long, value_name = "PATTERN")]
        keep: Vec<String>,
        /// Give tensors whose name matches PATTERN this format (repeatable; first match wins).
        #[arg(long, value_name = "PATTERN=FORMAT")]
        format_for: Vec<String>,
        /// The direct format of float tensors that are not matrices (or are kept): fp32 (exact
        /// from f32, f16 and bf16) or bf16 (default: --format when that is fp32 or bf16, else
        /// fp32).
        #[arg(long)]
        vectors: Option<String>,
    },
}

/// How every GPU command picks and limits its device.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GpuArgs {
    /// Backend (vulkan, gl, metal, dx12), a substring of the adapter's name (llvmpipe, …), or
    /// `backend/name` (default: NINFER_WGPU_ADAPTER, else the most capable adapter).
    #[arg(long)]
    adapter: Option<String>,
    /// Lower the device's max_buffer_size to BYTES (a browser's 256 MiB, say); tensors and
    /// outputs larger than one buffer are split. Refused above the adapter's own limit.
    #[arg(long, value_name = "BYTES")]
    max_buffer_size: Option<u64>,
    /// Lower the device's max_storage_buffer_binding_size to BYTES (kernels then run in
    /// windowed passes). Refused above the adapter's own limit.
    #[arg(long, value_name = "BYTES")]
    max_binding: Option<u64>,
    /// The most device memory one tensor's buffers may take; larger tensors are refused before
    /// anything is allocated (wgpu reports no memory budget of its own).
    #[arg(long, value_name = "BYTES")]
    max_memory: Option<u64>,
}

impl GpuArgs {
    pub fn options(&self) -> GpuOptions {
        GpuOptions {
            adapter: self.adapter.clone(),
            max_buffer_size: self.max_buffer_size,
            max_binding: self.max_binding,
            max_memory: self.max_memory,
            ..Default::default()
        }
    }
}

fn open(gpu: &GpuArgs) -> Result<Gpu, Error> {
    block_on(Gpu::open(&gpu.options()))
}

fn json<T: serde::Serialize>(value: &T) -> Result<(), Error> {
    println!("{}", serde_json::to_string_pretty(value).map_err(|e| Error::Io(e.to_string()))?);
    Ok(())
}

fn devices(as_json: bool) -> Result<bool, Error> {
    let list = block_on(gpu::adapters());
    if as_json {
        json(&list.iter().map(|a| &a.platform).collect::<Vec<_>>())?;
        return Ok(true);
    }
    if list.is_empty() {
        println!("no adapters found");
    }
    for (i, a) in list.iter().enumerate() {
        let p = &a.platform;
        println!("[{i}] {}", p.summary());
        println!(
            "    vendor {:#06x} device {:#06x}; features: {}",
            p.vendor,
            p.device,
            if p.features.is_empty() { "none".to_string() } else { p.features.join(", ") }
        );
        println!(
            "    max buffer {} B, max storage binding {} B, storage offset alignment {}, workgroups/dim {}, subgroup size {}..{}",
            p.limits.max_buffer_size, p.limits.max_storage_buffer_binding_size, p.limits.min_storage_buffer_offset_alignment, p.limits.max_compute_workgroups_per_dimension, p.subgroup_min_size, p.subgroup_max_size
        );
    }
    Ok(true)
}

fn capabilities(args: &GpuArgs, as_json: bool) -> Result<bool, Error> {
    let gpu = open(args)?;
    let rows = capability::table(Some(gpu.platform()));
    if as_json {
        json(&serde_json::json!({ "platform": gpu.platform(), "rows": rows }))?;
        return Ok(true);
    }
    println!("{}", gpu.platform().summary());
    println!(
        "probes: subnormal results flushed: {:?}; subgroups contiguous: {:?}",
        gpu.platform().probes.flushes_subnormal_results,
        gpu.platform().probes.subgroups_contiguous
    );
    for broken in &gpu.platform().probes.broken {
        println!("probe answered neither way: {broken}");
    }
    println!("{:<22} {:<26} {:<8} {:<10} status", "format", "layout", "op", "variant");
    for r in rows {
        let status = match r.status {
            capability::Status::Supported => "supported".to_string(),
            capability::Status::Unsupported(reason) => format!("unsupported: {reason}"),
        };
        println!("{:<22} {:<26} {:<8} {:<10} {status}", r.format, r.layout, r.op, r.variant);
    }
    Ok(true)
}

fn run_conformance(
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
fn write_text(path: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::Io(format!("{}: {e}", path.display())))
}

/// Reads a saved `conformance --json` report.
fn read_report(path: &std::path::Path) -> Result<conformance::Report, Error> {
    let text = ninfer_wgpu::files::read_at_most(path, 256 << 20, "a conformance report")?;
    serde_json::from_slice(&text)
        .map_err(|e| Error::Io(format!("{}: not a `conformance --json` report: {e}", path.display())))
}

/// `conformance --compare A B`: where two saved reports differ. Exits 1 when a verdict differs.
fn compare_reports(a: &std::path::Path, b: &std::path::Path, as_json: bool) -> Result<bool, Error> {
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
struct BenchChoice<'a> {
    ops: &'a [String],
    profiles: &'a [Profile],
    variant: Option<Variant>,
    runs: Option<u16>,
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::parse(s)
        .ok_or_else(|| format!("unknown profile `{s}`; valid: {}", Profile::ALL.map(|p| p.name()).join(", ")))
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    Variant::ALL
        .into_iter()
        .find(|v| v.name() == s)
        .ok_or_else(|| format!("unknown variant `{s}`; valid: {}", Variant::ALL.map(|v| v.name()).join(", ")))
}

fn run_bench(
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
    if let Some(&bad) = columns.iter().find(|&&j| j == 0 || j > MAX_COLUMNS) {
        return Err(Error::Unsupported(format!("--columns takes 1..={MAX_COLUMNS}, got {bad}")));
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
        match bench::bench_case(&gpu, format, op, choice.variant, j, (n, k), copy, timing, &mut rng) {
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
        "{:<22} {:<8} {:>3} {:<10} {:>12} {:>12} {:>10} {:>9} {:>8}",
        "format", "op", "J", "variant", "NxK", "bytes", "median ms", "GB/s", "vs copy"
    );
    for r in &rows {
        println!(
            "{:<22} {:<8} {:>3} {:<10} {:>12} {:>12} {:>10.3} {:>9.2} {:>7.1}%",
            r.format,
            r.op,
            r.columns,
            r.variant,
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

/// Where a ggml block keeps its binary16 multipliers, for scripts that make valid blocks
/// (tests/independent/gguf_fixtures.py).
fn f16_fields(f: ninfer_wgpu::format::F16Fields) -> serde_json::Value {
    match f {
        ninfer_wgpu::format::F16Fields::At(at) => serde_json::json!({ "at": at }),
        ninfer_wgpu::format::F16Fields::TopNibbles(at) => serde_json::json!({ "top_nibbles": at }),
    }
}

/// `--method`'s values are the library's method names (listed in `--help`).
fn method_parser() -> impl clap::builder::TypedValueParser<Value = Method> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Method::ALL.map(Method::name)).try_map(|s| s.parse::<Method>())
}

fn formats(as_json: bool) -> Result<bool, Error> {
    let rows: Vec<serde_json::Value> = Format::ALL
        .into_iter()
        .map(|f| {
            let s = f.spec();
            serde_json::json!({ "name": s.name, "category": format!("{:?}", s.category), "code_bits": s.code_bits, "geometry": format!("{:?}", s.geometry), "ggml_type": s.gguf.map(|t| t.id), "ggml_name": s.gguf.map(|t| t.ggml_name), "ggml_f16_fields": s.gguf.map(|t| f16_fields(t.f16)), "bits_per_weight": f.bits_per_weight(), "layouts": f.layouts().iter().map(|l| l.name()).collect::<Vec<_>>() })
        })
        .collect();
    if as_json {
        json(&rows)?;
        return Ok(true);
    }
    println!("{:<22} {:<18} {:>8} {:>6}  {:<26} geometry", "format", "category", "bits/w", "ggml", "layout");
    for f in Format::ALL {
        let s = f.spec();
        println!(
            "{:<22} {:<18} {:>8.4} {:>6}  {:<26} {:?}",
            s.name,
            format!("{:?}", s.category),
            f.bits_per_weight(),
            s.gguf.map(|t| t.id.to_string()).unwrap_or_default(),
            f.layout().name(),
            s.geometry
        );
    }
    Ok(true)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Devices { json } => devices(json),
        Command::Capabilities { gpu, json } => capabilities(&gpu, json),
        Command::Conformance { gpu, formats, seed, slow, cases, report, compare, json } => match &compare[..] {
            [a, b] => compare_reports(a, b, json),
            _ => run_conformance(&gpu, &formats, seed, slow, cases, json, report.as_deref()),
        },
        Command::Bench { gpu, formats, shape, columns, ops, profile, variant, runs, plot, json } => {
            let choice = BenchChoice { ops: &ops, profiles: &profile, variant, runs };
            run_bench(&gpu, &formats, shape, &columns, choice, json, plot.as_deref())
        }
        Command::Formats { json } => formats(json),
        Command::Inspect { file, json, gpu } => inspect::inspect(&file, gpu.options(), json),
        Command::Dequant { file, tensor, device, gpu, output } => {
            files::dequant(&file, &tensor, device, gpu.options(), &output)
        }
        Command::Matvec { file, tensor, x, columns, device, profile, gpu, output } => {
            let on = files::On { device, profile, options: gpu.options() };
            files::matvec(&file, &tensor, &x, columns, on, output.as_deref())
        }
        Command::Gather { file, tensor, rows, device, gpu, output } => {
            files::gather(&file, &tensor, &rows, device, gpu.options(), output.as_deref())
        }
        Command::Quantize { input, output, format, method, keep, format_for, vectors } => {
            let args = files::QuantizeArgs {
                format: &format,
                method,
                keep: &keep,
                format_for: &format_for,
                vectors: vectors.as_deref(),
            };
            files::quantize(&input, &output, &args)
        }
        Command::Verify { file, gpu, seed, report, json } => {
            verify::verify(&file, gpu.options(), seed, verify::Outputs { json, html: report.as_deref() })
        }
        Command::Import { input, output, skip_unsupported } => files::import(&input, &output, skip_unsupported),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
