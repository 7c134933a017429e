//! Helpers shared by ninfer-wgpu's test binaries, as a dev-dependency: each binary uses them by
//! name instead of pulling files in with `#[path]`, and every test starts the CLI the same way.

mod cli;
mod safetensors;
mod temp_dir;

pub use cli::{Cli, HANG};
pub use safetensors::write_safetensors;
pub use temp_dir::TempDir;

/// The CLI built for this test binary: `testkit::cli!().run(&["formats", "--json"])`. A macro so
/// that `CARGO_BIN_EXE_ninfer-wgpu` is read where it is set, in the test binary's own build.
#[macro_export]
macro_rules! cli {
    () => {
        $crate::Cli::new(env!("CARGO_BIN_EXE_ninfer-wgpu"))
    };
}
