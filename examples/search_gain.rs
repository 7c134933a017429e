//! Measures grouped_search's weighted squared-error reduction over grouped_absmax per format on
//! Gaussian and heavy-tailed (Student-t, 3 degrees of freedom) matrices, uniform importance.
//! Run: cargo run --release --example search_gain [SEED]

use ninfer_wgpu::encode::grouped::{grouped_absmax, grouped_search, SearchOptions};
use ninfer_wgpu::encode::Source;
use ninfer_wgpu::oracle::{dequant, Dequantized};
use ninfer_wgpu::testgen::Rng;
use ninfer_wgpu::{EncodedTensor, Format};

fn gaussian(rng: &mut Rng) -> f32 {
    // Box–Muller from two uniforms in (0, 1].
    let u1 = (rng.next_u32() as f64 + 1.0) / 4294967296.0;
    let u2 = rng.next_u32() as f64 / 4294967296.0;
    ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
}

fn student_t3(rng: &mut Rng) -> f32 {
    let z = gaussian(rng) as f64;
    let chi2: f64 = (0..3).map(|_| (gaussian(rng) as f64).powi(2)).sum();
    (z / (chi2 / 3.0).sqrt()) as f32
}

fn sq_error(t: &EncodedTensor, x: &[f32]) -> f64 {
    let Dequantized::F32(v) = dequant(t).expect("valid") else { unreachable!() };
    v.iter().zip(x).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum()
}

fn main() {
    let seed = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2026);
    let (n, k) = (256, 1024);
    println!("seed {seed}, [{n}, {k}] per matrix; error = Σ (w - ŵ)², uniform importance");
    println!(
        "{:<14} {:<13} {:>14} {:>14} {:>10} {:>14} {:>10}",
        "format", "matrix", "absmax", "search", "reduction", "search ±scale", "reduction"
    );
    for (name, draw) in [("gaussian", gaussian as fn(&mut Rng) -> f32), ("student-t(3)", student_t3)] {
        let mut rng = Rng::new(seed);
        let x: Vec<f32> = (0..n * k).map(|_| draw(&mut rng)).collect();
        for format in [Format::Q4G64Fp16, Format::Q5G64Fp16, Format::Q6G64Fp16, Format::Q8G32Fp16] {
            let a = sq_error(&grouped_absmax(format, n, k, Source::F32(&x)).unwrap().tensor, &x);
            let s =
                sq_error(&grouped_search(format, n, k, Source::F32(&x), SearchOptions::default()).unwrap().tensor, &x);
            let sn = sq_error(
                &grouped_search(
                    format,
                    n,
                    k,
                    Source::F32(&x),
                    SearchOptions { importance: None, negative_scales: true },
                )
                .unwrap()
                .tensor,
                &x,
            );
            println!(
                "{:<14} {:<13} {:>14.6e} {:>14.6e} {:>9.1}% {:>14.6e} {:>9.1}%",
                format.name(),
                name,
                a,
                s,
                100.0 * (1.0 - s / a),
                sn,
                100.0 * (1.0 - sn / a)
            );
        }
    }
}
