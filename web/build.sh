#!/usr/bin/env bash
# Builds the browser package into web/pkg: the library for wasm32-unknown-unknown with the `web`
# feature, then wasm-bindgen's JavaScript glue and TypeScript declarations. The wasm-bindgen CLI
# must be the exact version of the crate in Cargo.lock; it is built from source when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)
test -n "$version"
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || rustup target list --installed | grep -qx wasm32-unknown-unknown
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }')" != "$version" ]; then
  # Unoptimized and without debug info: the CLI runs once per build on a few MB, and CI builds
  # it on every run (at opt-level 3 that took minutes: docs/browser.md#building).
  CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_LTO=false \
    cargo install --quiet wasm-bindgen-cli --version "$version"
fi
# A cdylib only for this build: the native library stays an rlib (no extra link per build).
cargo rustc --locked --quiet --lib --release --target wasm32-unknown-unknown --features web --crate-type cdylib
rm -rf web/pkg
wasm-bindgen --target web --out-dir web/pkg target/wasm32-unknown-unknown/release/ninfer_wgpu.wasm
ls -l web/pkg/ninfer_wgpu_bg.wasm | awk '{ printf "web/pkg: wasm %d bytes\n", $5 }'
