//! Shared fixtures: a temporary directory and the CLI runner with a deadline.

#[path = "../support/temp_dir.rs"]
mod temp_dir;
pub use temp_dir::TempDir;

pub mod cli {
    use std::process::{Command, Output};
    use std::time::{Duration, Instant};

    const BIN: &str = env!("CARGO_BIN_EXE_ninfer-wgpu");

    /// How long a command may run before it counts as hung: ten times the deadlines these tests
    /// once used (120 s; 30 s for refusals), which a busy machine could reach. It guards against
    /// hangs (a FIFO opened for reading blocks forever) and nothing else: speed is measured by
    /// the benchmarks, linear work by counting (tests/hostile/readers.rs).
    pub const HANG: Duration = Duration::from_secs(1200);

    /// Runs the CLI with a deadline: a command still running after `limit` is killed and the
    /// test fails (a hang is one of the defects these tests exist for).
    fn run_within(args: &[&str], limit: Duration) -> Output {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                return child.wait_with_output().unwrap();
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                panic!("{args:?} still running after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn run(args: &[&str]) -> Output {
        run_within(args, HANG)
    }

    #[track_caller]
    pub fn ok(args: &[&str]) -> String {
        let out = run(args);
        assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// A command that must fail with exit code 2 (an error, not a panic's 101): its stderr.
    #[track_caller]
    pub fn fails(args: &[&str]) -> String {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?} should fail with an error: {err}");
        err
    }
}
