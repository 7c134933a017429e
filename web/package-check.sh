#!/usr/bin/env bash
# The npm package as a user gets it: packs web/pkg (web/build.sh's output) with `npm pack`,
# installs the tarball offline into a scratch copy of the app in web/package-test/, serves it
# on localhost and drives it in headless Chromium (web/package-check.mjs): a product against the
# CLI's CPU oracle, a greedy generation in the worker equal to the CLI's, the cache, abort,
# the failures, and a model larger than a capped wasm heap streamed into it. web/conformance.sh runs it after its build; alone:
#   web/build.sh && web/package-check.sh CLI [SEED]
set -euo pipefail
cd "$(dirname "$0")"
web=$(pwd)
cli=$(realpath "$1")
seed=${2:-${NINFER_WGPU_SEED:-$(python3 -c "import random; print(random.randrange(2**32))")}}
echo "package check: seed $seed (replay: NINFER_WGPU_SEED=$seed)"
scratch=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$scratch"' EXIT
tarball=$(cd pkg && npm pack --silent --pack-destination "$scratch")
echo "packed: $tarball ($(stat -c %s "$scratch/$tarball") bytes)"
app="$scratch/app"
mkdir -p "$app/fixtures"
cp package-test/*.html package-test/*.js "$app/"
(cd "$app" && npm init -y >/dev/null && npm install --offline --no-audit --no-fund --silent "$scratch/$tarball")
test -f "$app/node_modules/ninfer-wgpu/package.json"

# A product: the first Q4_K tensor of a fixture written by llama.cpp's gguf package, x drawn
# from the seed; the CLI's CPU oracle gives y and W.
fixtures="$app/fixtures"
"$cli" formats --json > "$scratch/formats.json"
python3 ../tests/independent/gguf_fixtures.py "$fixtures" "$seed" "$scratch/formats.json" >/dev/null
read -r tensor n k < <(python3 -c "
import json, sys
t = next(t for t in json.load(open(sys.argv[1]))['tensors'] if t['type'] == 'Q4_K')
print(t['name'], t['n'], t['k'])" "$fixtures/manifest.json")
python3 -c "
import numpy as np, sys
np.random.default_rng(int(sys.argv[1])).standard_normal(int(sys.argv[2])).astype('<f4').tofile(sys.argv[3])" "$seed" "$k" "$scratch/x.f32"
"$cli" matvec "$fixtures/fixture.gguf" "$tensor" --x "$scratch/x.f32" --columns 1 --device cpu -o "$scratch/y.f32"
"$cli" dequant "$fixtures/fixture.gguf" "$tensor" --device cpu -o "$scratch/w.f32"

# A generation: the tiny llama model (BPE vocabulary; NINFER_PACKAGE_MODEL names another, to
# measure a real model's loads), the CLI's greedy tokens on SwiftShader.
model=$(realpath "${NINFER_PACKAGE_MODEL:-../fuzz/seeds/model/tiny-llama.gguf}")
ln -s "$model" "$fixtures/model.gguf"
prompt="The capital of France is"
"$cli" generate "$fixtures/model.gguf" --adapter swiftshader --prompt "$prompt" -n 8 --greedy --json > "$scratch/native.json"
printf 'not a model, only text' > "$fixtures/junk.bin"

# A heap smaller than the model: the package's files again under capped/, its wasm memory
# capped at 64 MiB (cap-memory.mjs), and SmolLM2-135M-Instruct's 98 MB GGUF (NINFER_SMOLLM2)
# streamed into it by the worker — while a control that takes the whole file fails there.
cap=$((64 << 20))
large=null
if [ -n "${NINFER_SMOLLM2:-}" ]; then
  mkdir "$app/capped"
  cp "$app/node_modules/ninfer-wgpu/"*.js "$app/capped/"
  node cap-memory.mjs "$app/node_modules/ninfer-wgpu/ninfer_wgpu_bg.wasm" "$app/capped/ninfer_wgpu_bg.wasm" "$cap"
  ln -s "$(realpath "$NINFER_SMOLLM2")" "$fixtures/large.gguf"
  "$cli" generate "$fixtures/large.gguf" --adapter swiftshader --prompt "$prompt" -n 4 --greedy --json > "$scratch/large.json"
  large="{\"url\": \"/fixtures/large.gguf\", \"n\": 4, \"cap\": $cap, \"native\": \"$scratch/large.json\"}"
elif [ "${CI:-}" = true ]; then
  echo "CI=true: the capped-heap load needs NINFER_SMOLLM2" >&2
  exit 1
else
  echo "skipped: the capped-heap load needs NINFER_SMOLLM2 (SmolLM2-135M-Instruct's GGUF)"
fi

python3 - "$scratch/config.json" "$tensor" "$n" "$k" "$scratch" "$prompt" "$large" <<'PY'
import json, sys
out, tensor, n, k, s, prompt, large = sys.argv[1:]
json.dump({
    "product": {"url": "/fixtures/fixture.gguf", "tensor": tensor, "n": int(n), "k": int(k),
                "x": f"{s}/x.f32", "w": f"{s}/w.f32", "y": f"{s}/y.f32"},
    "model": {"url": "/fixtures/model.gguf", "prompt": prompt, "n": 8, "native": f"{s}/native.json"},
    "junk": "/fixtures/junk.bin", "missing": "/fixtures/no-such-model.gguf",
    "large": json.loads(large),
}, open(out, "w"))
PY
port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$app" >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do
  python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1])" "http://127.0.0.1:$port/index.html" 2>/dev/null && break
  sleep 0.1
done
node package-check.mjs "http://127.0.0.1:$port" "$scratch/config.json"
