#!/usr/bin/env bash
# Builds the browser package (web/build.sh) and packs it into an npm tarball:
#   web/package.sh [OUT-DIR]      # default web/dist; prints the tarball's path
# Install it elsewhere with `npm install PATH/ninfer-wgpu-VERSION.tgz` (docs/browser.md).
set -euo pipefail
cd "$(dirname "$0")"
out=$(realpath -m "${1:-dist}")
mkdir -p "$out"
./build.sh >&2
tarball=$(cd pkg && npm pack --silent --pack-destination "$out")
echo "$out/$tarball"
