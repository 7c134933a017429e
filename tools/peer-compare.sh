#!/usr/bin/env bash
# Issue 13's lavapipe table: `ninfer-wgpu bench` (A32 and A8, J = 1 and 8) beside llama.cpp's own
# Vulkan MUL_MAT (../shared/tools/llamacpp-peer.sh) on the same driver and shape, type by type
# in one run, so each ratio compares two measurements minutes apart (absolute times on these
# shared machines move by tens of percent between runs).
#
#   ../shared/tools/llamacpp-peer.sh build                 # once, ~15 min
#   cargo build --release --locked
#   tools/peer-compare.sh [TYPES...] > table.md            # default: every ggml type and bf16
#   PEER_N8=0 tools/peer-compare.sh ...                    # n = 1 only: llama.cpp's n = 8 runs take
#                                                          # minutes per type on lavapipe
#   PEER_TIMEOUT=600 (default)                             # seconds before an n = 8 peer run is stopped
#
# Ratio = llama.cpp's time / ours (above 1: we are faster). Each time is the median of its own
# tool's repeated runs; the script alternates peer and ours per type.
set -euo pipefail
cd "$(dirname "$0")/.."
peer=${PEER:-../shared/tools/llamacpp-peer.sh}
bin=${BIN:-target/release/ninfer-wgpu}
lvp=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -n 1)
export VK_ICD_FILENAMES=$lvp
types=("$@")
# By default every ggml type of the registry (`formats --json`, by ggml's own names) and bf16.
[ ${#types[@]} -gt 0 ] || mapfile -t types < <("$bin" formats --json | python3 -c \
  'import json, sys; print("\n".join([f["ggml_name"] for f in json.load(sys.stdin) if f["ggml_name"]] + ["bf16"]))')
tmp=$(mktemp -d)
echo "| type | llama.cpp n=1 ms | A32 ms | A8 ms | ratio A32 / A8 | llama.cpp n=8 ms | A32 ms | A8 ms | ratio A32 / A8 |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in "${types[@]}"; do
  f=$(case $t in bf16) echo bf16 ;; *) echo "gguf_${t,,}" ;; esac)
  # A type the peer's llama.cpp does not have (q2_0 in llama-cpp-python 0.3.36) shows "not run".
  p1=$("$peer" perf "$t" 1 | awk '{print $3}') || p1=0
  [ -n "$p1" ] || p1=0
  "$bin" bench --adapter vulkan --formats "$f" --shape 4096x14336 --ops matmul --columns 1,8 --json > "$tmp/$t.json" 2>/dev/null
  p8=0
  # llama.cpp's n = 8 runs take minutes per type on lavapipe, and iq4_nl's ran past 13: each is
  # stopped after PEER_TIMEOUT seconds and its cell says so.
  if [ "${PEER_N8:-1}" != 0 ]; then
    p8=$(timeout "${PEER_TIMEOUT:-600}" "$peer" perf "$t" 8 | awk '{print $3}') || p8=-1
  fi
  python3 - "$tmp/$t.json" "$t" "$p1" "$p8" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
t, peer = sys.argv[2], {1: float(sys.argv[3]), 8: float(sys.argv[4])}
ms = {(r["op"], r["columns"]): r["median_ms"] for r in rows}
cells = [t]
for j in (1, 8):
    a32, a8 = ms.get(("matmul", j)), ms.get(("matmul_a8", j))
    fmt = lambda v: f"{v:.1f}" if v else "—"
    ratio = lambda v: f"{peer[j] / v:.2f}×" if v and peer[j] else "—"
    if peer[j] < 0:
        peer[j] = 0.0
        cells.append("stopped")
    else:
        cells.append(f"{peer[j]:.1f}" if peer[j] else "not run")
    cells += [fmt(a32), fmt(a8), f"{ratio(a32)} / {ratio(a8)}"]
print("| " + " | ".join(cells) + " |")
PY
done
rm -rf "$tmp"
