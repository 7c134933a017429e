#!/usr/bin/env bash
# Instructions that lavapipe's compiled shaders execute per weight, counted by valgrind
# (callgrind), for one of our products or for llama.cpp's MUL_MAT on the same driver and shape.
# A count, not a time: the same binary and inputs give the same number whatever else the machine
# is doing, where times on these shared 2-vCPU VMs move by tens of percent (and the VM has no
# hardware counters for `perf stat`).
#
#   tools/lavapipe-icount.sh ours gguf_q4_k a8 1 [4096x14336]    # format, profile, J, shape
#   PEER_BIN=... tools/lavapipe-icount.sh peer q4_K 1 [4096x14336]  # ggml type, n, a perf shape
#   KINDS=1 tools/lavapipe-icount.sh ours ...                    # also by kind of instruction
#   ICOUNT_EXTRA='--tiled-from 1' tools/lavapipe-icount.sh ours ... # extra bench flags
#
# KINDS=1 also counts per instruction (callgrind --dump-instr=yes) and maps the counts onto
# Mesa's listing of the compiled function that holds most of them (GALLIVM_DEBUG=asm, shader cache off, so the
# shaders are compiled under valgrind: minutes), then prints the kernel's instructions per weight
# by kind, as tools/lavapipe-profile.sh classifies them.
#
# What is counted: every instruction callgrind saw in code without an object file, which in
# these processes is the code lavapipe's LLVM compiled from SPIR-V (the matmul kernel and, for
# A8, the q8_1 quantize pass; also the adapter probes at start, a few thousand). It is divided by
# the dispatches: ours `bench --runs R` (one warm-up plus R), the peer's warm-up graph plus the
# runs test-backend-ops prints.
#
# Under valgrind the CPU reports AVX2 but not AVX-512, so LLVM emits AVX2 code for the same
# 256-bit lanes. Measured for the q4_K kernels, ours and llama.cpp's: the listings under valgrind
# are about 5 % longer than the native ones, with the same bounds checks.
#
# test-backend-ops quantizes its random weights on the CPU first, which under valgrind takes
# half an hour for an i-quant (k-quants: minutes); its perf cases fix the shape at 4096x14336.
# The peer: test-backend-ops sizes each perf graph to 100 GFLOP (852 matvecs at 4096x14336),
# hours under valgrind. PEER_BIN is a test-backend-ops whose perf target is smaller: built from
# the same source as ../shared/tools/llamacpp-peer.sh with `target_flops_gpu` lowered
# (docs/performance.md#counting-instructions); only the count of repeated nodes differs, not the
# kernels.
# Its ggml-cpu library must be one built without -march=native (valgrind stops at AVX-512
# instructions): LD_LIBRARY_PATH to a -DGGML_NATIVE=OFF build of the ggml-cpu target.
# The recipe (a minute of building beside the peer's own build in /tmp/llamacpp-peer):
#   in llama.cpp's test-backend-ops.cpp (its tests directory), `target_flops_gpu = 100ULL * GFLOP` becomes
#     getenv("PEER_TARGET_GFLOP") ? strtoull(getenv("PEER_TARGET_GFLOP"), nullptr, 10) * GFLOP : 100ULL * GFLOP
#   (unset, the binary times exactly as before), then
#   cmake --build /tmp/llamacpp-peer/build -j2 --target test-backend-ops
#   cmake -S /tmp/llamacpp-peer/src/vendor/llama.cpp -B /tmp/peer-cpu -DGGML_VULKAN=OFF -DGGML_NATIVE=OFF \
#     -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF && \
#     cmake --build /tmp/peer-cpu -j2 --target ggml-cpu
#   PEER_TARGET_GFLOP=1 PEER_BIN=/tmp/llamacpp-peer/build/bin/test-backend-ops \
#     LD_LIBRARY_PATH=/tmp/peer-cpu/bin tools/lavapipe-icount.sh peer iq1_s 1
# Type names are ggml's (q4_K, iq1_s).
#
# llama.cpp's n = 8 shaders take lavapipe's LLVM hours to compile under callgrind (still in
# coroutine splitting after 90 minutes). Compile them once under valgrind's no-op tool first:
# valgrind's CPU (no AVX-512, another family) keys lavapipe's shader cache differently from the
# native one, and a callgrind run on the same CPU then finds the compiled shader there (how long
# each step took: docs/performance.md#counting-instructions):
#   GGML_VK_VISIBLE_DEVICES=0 PEER_TARGET_GFLOP=1 LD_LIBRARY_PATH=/tmp/peer-cpu/bin \
#     valgrind --tool=none "$PEER_BIN" perf -b Vulkan0 -o MUL_MAT -p "type_a=iq1_s,type_b=f32,m=4096,n=8,k=14336,"
#   PEER_TARGET_GFLOP=1 PEER_BIN=... LD_LIBRARY_PATH=/tmp/peer-cpu/bin tools/lavapipe-icount.sh peer iq1_s 8
set -euo pipefail
cd "$(dirname "$0")/.."
lvp=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -n 1)
export VK_ICD_FILENAMES=$lvp
out=$(mktemp -d)
cg=(valgrind --tool=callgrind --callgrind-out-file="$out/cg")
if [ "${KINDS:-0}" = 1 ]; then
  cg+=(--dump-instr=yes)
  export MESA_SHADER_CACHE_DISABLE=true GALLIVM_DEBUG=asm
fi
# KEEP=DIR keeps the callgrind output and the log there.
trap '[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$out"/* "$KEEP"/; rm -rf "$out"' EXIT

# Σ Ir over functions in no object file ("[???]" in callgrind_annotate's listing).
jit_ir() {
  callgrind_annotate --threshold=100 "$1" 2>/dev/null |
    awk '/\[\?\?\?\]$/ { gsub(",", "", $1); s += $1 } END { printf "%.0f\n", s }'
}

case "${1:-}" in
  ours)
    format=$2 profile=$3 j=$4 shape=${5:-4096x14336} runs=${RUNS:-2}
    "${cg[@]}" "${BIN:-target/release/ninfer-wgpu}" bench \
      --adapter vulkan --formats "$format" --ops matmul --profile "$profile" --columns "$j" --shape "$shape" \
      --runs "$runs" ${ICOUNT_EXTRA:-} --json > "$out/json" 2> "$out/log" || { tail -5 "$out/log" >&2; exit 1; }
    dispatches=$((runs + 1))
    label="ours $format $profile J=$j $shape"
    ;;
  peer)
    t=$2 n=${3:-1} shape=${4:-4096x14336}
    : "${PEER_BIN:?PEER_BIN: a test-backend-ops with a smaller perf target (see the header)}"
    GGML_VK_VISIBLE_DEVICES=0 "${cg[@]}" "$PEER_BIN" perf \
      -b Vulkan0 -o MUL_MAT -p "type_a=$t,type_b=f32,m=${shape%x*},n=$n,k=${shape#*x}," > "$out/log" 2>&1 ||
      { tail -5 "$out/log" >&2; exit 1; }
    # No line when the shape is not one of test-backend-ops' perf cases (4096x14336 is).
    runs=$(grep -o '[0-9]* runs - ' "$out/log" | head -1 | awk '{print $1}' || true)
    [ -n "$runs" ] || { tail -5 "$out/log" >&2; echo "no MUL_MAT run count for $t" >&2; exit 1; }
    dispatches=$((runs + 1))
    label="llama.cpp $t n=$n $shape"
    ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
ir=$(jit_ir "$out/cg")
PYTHONPATH=tools python3 - "$label" "$ir" "$dispatches" "$shape" "${KINDS:-0}" "$out" <<'PY'
import collections, sys
label, ir, dispatches, shape, kinds, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
n, k = (int(v) for v in shape.split("x"))
weights = n * k * dispatches
print(f"{label}: {ir / dispatches / 1e6:.1f} M shader instructions per dispatch ({dispatches} dispatches), "
      f"{ir / weights:.2f} per weight")
if kinds == "1":
    from lavapipe_listing import callgrind_jit_costs, costliest_function, kind
    costs = callgrind_jit_costs(f"{out}/cg")
    # Mesa's listing is in the log (ours: stderr; the peer: with its output).
    f, base = costliest_function(f"{out}/log", costs)
    by, ops = collections.Counter(), collections.Counter()
    for o, op, arg in f:
        by[kind(op, arg)] += costs.get(base + o, 0)
        ops[op + (" (memory)" if "(" in arg else "")] += costs.get(base + o, 0)
    total = sum(by.values())
    print(f"  the costliest compiled function: {total / weights:.2f} per weight ({total / ir:.0%} of the shader instructions)")
    for name, c in by.most_common():
        print(f"  {name:<28} {c / weights:6.2f} per weight  {c / total:4.0%}")
    print("  top instructions per weight: " + ", ".join(f"{o} {c / weights:.2f}" for o, c in ops.most_common(12)))
PY
