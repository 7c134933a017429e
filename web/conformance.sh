#!/usr/bin/env bash
# The browser test: builds the wasm package, serves web/ on localhost, and drives Debian's
# chromium headless (WebGPU on SwiftShader) through web/drive.mjs: no adapter is a failure; bad
# files must be refused with the CLI's own messages; a GGUF must verify in the page; then the
# whole conformance suite runs. Prints `N passed, M failed, D platform deviations`. Then the npm
# package is packed, installed into a scratch app and driven (web/package-check.sh), and the
# generation page must produce the native CLI's greedy tokens with a tiny model of every
# architecture and a real one (web/generate-check.mjs).
#   web/conformance.sh [--json OUT] [--formats a,b]
set -euo pipefail
cd "$(dirname "$0")"
web=$(pwd)
drive_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --json) drive_args+=(--json "$(realpath -m "$2")"); shift 2 ;;
    --formats) drive_args+=(--formats "$2"); shift 2 ;;
    *) echo "usage: web/conformance.sh [--json OUT] [--formats a,b]" >&2; exit 2 ;;
  esac
done

# playwright-core needs node >= 20 (Debian bookworm's own nodejs is 18).
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "web/conformance.sh: node >= 20 is needed for playwright-core (found ${node_major:-none})" >&2
  exit 2
fi
# The report checks drive.mjs applies (zero or fewer-than-planned cases fail), tested first.
node --test report-check.test.mjs
./build.sh
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --silent

# The test profile: the CLI `cargo test` already built (the dev profile would build every crate again).
(cd .. && cargo build --locked --quiet --profile test --bin ninfer-wgpu)
cli=$(realpath ../target/debug/ninfer-wgpu)
# Fixtures served beside the page: a GGUF of every type written by llama.cpp's gguf package
# (its type list from the CLI's registry), and two bad files whose CLI messages the page must
# repeat.
fixtures="$web/fixtures-run"
rm -rf "$fixtures"
mkdir -p "$fixtures"
"$cli" formats --json > "$fixtures/formats.json"
python3 ../tests/independent/gguf_fixtures.py "$fixtures" 7 "$fixtures/formats.json" >/dev/null
printf 'not a model, only text' > "$fixtures/junk.bin"
python3 -c "import sys; open(sys.argv[1], 'wb').write(b'GGUF' + (3).to_bytes(4, 'little') + (5).to_bytes(8, 'little'))" "$fixtures/truncated.gguf"
expect="$fixtures/expected-errors.json"
(
  cd "$fixtures"
  for f in junk.bin truncated.gguf; do
    { NINFER_WGPU_ADAPTER=none "$cli" inspect "$f" 2>&1 >/dev/null || true; } | sed -n 's/^error: //p' | head -n 1 \
      | python3 -c "import json, sys; print(json.dumps([sys.argv[1], sys.stdin.read().rstrip(chr(10))]))" "$f"
  done
) | python3 -c "import json, sys; print(json.dumps(dict(json.loads(l) for l in sys.stdin)))" > "$expect"

port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$web" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$fixtures"' EXIT
for _ in $(seq 50); do
  python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1])" "http://127.0.0.1:$port/index.html" 2>/dev/null && break
  sleep 0.1
done
node drive.mjs "http://127.0.0.1:$port" --fixtures /fixtures-run --expect-errors "$expect" "${drive_args[@]}"

# The npm package as a user installs it (web/package-check.sh): packed, installed offline into a
# scratch app, a product, a generation in its worker, the cache, abort and the failures.
./package-check.sh "$cli"

# Text generation in the page (web/generate.html), served from the page's origin: its greedy
# tokens must equal the native CLI's on SwiftShader, the browser's adapter here. First a tiny
# model of every architecture (fuzz/seeds/model/tiny-*.gguf), then a real one where given: the
# smaller, SmolLM2-135M (NINFER_SMOLLM2, architecture llama), else gemma-3-270m (NINFER_GEMMA).
models=("$web"/../fuzz/seeds/model/tiny-{llama,qwen2,qwen3,gemma,gemma2,gemma3}.gguf)
if [ -n "${NINFER_SMOLLM2:-}" ] && [ -f "$NINFER_SMOLLM2" ]; then
  models+=("$NINFER_SMOLLM2")
elif [ -n "${NINFER_GEMMA:-}" ] && [ -f "$NINFER_GEMMA" ]; then
  models+=("$NINFER_GEMMA")
else
  echo "neither NINFER_SMOLLM2 nor NINFER_GEMMA given: the browser generates with the tiny models only"
fi
prompt="The capital of France is"
tokens=8
for model in "${models[@]}"; do
  name=$(basename "$model")
  ln -sf "$(realpath "$model")" "$fixtures/$name"
  native="$fixtures/$name.native.json"
  "$cli" generate "$model" --adapter swiftshader --prompt "$prompt" -n "$tokens" --greedy --json > "$native"
  echo "generation in the page: $name"
  node generate-check.mjs "http://127.0.0.1:$port" "/fixtures-run/$name" "$prompt" "$tokens" "$native"
done
