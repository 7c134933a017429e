#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 20) from the seed corpus in fuzz/seeds, with new
# inputs kept in a temporary directory. Exits non-zero on the first crash, leak or timeout and
# prints the input that caused it. Usage: fuzz/run.sh [SECONDS] [TARGET...]
#
# Built with `-s none`: the crate has no unsafe code on these paths, so libFuzzer's coverage
# guidance is what matters, and an uninstrumented build takes a third of the time. Debug
# assertions (integer overflow included) stay on, as cargo fuzz builds by default.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(gguf ninfer sources validators args model)
fi
cargo +nightly --version >/dev/null || { echo "fuzz/run.sh needs the nightly toolchain (cargo +nightly)" >&2; exit 1; }
# The cargo-fuzz command only drives the build: unoptimized, it builds in a fraction of the time.
command -v cargo-fuzz >/dev/null ||
  CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_LTO=false \
    cargo install cargo-fuzz --locked --version 0.13.2
cargo +nightly fuzz build -s none
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "$work/$t"
  log="$work/$t.log"
  if ! target/x86_64-unknown-linux-gnu/release/"$t" "$work/$t" "seeds/$t" -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/$t-" >"$log" 2>&1; then
    tail -n 30 "$log"
    echo "fuzz: $t FAILED; the input is under $work (kept)" >&2
    trap - EXIT
    exit 1
  fi
  echo "fuzz: $t: $(grep -E '^Done' "$log")"
done
