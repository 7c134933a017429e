//! Shared fixtures: a temporary directory and the CLI runner (tests/support/).

pub use ninfer_wgpu_testkit::TempDir;

/// The CLI as these tests run it.
pub fn cli() -> ninfer_wgpu_testkit::Cli {
    ninfer_wgpu_testkit::cli!()
}
