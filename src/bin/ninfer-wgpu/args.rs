//! The command line's grammar: every command, option and value parser, as clap reads them.
//! Spellings are fixed so scripts can rely on them.

use crate::files;
use clap::{Parser, Subcommand};
use ninfer_wgpu::encode::convert::Method;
use ninfer_wgpu::gpu::plan::Arrangement;
use ninfer_wgpu::gpu::{GpuOptions, Profile, Variant};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "ninfer-wgpu",
    version,
    about = "NInfer's weight formats on any GPU: exact dequant, fast matvec, conformance against the oracle"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
        /// Activation columns J for matmul, comma-separated (default: 1; any J up to 65536).
        #[arg(long, value_delimiter = ',')]
        columns: Vec<usize>,
        /// Products of at least N columns take the tiled kernel (default: the platform's
        /// crossover in the capability table; a large N keeps the 8-column kernel).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        tiled_from: Option<u32>,
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
    /// Teacher-forced logits of every position of a token file (`tokenize -o`): [tokens][vocab]
    /// little-endian f32 with -o, else each position's top token.
    Logits {
        model: PathBuf,
        #[arg(long)]
        tokens: PathBuf,
        #[command(flatten)]
        run: ModelArgs,
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// The perplexity of a UTF-8 text under a GGUF model (BOS added, every next token scored).
    Perplexity {
        model: PathBuf,
        #[arg(long)]
        text_file: PathBuf,
        #[command(flatten)]
        run: ModelArgs,
        #[arg(long)]
        json: bool,
    },
    /// Generate text after a prompt with a GGUF model, streamed as it comes. Greedy unless
    /// --temperature is given.
    Generate {
        model: PathBuf,
        #[arg(long, conflicts_with = "prompt_file", required_unless_present = "prompt_file")]
        prompt: Option<String>,
        #[arg(long)]
        prompt_file: Option<PathBuf>,
        /// The most tokens to generate (fewer where the model ends its text or turn).
        #[arg(short = 'n', long = "tokens", default_value_t = 64)]
        tokens: usize,
        /// Always the most likely token (the default).
        #[arg(long, conflicts_with_all = ["temperature", "top_k", "top_p", "seed"])]
        greedy: bool,
        /// Sample at this temperature (with --top-k and --top-p) instead of greedy.
        #[arg(long)]
        temperature: Option<f32>,
        #[arg(long, default_value_t = 40, requires = "temperature")]
        top_k: usize,
        #[arg(long, default_value_t = 0.95, requires = "temperature")]
        top_p: f32,
        /// The sampler's seed (default: from the clock; printed).
        #[arg(long, requires = "temperature")]
        seed: Option<u64>,
        /// Wrap the prompt in the model's turn markers and stop at the end of its turn.
        #[arg(long)]
        chat: bool,
        #[command(flatten)]
        run: ModelArgs,
        #[arg(long)]
        json: bool,
    },
    /// Encode a UTF-8 text file with a GGUF model's own vocabulary (its SentencePiece pieces),
    /// as llama.cpp encodes it: BOS first where the model adds it; special-token text (turn
    /// markers) is plain text unless --special. Writes little-endian i32 ids with -o, else the
    /// ids as one line of decimal numbers.
    Tokenize {
        model: PathBuf,
        #[arg(long)]
        text_file: PathBuf,
        /// Parse control-token text (`<start_of_turn>`, …) as those tokens.
        #[arg(long)]
        special: bool,
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
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
        /// Activation columns J in X (1..=65536; the tiled kernel from the platform's crossover).
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
        /// FILE is a GGUF model: judge its forward pass on this adapter against the CPU
        /// reference forward (mean KL divergence, top-1 agreement; exits 1 past the limit).
        #[arg(long)]
        forward: bool,
        /// With --forward: the tokens to run (little-endian i32, `tokenize -o`); default a
        /// built-in English paragraph.
        #[arg(long, requires = "forward")]
        tokens: Option<PathBuf>,
        /// With --forward: the products' arithmetic.
        #[arg(long, value_parser = parse_profile, default_value = "a32", requires = "forward")]
        profile: Profile,
        /// Random seed for activations and rows (default: NINFER_WGPU_SEED when set, else from the clock; always printed).
        #[arg(long)]
        seed: Option<u64>,
        /// Also write a self-contained HTML report (device facts, per-tensor table, chart).
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Exit 0 although some GGUF tensors have types the registry lacks (they are listed and
        /// counted as not checked either way).
        #[arg(long)]
        skip_unsupported: bool,
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
    /// Upload rows in row tiles (on) or as stored (off); default: the adapter's choice, row
    /// tiles where a format's one-column product decodes whole rows per invocation (CPU drivers).
    /// For comparing the two (docs/performance.md#row-tiles).
    #[arg(long, value_name = "on|off", value_parser = parse_row_tiles)]
    row_tiles: Option<Arrangement>,
    /// A32's tiled products with eight rows an invocation (on) or four (off); default: the
    /// adapter's choice, eight on CPU drivers (docs/performance.md#eight-rows-an-invocation-on-cpu-drivers).
    /// Only the subgroup variant has eight. For comparing the two.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    tall_tiles: Option<bool>,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{s}`: on or off")),
    }
}

fn parse_row_tiles(s: &str) -> Result<Arrangement, String> {
    match s {
        "on" => Ok(Arrangement::RowTiles),
        "off" => Ok(Arrangement::RowByRow),
        _ => Err(format!("`{s}`: on or off")),
    }
}

/// Where a model runs.
#[derive(clap::Args)]
pub struct ModelArgs {
    #[arg(long, value_enum, default_value = "gpu")]
    pub device: files::Device,
    /// The products' arithmetic on the GPU: a32 (exact weights, f32 activation) or a8.
    #[arg(long, value_parser = parse_profile, default_value = "a32")]
    pub profile: Profile,
    /// Positions a run may take, on the GPU (its KV cache) and the CPU alike (default: the
    /// model's context, at most 4096).
    #[arg(long, default_value_t = 0)]
    pub context: usize,
    #[command(flatten)]
    pub gpu: GpuArgs,
}

impl ModelArgs {
    pub fn on(&self) -> crate::llm::On {
        crate::llm::On {
            device: self.device,
            profile: self.profile,
            options: self.gpu.options(),
            context: self.context,
        }
    }
}

impl GpuArgs {
    pub fn options(&self) -> GpuOptions {
        GpuOptions {
            adapter: self.adapter.clone(),
            max_buffer_size: self.max_buffer_size,
            max_binding: self.max_binding,
            max_memory: self.max_memory,
            arrangement: self.row_tiles,
            tall_tiles: self.tall_tiles,
            ..Default::default()
        }
    }
}

pub fn parse_profile(s: &str) -> Result<Profile, String> {
    Profile::parse(s)
        .ok_or_else(|| format!("unknown profile `{s}`; valid: {}", Profile::ALL.map(|p| p.name()).join(", ")))
}

pub fn parse_variant(s: &str) -> Result<Variant, String> {
    Variant::ALL
        .into_iter()
        .find(|v| v.name() == s)
        .ok_or_else(|| format!("unknown variant `{s}`; valid: {}", Variant::ALL.map(|v| v.name()).join(", ")))
}

/// `--method`'s values are the library's method names (listed in `--help`).
pub fn method_parser() -> impl clap::builder::TypedValueParser<Value = Method> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Method::ALL.map(Method::name)).try_map(|s| s.parse::<Method>())
}
