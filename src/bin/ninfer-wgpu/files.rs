//! The file commands: `inspect`, `dequant`, `matvec`, `gather` and `quantize` over `.ninfer`
//! artifacts (all but `quantize` also read `.gguf` files).
//!
//! TENSOR names an object id or a binding (a GGUF tensor name for `.gguf`). A binding made of
//! several parts resolves to several row blocks; outputs are their concatenation, which is the
//! bound tensor's C order.

use clap::ValueEnum;
use ninfer_wgpu::container::{hex, ArtifactWriter, Binding};
use ninfer_wgpu::encode::convert::{convert, Method};
use ninfer_wgpu::encode::rules::Rules;
use ninfer_wgpu::error::clip;
use ninfer_wgpu::gguf::reader::GgufFile;
use ninfer_wgpu::gpu::{Gpu, GpuOptions, GpuTensor, Profile};
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::oracle::{self, Dequantized};
use ninfer_wgpu::{EncodedTensor, Error, Format, Validated};
use serde_json::json;
use std::path::Path;

/// Where a computation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Device {
    /// The scalar oracle: the exact reference.
    Cpu,
    /// A kernel on the chosen adapter.
    Gpu,
}

/// Writes `bytes` to `path`, or to standard output without one; returns where they went.
fn write_output(path: Option<&Path>, bytes: &[u8]) -> Result<String, Error> {
    match path {
        Some(p) => std::fs::write(p, bytes)
            .map(|_| p.display().to_string())
            .map_err(|e| Error::Io(format!("{}: {e}", p.display()))),
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(bytes).and_then(|_| out.flush()).map_err(|e| Error::Io(format!("standard output: {e}")))?;
            Ok("standard output".into())
        }
    }
}

pub(crate) fn open_gpu(options: GpuOptions) -> Result<Gpu, Error> {
    block_on(Gpu::open(&options))
}

/// The adapter `--device gpu` runs on, or `None` for the CPU oracle.
fn gpu_for(device: Device, options: GpuOptions) -> Result<Option<Gpu>, Error> {
    match device {
        Device::Cpu => Ok(None),
        Device::Gpu => open_gpu(options).map(Some),
    }
}

/// Uploads for `profile`'s products with a progress bar on a terminal (indicatif draws nothing
/// when stderr is not one).
fn upload(gpu: &Gpu, t: &Validated, what: &str, profile: Profile) -> Result<GpuTensor, Error> {
    let bar = indicatif::ProgressBar::new(t.payload().len() as u64).with_message(format!("uploading {what}"));
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let up = block_on(gpu.upload_with_progress(t, profile, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    }));
    bar.finish_and_clear();
    up
}

use ninfer_wgpu::model::Model;

/// Every piece validated before any device sees it: the CPU and GPU paths refuse the same files.
fn validated<'t, 'a>(pieces: &'t [EncodedTensor<'a>]) -> Result<Vec<Validated<'t, 'a>>, Error> {
    pieces.iter().map(EncodedTensor::validate).collect()
}

/// Little-endian bytes of decoded values (f32, or i32 for int32 tensors).
fn le_bytes(d: Dequantized) -> Vec<u8> {
    match d {
        Dequantized::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Dequantized::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// `dequant`: the logical tensor's values, C order, raw little-endian.
pub fn dequant(file: &Path, tensor: &str, device: Device, options: GpuOptions, output: &Path) -> Result<bool, Error> {
    use std::io::Write;
    let opened = Model::open(file)?;
    let pieces = opened.pieces(tensor)?;
    let pieces = validated(&pieces)?;
    let gpu = gpu_for(device, options)?;
    let io = |e: std::io::Error| Error::Io(format!("{}: {e}", output.display()));
    let mut out = std::io::BufWriter::new(std::fs::File::create(output).map_err(io)?);
    let mut values = 0u64;
    for (i, t) in pieces.iter().enumerate() {
        match &gpu {
            // The exact oracle builds the piece's values on the host.
            None => {
                let bytes = le_bytes(oracle::dequant(t)?);
                values += bytes.len() as u64 / 4;
                out.write_all(&bytes).map_err(io)?;
            }
            // The kernel's words (binary32; int32: the integer words) stream to the file a
            // bounded piece at a time, so the output may be larger than host memory.
            Some(gpu) => {
                let up = upload(gpu, t, &format!("{tensor} part {i}"), Profile::A32)?;
                block_on(gpu.dequant_to(&up, &mut |words| {
                    values += words.len() as u64;
                    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                    out.write_all(&bytes).map_err(io)
                }))?;
            }
        }
    }
    out.flush().map_err(io)?;
    eprintln!("{tensor}: {values} values to {}", output.display());
    Ok(true)
}

/// Most row indices `gather --rows @FILE` reads (64 MiB of u32).
const MAX_GATHER_ROWS: u64 = 1 << 24;

/// A zeroed vector of `len` items, or an error naming `what` when memory cannot hold it (an
/// allocation failure would abort the process).
fn zeroed<T: Clone + Default>(len: usize, what: &str) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Error::Unsupported(format!(
            "{what} needs {len} × {} bytes, more than this machine can allocate",
            size_of::<T>()
        ))
    })?;
    v.resize(len, T::default());
    Ok(v)
}

/// Little-endian 4-byte values from a regular file, at most `max` of them (read no further).
fn read_words(path: &Path, what: &str, max: u64) -> Result<Vec<[u8; 4]>, Error> {
    let bytes = ninfer_wgpu::files::read_at_most(path, max.saturating_mul(4), what)?;
    if bytes.len() % 4 != 0 {
        return Err(Error::Io(format!(
            "{}: {} bytes is not a whole number of little-endian {what} values",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]).collect())
}

/// `matvec`: `Y = W X` for a rank-2 tensor and J columns, raw little-endian f32.
/// Where a product runs, and in which profile on the GPU.
pub struct On {
    pub device: Device,
    pub profile: Profile,
    pub options: GpuOptions,
}

pub fn matvec(
    file: &Path,
    tensor: &str,
    x: &Path,
    columns: usize,
    on: On,
    output: Option<&Path>,
) -> Result<bool, Error> {
    let On { device, profile, options } = on;
    if (device, profile) == (Device::Cpu, Profile::A8) {
        return Err(Error::Unsupported(
            "--profile a8 is GPU arithmetic; the CPU oracle computes the exact product (use --device gpu)".into(),
        ));
    }
    let opened = Model::open(file)?;
    let stacked = opened.stacked(tensor, "matvec")?;
    let (n, k) = (stacked.n, stacked.k);
    let pieces = validated(&stacked.pieces)?;
    if columns == 0 || columns > ninfer_wgpu::gpu::MAX_HOST_COLUMNS {
        return Err(Error::Unsupported(format!(
            "--columns takes 1..={}, got {columns}",
            ninfer_wgpu::gpu::MAX_HOST_COLUMNS
        )));
    }
    // K and J are known, so X is never read past its 4·K·J bytes.
    let want = (k as u64).saturating_mul(columns as u64);
    let xs: Vec<f32> = read_words(x, "J columns of K f32 values", want)?.into_iter().map(f32::from_le_bytes).collect();
    if xs.len() != k * columns {
        return Err(Error::Shape {
            layout: "matvec",
            rule: "--x holds J columns of K f32 values",
            detail: format!(
                "J = {columns}, K = {k}: expected {} values, {} has {}",
                k * columns,
                x.display(),
                xs.len()
            ),
        });
    }
    // Each piece gives J columns of its rows; Y is J columns of all N rows.
    let mut y: Vec<f32> = zeroed(n.saturating_mul(columns), "the output")?;
    let gpu = gpu_for(device, options.clone())?;
    for (i, t) in pieces.iter().enumerate() {
        // The oracle accumulates in f64; the file format is f32, so y is rounded once here.
        let part: Vec<f32> = match &gpu {
            None => oracle::matmul(t, &xs, columns)?.y.iter().map(|&v| v as f32).collect(),
            Some(gpu) => block_on(gpu.matmul_in(&upload(gpu, t, tensor, profile)?, &xs, columns, profile))?,
        };
        stacked.place_columns(i, &part, columns, &mut y)?;
    }
    let to = write_output(output, &y.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>())?;
    eprintln!("{tensor}: {columns} column(s) of {n} outputs to {to}");
    if let Some(at) = y.iter().position(|v| !v.is_finite()) {
        return non_finite(&pieces, &xs, (at % n, at / n), y[at]);
    }
    Ok(true)
}

/// An output that is not finite. From a non-finite weight or activation that is arithmetic; from
/// finite operands it means a sum overflowed binary32 (on the GPU, possibly only a partial sum
/// of its reduction order), and the run fails with exit code 1 rather than pass it on silently.
fn non_finite(pieces: &[Validated], xs: &[f32], (row, column): (usize, usize), value: f32) -> Result<bool, Error> {
    let finite_weights = || {
        pieces.iter().try_fold(true, |all, t| {
            Ok::<_, Error>(
                all && match oracle::dequant(t)? {
                    Dequantized::F32(v) => v.iter().all(|w| w.is_finite()),
                    Dequantized::I32(_) => true,
                },
            )
        })
    };
    if !xs.iter().all(|x| x.is_finite()) || !finite_weights()? {
        eprintln!("note: y[{row}] of column {column} is {value}: the weights or activations are not all finite");
        return Ok(true);
    }
    eprintln!(
        "error: y[{row}] of column {column} is {value} although every weight and activation is finite: a binary32 sum overflowed"
    );
    Ok(false)
}

/// `--rows`: `3,17,5` or `@FILE` of little-endian u32.
fn parse_rows(spec: &str) -> Result<Vec<u32>, Error> {
    if let Some(path) = spec.strip_prefix('@') {
        return Ok(read_words(Path::new(path), "gather's u32 row indices", MAX_GATHER_ROWS)?
            .into_iter()
            .map(u32::from_le_bytes)
            .collect());
    }
    ninfer_wgpu::args::parse_row_list(spec)
}

/// `gather`: the values of the requested rows, in request order, raw little-endian.
pub fn gather(
    file: &Path,
    tensor: &str,
    rows: &str,
    device: Device,
    options: GpuOptions,
    output: Option<&Path>,
) -> Result<bool, Error> {
    let opened = Model::open(file)?;
    let stacked = opened.stacked(tensor, "gather")?;
    let k = stacked.k;
    let pieces = validated(&stacked.pieces)?;
    let rows = parse_rows(rows)?;
    // Each request goes to the piece holding its row; results are put back in request order.
    let routes = stacked.route(&rows)?;
    let mut out: Vec<[u8; 4]> = zeroed(rows.len().saturating_mul(k), "the gathered rows")?;
    let gpu = gpu_for(device, options.clone())?;
    for (t, mine) in pieces.iter().zip(&routes).filter(|(_, mine)| !mine.is_empty()) {
        let local: Vec<u32> = mine.iter().map(|&(_, r)| r).collect();
        let words: Vec<[u8; 4]> = match &gpu {
            None => match oracle::gather(t, &local)? {
                Dequantized::F32(v) => v.iter().map(|x| x.to_le_bytes()).collect(),
                Dequantized::I32(v) => v.iter().map(|x| x.to_le_bytes()).collect(),
            },
            Some(gpu) => block_on(gpu.gather(&upload(gpu, t, tensor, Profile::A32)?, &local))?
                .iter()
                .map(|w| w.to_le_bytes())
                .collect(),
        };
        for (slot, &(i, _)) in mine.iter().enumerate() {
            out[i * k..(i + 1) * k].copy_from_slice(&words[slot * k..(slot + 1) * k]);
        }
    }
    let to = write_output(output, out.as_flattened())?;
    eprintln!("{tensor}: {} row(s) of {k} values to {to}", rows.len());
    Ok(true)
}

/// The metadata every artifact this CLI writes carries: its name (the output's stem) and the
/// producing command.
fn produced(output: &Path, command: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut metadata = serde_json::Map::new();
    if let Some(stem) = output.file_stem().map(|s| s.to_string_lossy().into_owned()).filter(|s| !s.is_empty()) {
        metadata.insert("name".into(), json!(stem));
    }
    metadata.insert("producer".into(), json!(format!("ninfer-wgpu {} {command}", env!("CARGO_PKG_VERSION"))));
    metadata
}

/// What `quantize` converts and how: the target format and method, and the per-tensor rules.
pub struct QuantizeArgs<'a> {
    pub format: &'a str,
    pub method: Option<Method>,
    pub keep: &'a [String],
    pub format_for: &'a [String],
    pub vectors: Option<&'a str>,
}

/// `quantize`: a checkpoint (.npy, safetensors, or a safetensors index of shards) into an
/// artifact: float matrices to the target format, the rest direct (see `encode::rules`), each
/// tensor's provenance recorded.
pub fn quantize(input: &Path, output: &Path, args: &QuantizeArgs) -> Result<bool, Error> {
    let target: Format = args.format.parse()?;
    let vectors = args.vectors.map(str::parse).transpose()?;
    let rules = Rules::new(target, vectors, args.keep, args.format_for)?;
    let checkpoint = ninfer_wgpu::container::checkpoint::Checkpoint::open(input)?;
    // Every tensor's format is chosen before any conversion, so a rule error (an integer
    // tensor given a float format, say) stops the run before minutes of work.
    let mut plan = Vec::with_capacity(checkpoint.len());
    for (_, t) in checkpoint.tensors() {
        let (format, why) = rules.choose(&t.name, t.is_float(), t.shape.len())?;
        plan.push((format, why, t.data_bytes() as u64));
    }
    let dir = output.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut writer = ArtifactWriter::new().spool_in(dir)?;
    let bar = crate::progress::bytes(checkpoint.data_bytes(), "quantizing");
    for (i, (format, why, bytes)) in plan.into_iter().enumerate() {
        let (file, t) = checkpoint.read(i)?;
        bar.set_message(t.name.clone());
        let method = rules.method(format, args.method);
        let mut encoded =
            convert(&t, format, method).map_err(|e| Error::Unsupported(format!("{}: {e}", clip(&t.name))))?;
        encoded.provenance = encoded
            .provenance
            .with("source_file", file.to_string())
            .with("source_tensor", t.name.clone())
            .with("source_dtype", t.dtype())
            .with("rule", why);
        let desc = encoded.tensor.desc().clone();
        bar.suspend(|| {
            println!(
                "{:<32} {:<22} {:?} {} bytes ({}; {why})",
                t.name,
                desc.format,
                desc.shape,
                encoded.tensor.payload().len(),
                encoded.provenance.method
            )
        });
        writer.add_encoded(t.name.clone(), encoded)?;
        writer.bind(t.name.clone(), Binding::Object(t.name.clone()));
        bar.inc(bytes);
    }
    bar.finish_and_clear();
    writer.set_metadata(produced(output, "quantize"));
    let written = write_with_bar(&writer, output)?;
    println!(
        "wrote {} (artifact {}, {} tensors, {} payload bytes)",
        output.display(),
        hex(&written.artifact_id),
        checkpoint.len(),
        written.payload_bytes
    );
    Ok(true)
}

/// Writes an artifact with a byte progress bar.
fn write_with_bar(writer: &ArtifactWriter, output: &Path) -> Result<ninfer_wgpu::container::Written, Error> {
    let bar = crate::progress::bytes(0, "writing");
    let written = writer.write_with_progress(output, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    Ok(written)
}

/// `import`: a GGUF file's registered tensors, unchanged, into an artifact.
pub fn import(input: &Path, output: &Path, skip_unsupported: bool) -> Result<bool, Error> {
    let file = GgufFile::open(input)?;
    let mut imported = ninfer_wgpu::container::import::from_gguf(&file, skip_unsupported)?;
    let mut metadata = produced(output, "import");
    metadata.insert(
        "source_file".into(),
        json!(input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
    );
    imported.writer.extend_metadata(metadata);
    for (name, format, shape, bytes) in &imported.tensors {
        println!("{name:<32} {format:<22} {shape:?} {bytes} bytes (import_encoded)");
    }
    for (name, ty) in &imported.skipped {
        println!("{name:<32} skipped: ggml type {ty} is not registered");
    }
    let written = write_with_bar(&imported.writer, output)?;
    println!(
        "wrote {} (artifact {}, {} tensors, {} payload bytes)",
        output.display(),
        hex(&written.artifact_id),
        imported.tensors.len(),
        written.payload_bytes
    );
    Ok(true)
}
