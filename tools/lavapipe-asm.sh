#!/usr/bin/env bash
# What lavapipe makes of one kernel: the x86 code of the largest compute function it compiles
# for a bench run (Mesa's GALLIVM_DEBUG=asm, shader cache off), counted. On lavapipe every
# storage-buffer load becomes, per invocation, a mask test, a bounds check (`jae`) and a scalar
# load (docs/performance.md#every-load-is-a-per-lane-loop-on-lavapipe), so the number of checked
# loads is what decides a kernel's count there; timings on the shared CI machines move too much
# to see 20 % changes, these counts do not.
#
#   tools/lavapipe-asm.sh FORMAT OP [VARIANT]     # e.g. gguf_q4_k matmul_a8 workgroup
#
# Prints: instructions, bounds-checked loads (`jae`), per-lane extracts (`vpextrb`). BIN picks the
# binary (default target/release/ninfer-wgpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release/ninfer-wgpu}
format=$1 op=$2 variant=${3:-}
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -n 1)}
extra=()
[ -n "$variant" ] && extra=(--variant "$variant")
# `--ops matmul` means both profiles; keep to A32 (binaries from before the A8 profile lack the flag).
if [ "$op" = matmul ] && "$bin" bench --help | grep -q -- --profile; then extra+=(--profile a32); fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
MESA_SHADER_CACHE_DISABLE=true GALLIVM_DEBUG=asm "$bin" bench --adapter vulkan --formats "$format" \
  --shape 64x512 --ops "$op" --columns 1 "${extra[@]}" > "$out" 2>&1
PYTHONPATH=tools python3 - "$out" "$format $op $variant" <<'PY'
import sys
from lavapipe_listing import largest_function
ins = [op for _, op, _ in largest_function(sys.argv[1])]
print(f"{sys.argv[2]:<36} instructions {len(ins):6d}  checked loads {ins.count('jae'):5d}  vpextrb {ins.count('vpextrb'):5d}")
PY
