//! The ninfer-wgpu command line: devices, capabilities, conformance and benchmarks on the
//! user's own GPU, and the `.ninfer` file commands. Spellings are fixed so scripts can rely on
//! them.

mod args;
mod device;
mod files;
mod inspect;
mod llm;
mod progress;
mod suite;
mod verify;

use args::{Cli, Command, GpuArgs};
use clap::Parser;
use ninfer_wgpu::gpu::Gpu;
use ninfer_wgpu::native::block_on;
use ninfer_wgpu::Error;
use std::process::ExitCode;

pub(crate) fn open(gpu: &GpuArgs) -> Result<Gpu, Error> {
    block_on(Gpu::open(&gpu.options()))
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> Result<(), Error> {
    println!("{}", serde_json::to_string_pretty(value).map_err(|e| Error::Io(e.to_string()))?);
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Devices { json } => device::devices(json),
        Command::Capabilities { gpu, json } => device::capabilities(&gpu, json),
        Command::Conformance { gpu, formats, seed, slow, cases, report, compare, json } => match &compare[..] {
            [a, b] => suite::compare_reports(a, b, json),
            _ => suite::run_conformance(&gpu, &formats, seed, slow, cases, json, report.as_deref()),
        },
        Command::Bench { gpu, formats, shape, columns, tiled_from, ops, profile, variant, runs, plot, json } => {
            let choice = suite::BenchChoice { ops: &ops, profiles: &profile, variant, runs, tiled_from };
            suite::run_bench(&gpu, &formats, shape, &columns, choice, json, plot.as_deref())
        }
        Command::Formats { json } => device::formats(json),
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
        Command::Verify { file, gpu, forward: true, tokens, profile, json, .. } => {
            let on = llm::On { device: files::Device::Gpu, profile, options: gpu.options(), context: 0 };
            llm::verify_forward(&file, tokens.as_deref(), &on, json)
        }
        Command::Verify { file, gpu, seed, report, json, skip_unsupported, .. } => {
            let out = verify::Outputs { json, html: report.as_deref() };
            verify::verify(&file, gpu.options(), seed, skip_unsupported, out)
        }
        Command::Logits { model, tokens, run, output } => llm::logits(&model, &tokens, &run.on(), output.as_deref()),
        Command::Perplexity { model, text_file, run, json } => llm::perplexity(&model, &text_file, &run.on(), json),
        Command::Generate {
            model,
            prompt,
            prompt_file,
            tokens,
            greedy: _,
            temperature,
            top_k,
            top_p,
            seed,
            chat,
            run,
            json,
        } => llm::prompt_text(prompt, prompt_file.as_deref()).and_then(|prompt| {
            let sampling = llm::sampling(temperature, top_k, top_p, seed)?;
            llm::generate(&model, &run.on(), &llm::Generation { prompt: &prompt, tokens, sampling, chat, json })
        }),
        Command::Import { input, output, skip_unsupported } => files::import(&input, &output, skip_unsupported),
        Command::Tokenize { model, text_file, special, output } => {
            llm::tokenize(&model, &text_file, special, output.as_deref())
        }
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
