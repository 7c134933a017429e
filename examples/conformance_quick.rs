//! Runs the fast conformance tier on the default (or NINFER_WGPU_ADAPTER) adapter.
use ninfer_wgpu::native::block_on;

fn main() -> Result<(), ninfer_wgpu::Error> {
    let gpu = block_on(ninfer_wgpu::gpu::Gpu::open(&Default::default()))?;
    let seed = ninfer_wgpu::testgen::Rng::seed_from_time();
    println!("{} seed {seed}", gpu.platform().summary());
    let formats: Vec<_> = ninfer_wgpu::Format::ALL.to_vec();
    let planned = ninfer_wgpu::conformance::plan(&formats, gpu.platform(), ninfer_wgpu::conformance::Tier::Fast);
    let results = block_on(ninfer_wgpu::conformance::run(&gpu, &planned, seed, |r| {
        println!(
            "{:<22} {:<8} {:>2} {:<10} {:<12} {:?} {:.3} {}",
            r.format,
            r.op,
            r.columns,
            r.variant,
            format!("{:?}", r.shape),
            r.verdict,
            r.max_error,
            r.detail
        )
    }));
    let failed = results.iter().filter(|r| r.verdict != ninfer_wgpu::conformance::Verdict::Pass).count();
    println!("{} cases, {failed} not passing", results.len());
    Ok(())
}
