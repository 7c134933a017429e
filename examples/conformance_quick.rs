//! Runs the fast conformance tier on the default (or NINFER_WGPU_ADAPTER) adapter.
fn main() -> Result<(), ninfer_wgpu::Error> {
    let gpu = ninfer_wgpu::gpu::Gpu::open(&Default::default())?;
    let seed = ninfer_wgpu::testgen::Rng::seed_from_time();
    println!("{} seed {seed}", gpu.platform().summary());
    let natives: Vec<_> = ninfer_wgpu::Format::ALL.to_vec();
    let results = ninfer_wgpu::conformance::run(&gpu, &natives, seed, ninfer_wgpu::conformance::Tier::Fast, |r| {
        println!("{:<22} {:<8} {:<10} {:<12} {:?} {:.3} {}", r.format, r.op, r.variant, format!("{:?}", r.shape), r.verdict, r.max_error, r.detail)
    });
    let failed = results.iter().filter(|r| r.verdict != ninfer_wgpu::conformance::Verdict::Pass).count();
    println!("{} cases, {failed} not passing", results.len());
    Ok(())
}
