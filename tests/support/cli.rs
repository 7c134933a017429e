//! Running the CLI from a test: output captured, an environment chosen per runner, and a hang
//! guard on every run.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a command may run before it counts as hung: ten times the deadlines these tests
/// once used (120 s; 30 s for refusals), which a busy machine could reach. It guards against
/// hangs (a FIFO opened for reading blocks forever) and nothing else: speed is measured by the
/// benchmarks, linear work by counting (tests/hostile/readers.rs).
pub const HANG: Duration = Duration::from_secs(1200);

/// The ninfer-wgpu binary with the environment its runs get.
#[derive(Debug, Clone)]
pub struct Cli {
    bin: &'static str,
    env: Vec<(&'static str, String)>,
}

impl Cli {
    pub fn new(bin: &'static str) -> Cli {
        Cli { bin, env: Vec::new() }
    }

    /// The same runner with `key=value` set for every run.
    pub fn env(mut self, key: &'static str, value: impl Into<String>) -> Cli {
        self.env.push((key, value.into()));
        self
    }

    /// Runs `args` to completion (within [`HANG`]).
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_within(args, HANG)
    }

    /// Runs `args`; a command still running after `limit` is killed and the test fails (a hang
    /// is one of the defects these tests exist for).
    pub fn run_within(&self, args: &[&str], limit: Duration) -> Output {
        let mut child = Command::new(self.bin)
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        // Drained on threads, so a command that writes more than a pipe holds cannot stall.
        let mut stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut v).map(|_| v)
        });
        let err = std::thread::spawn(move || {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut stderr, &mut v).map(|_| v)
        });
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                panic!("{args:?} still running after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Output { status, stdout: out.join().unwrap().unwrap(), stderr: err.join().unwrap().unwrap() }
    }

    /// Runs `args`, requires success and returns standard output.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `args`, which must fail with exit code 2 (an error, not a panic's 101): its stderr.
    #[track_caller]
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?} should fail with an error: {err}");
        err
    }
}
