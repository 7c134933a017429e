#!/usr/bin/env bash
# Issue 13's lavapipe table: `ninfer-wgpu bench` (A32 and A8, J = 1 and 8) beside llama.cpp's own
# Vulkan MUL_MAT (../shared/tools/llamacpp-peer.sh) on the same driver and shape, type by type
# in one run, so each ratio compares two measurements minutes apart (absolute times on these
# shared machines move by tens of percent between runs).
#
#   ../shared/tools/llamacpp-peer.sh build                 # once, ~15 min
#   cargo build --release --locked
#   tools/peer-compare.sh [TYPES...] > table.md            # default: every ggml type and bf16 (f16 too by name)
#   PEER_N8=0 tools/peer-compare.sh ...                    # n = 1 only: llama.cpp's n = 8 runs take
#                                                          # minutes per type on lavapipe
#   PEER_TIMEOUT=600 (default)                             # seconds before an n > 1 peer run is stopped
#   PEER_COLUMNS="1 8 512" tools/peer-compare.sh ...       # other column counts (default "1 8")
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
read -r -a cols <<< "${PEER_COLUMNS:-1 8}"
[ "${PEER_N8:-1}" != 0 ] || cols=(1)
head="| type |"; rule="|---|"
for j in "${cols[@]}"; do head+=" llama.cpp n=$j ms | A32 ms | A8 ms | ratio A32 / A8 |"; rule+="---|---|---|---|"; done
echo "$head"; echo "$rule"
for t in "${types[@]}"; do
  f=$(case $t in bf16) echo bf16 ;; f16) echo fp16 ;; *) echo "gguf_${t,,}" ;; esac)
  "$bin" bench --adapter vulkan --formats "$f" --shape 4096x14336 --ops matmul --columns "$(IFS=,; echo "${cols[*]}")" --json > "$tmp/$t.json" 2>/dev/null
  peers=()
  for j in "${cols[@]}"; do
    # A type the peer's llama.cpp does not have (q2_0 in llama-cpp-python 0.3.36) shows "not run".
    # llama.cpp's n > 1 runs take minutes per type on lavapipe, and iq4_nl's n = 8 ran past 13:
    # each is stopped after PEER_TIMEOUT seconds and its cell says so.
    if [ "$j" = 1 ]; then
      p=$("$peer" perf "$t" 1) && p=$(awk '{print $3}' <<< "$p") || p=0
    else
      p=$(timeout "${PEER_TIMEOUT:-600}" "$peer" perf "$t" "$j") && p=$(awk '{print $3}' <<< "$p") ||
        { [ $? = 124 ] && p=-1 || p=0; }
    fi
    peers+=("$j=${p:-0}")
  done
  python3 - "$tmp/$t.json" "$t" "${peers[@]}" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
t = sys.argv[2]
peer = {int(j): float(v) for j, v in (a.split("=") for a in sys.argv[3:])}
ms = {(r["op"], r["columns"]): r["median_ms"] for r in rows}
cells = [t]
for j, p in peer.items():
    a32, a8 = ms.get(("matmul", j)), ms.get(("matmul_a8", j))
    fmt = lambda v: f"{v:.1f}" if v else "—"
    ratio = lambda v: f"{p / v:.2f}×" if v and p > 0 else "—"
    cells.append("stopped" if p < 0 else f"{p:.1f}" if p else "not run")
    cells += [fmt(a32), fmt(a8), f"{ratio(a32)} / {ratio(a8)}"]
print("| " + " | ".join(cells) + " |")
PY
done
rm -rf "$tmp"
