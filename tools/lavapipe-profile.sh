#!/usr/bin/env bash
# Where a matvec kernel's time goes as lavapipe runs it, from a profile. The command (ours, or
# llama.cpp's test-backend-ops) runs under `perf record` (cpu-clock: this VM has no hardware
# counters) with Mesa's x86 listing on (GALLIVM_DEBUG=asm, shader cache off). The samples are
# mapped onto the compiled function most of them land in, and onto its basic blocks.
# Printed: the hot blocks' instructions and bounds-checked loads (`jae`) per weight, dividing by
# WEIGHTS_PER_PASS (ours: 8 invocations × 4 rows × 32 values, or × 64 for pairs of chunks) —
# a relative measure for one kernel across changes only, since a pass's weights are not known
# for another's loops — and the samples by kind of instruction (per-lane memory accesses, lane
# moves, ALU, stack): shares of time, which do compare across kernels
# (docs/performance.md#profiling-by-kind-of-instruction).
#
#   tools/lavapipe-profile.sh WEIGHTS_PER_PASS -- COMMAND...
#   tools/lavapipe-profile.sh 1024 -- target/release/ninfer-wgpu bench --adapter vulkan \
#       --formats bf16 --shape 16384x14336 --ops matmul --profile a32
#
# Give the run enough samples (tens of thousands in the kernel) for every hot block to take some.
set -euo pipefail
per_pass=$1
shift
[ "${1:-}" = -- ] && shift
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-$(ls /usr/share/vulkan/icd.d/lvp_icd*.json | head -n 1)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
MESA_SHADER_CACHE_DISABLE=true GALLIVM_DEBUG=asm perf record -q -e cpu-clock -F 10000 -o "$tmp/perf.data" "$@" > "$tmp/asm.txt" 2>&1
perf script -i "$tmp/perf.data" -F ip,dso 2>/dev/null | grep -F 'perf-' > "$tmp/ips.txt" || true
PYTHONPATH="$(dirname "$0")" python3 - "$tmp/asm.txt" "$tmp/ips.txt" "$per_pass" <<'PY'
import collections, re, sys
from lavapipe_listing import hottest_function, kind
ips = [int(l.split()[0], 16) for l in open(sys.argv[2]) if l.strip()]
if not ips:
    sys.exit("no samples in JIT code (perf maps it as /tmp/perf-PID.map)")
f, base = hottest_function(sys.argv[1], ips)
at = {o: i for i, (o, _, _) in enumerate(f)}
# Basic blocks: a jump's target and the instruction after a jump start one.
leaders = {0}
for i, (o, op, arg) in enumerate(f):
    if op.startswith("j") or op.startswith("ret"):
        leaders.add(i + 1)
        m = re.match(r"^(0x)?([0-9a-f]+)$", arg.strip())
        if m and int(m.group(2), 16) in at:
            leaders.add(at[int(m.group(2), 16)])
starts = sorted(l for l in leaders if l < len(f)) + [len(f)]
block = [0] * len(f)
for b in range(len(starts) - 1):
    for i in range(starts[b], starts[b + 1]):
        block[i] = b
samples = collections.Counter()
per_instr = collections.Counter()
mapped = 0
for ip in ips:
    if ip - base in at:
        # A sample names the instruction after the one retiring.
        i = max(at[ip - base] - 1, 0)
        samples[block[i]] += 1
        per_instr[i] += 1
        mapped += 1
size = lambda b: starts[b + 1] - starts[b]
mean = mapped / len(f)
hot = [b for b in range(len(starts) - 1) if samples[b] >= 0.1 * mean * size(b)]
instr = [f[i] for b in hot for i in range(starts[b], starts[b + 1])]
w = float(sys.argv[3])
loads = sum(1 for x in instr if x[1] == "jae")
stack = sum(1 for x in instr if "(%rsp" in x[2])
share = sum(samples[b] for b in hot) / max(mapped, 1)
print(f"kernel: {len(f)} instructions, {mapped} of {len(ips)} JIT samples; hot blocks hold {share:.0%} of them")
print(f"per weight: {len(instr) / w:.1f} instructions, {loads / w:.2f} checked loads, {stack / w:.1f} stack accesses "
      f"({len(instr)} / {loads} / {stack} per pass of {w:g} weights)")
# Where the kernel's samples sit, by kind of instruction (cpu-clock samples skid by an
# instruction or so, so this is a share of time, not an exact attribution).
kinds = collections.Counter()
for i, n in per_instr.items():
    kinds[kind(f[i][1], f[i][2])] += n
print("samples by kind: " + ", ".join(f"{k} {n / max(mapped, 1):.0%}" for k, n in kinds.most_common()))
PY
