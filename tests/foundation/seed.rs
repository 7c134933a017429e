//! `NINFER_WGPU_SEED` replays a randomized test: the seed source takes it, prints the line that
//! replays it, and refuses a value that is not a seed rather than running other inputs.

use ninfer_wgpu::testgen::{self, SEED_VAR};
use std::process::{Command, Output};

/// What every randomized test does first. The test below runs it alone in a child process with
/// the variable set; in the ordinary run it takes a fresh seed like any randomized test.
#[test]
fn seed_source_prints_its_replay_line() {
    testgen::test_seed("seed source").expect("seed");
}

fn child(value: &str) -> (Output, String) {
    let me = std::env::current_exe().expect("the test binary's path");
    let out = Command::new(me)
        .args(["--exact", "seed::seed_source_prints_its_replay_line", "--nocapture", "--test-threads=1"])
        .env(SEED_VAR, value)
        .output()
        .expect("the test binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out, text)
}

#[test]
fn the_seed_variable_replays_a_randomized_test() {
    let (out, text) = child("424242");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("seed source: seed 424242 (replay: NINFER_WGPU_SEED=424242)"), "{text}");
    assert!(text.contains("1 passed"), "the child ran the seeded test: {text}");
    let (out, text) = child("4242x");
    assert!(!out.status.success() && text.contains("4242x") && text.contains("is not a seed"), "{text}");
}
