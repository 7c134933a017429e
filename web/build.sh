#!/usr/bin/env bash
# Builds the browser package into web/pkg: the library for wasm32-unknown-unknown with the `web`
# feature, then wasm-bindgen's JavaScript glue and TypeScript declarations, and the npm package
# around them (package.json, web/package/'s worker, cache, types and README). The wasm-bindgen CLI
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
# The npm package around it (web/package/: the worker, the cache, its README and types), at the
# crate's version: `cd web/pkg && npm pack` makes the tarball (web/package.sh).
cp web/package/*.js web/package/index.d.ts web/package/README.md web/pkg/
crate_version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
license=$(awk -F'"' '/^license = / { print $2; exit }' Cargo.toml)
python3 - "$crate_version" "$license" > web/pkg/package.json <<'PY'
import json, sys
version, license = sys.argv[1:]
print(json.dumps({
    "name": "ninfer-wgpu",
    "version": version,
    "description": "GGUF language models and exact GGUF/NInfer weight kernels on the browser's GPU (WebGPU), in a Web Worker",
    "license": license,
    "type": "module",
    "main": "./index.js",
    "types": "./index.d.ts",
    "exports": {
        ".": {"types": "./index.d.ts", "default": "./index.js"},
        "./worker.js": "./worker.js",
        "./ninfer_wgpu_bg.wasm": "./ninfer_wgpu_bg.wasm",
    },
    "files": ["index.js", "index.d.ts", "worker.js", "cache.js", "ninfer_wgpu.js", "ninfer_wgpu.d.ts",
              "ninfer_wgpu_bg.wasm", "ninfer_wgpu_bg.wasm.d.ts", "README.md"],
    "sideEffects": False,
    "keywords": ["webgpu", "gguf", "llm", "wasm", "quantization"],
}, indent=2))
PY
ls -l web/pkg/ninfer_wgpu_bg.wasm | awk '{ printf "web/pkg: wasm %d bytes\n", $5 }'
