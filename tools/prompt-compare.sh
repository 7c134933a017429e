#!/usr/bin/env bash
# Prompt processing beside llama.cpp (issue 35's table): `ninfer-wgpu bench` at J columns (A32
# and A8; the tiled kernel from the platform's crossover) beside llama.cpp's own Vulkan MUL_MAT
# at n = J (../shared/tools/llamacpp-peer.sh), same driver (lavapipe) and shape (4096 rows × K
# 14336), type by type in one run, so each ratio compares two measurements minutes apart.
#
#   ../shared/tools/llamacpp-peer.sh build        # once, ~15 min
#   cargo build --release --locked
#   tools/prompt-compare.sh [TYPES...] > table.md # default: q4_K q8_0 q6_K iq2_xs q5_0 bf16
#   COLUMNS_J=512 (default)                       # the column count, J = n
#
# Ratio = llama.cpp's time / ours (above 1: we are faster).
set -euo pipefail
cd "$(dirname "$0")/.."
peer=${PEER:-../shared/tools/llamacpp-peer.sh}
bin=${BIN:-target/release/ninfer-wgpu}
j=${COLUMNS_J:-512}
export VK_ICD_FILENAMES=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -n 1)
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(q4_K q8_0 q6_K iq2_xs q5_0 bf16)
tmp=$(mktemp -d)
echo "| type | llama.cpp n=$j ms | A32 ms | A8 ms | ratio A32 / A8 | A32 GFLOP/s |"
echo "|---|---|---|---|---|---|"
for t in "${types[@]}"; do
  f=$(case $t in bf16) echo bf16 ;; *) echo "gguf_${t,,}" ;; esac)
  p=$("$peer" perf "$t" "$j" | awk '{print $3}') || p=0
  "$bin" bench --adapter vulkan --formats "$f" --shape 4096x14336 --ops matmul --columns "$j" --runs 2 --json > "$tmp/$t.json" 2>/dev/null
  python3 - "$tmp/$t.json" "$t" "${p:-0}" "$j" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
t, peer, j = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
ms = {r["op"]: r["median_ms"] for r in rows}
a32, a8 = ms.get("matmul"), ms.get("matmul_a8")
fmt = lambda v: f"{v:.0f}" if v else "—"
ratio = lambda v: f"{peer / v:.2f}×" if v and peer else "—"
flops = 2 * 4096 * 14336 * j / (a32 / 1e3) / 1e9 if a32 else 0
print(f"| {t} | {peer:.0f} | {fmt(a32)} | {fmt(a8)} | {ratio(a32)} / {ratio(a8)} | {flops:.1f} |")
PY
done
rm -rf "$tmp"
