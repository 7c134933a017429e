#!/usr/bin/env python3
"""Issue 13's native goal on lavapipe: each native format's product beside the gguf types of the
nearest bits per weight, in one run. Pairs come from the registry (`ninfer-wgpu formats`): for
every native quantized format, the gguf types whose bits per weight are nearest to its own
(ties all kept). Each round benches the native format and its gguf types one after another
(`bench --json`, J = 1 and 8, A32 and A8 where the format has it), the order reversed every
other round; per cell the median over rounds. Ratio = the gguf type's best profile / the
native format's best: 1 or more means the native format is at least as fast.

    tools/native-vs-gguf.py [ROUNDS]          # default 3; SHAPE=4096x14336 by default
"""
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
binary = os.environ.get("BIN", "target/release/ninfer-wgpu")
shape = os.environ.get("SHAPE", "4096x14336")
lvp = sorted(Path("/usr/share/vulkan/icd.d").glob("lvp_icd*.json"))
env = dict(os.environ, VK_ICD_FILENAMES=str(lvp[0]) if lvp else "")

# `formats` prints: name, category, bits/w, [ggml id], layout, geometry.
registry = {}
for line in subprocess.run([binary, "formats"], capture_output=True, text=True, check=True).stdout.splitlines()[1:]:
    name, category, bits = line.split()[:3]
    registry[name] = (category, float(bits))
gguf = {n: b for n, (c, b) in registry.items() if c == "GgufBlock"}
native = {n: b for n, (c, b) in registry.items() if c in ("Grouped", "BlockScaledFloat", "RowScaledFloat")}
pairs = {}
for n, bits in native.items():
    nearest = min(abs(b - bits) for b in gguf.values())
    pairs[n] = sorted(g for g, b in gguf.items() if abs(b - bits) == nearest)


def bench(fmt):
    cmd = [binary, "bench", "--adapter", "vulkan", "--formats", fmt, "--shape", shape, "--ops", "matmul",
           "--columns", "1,8", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return {(r["op"], r["columns"]): r["median_ms"] for r in json.loads(out)["rows"]}


times = {}
for r in range(rounds):
    for n, gs in pairs.items():
        for fmt in [n, *gs] if r % 2 == 0 else [*gs, n]:
            for key, ms in bench(fmt).items():
                times.setdefault((fmt, *key), []).append(ms)
        print(f"round {r + 1}: {n} and {', '.join(gs)} done", file=sys.stderr, flush=True)

med = {k: statistics.median(v) for k, v in times.items()}


def best(fmt, j):
    return min(v for v in (med.get((fmt, "matmul", j)), med.get((fmt, "matmul_a8", j))) if v)


def ms(fmt, op, j):
    v = med.get((fmt, op, j))
    return f"{v:.1f}" if v else "—"


print(f"lavapipe, {shape}, median of {rounds} rounds; ratio = gguf best profile ms / native best profile ms")
print("| native | bits/w | gguf | bits/w | J | native A32 ms | native A8 ms | gguf A32 ms | gguf A8 ms | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|")
for n, gs in pairs.items():
    for g in gs:
        for j in (1, 8):
            cells = [n, f"{native[n]:g}", g, f"{gguf[g]:g}", str(j), ms(n, "matmul", j), ms(n, "matmul_a8", j),
                     ms(g, "matmul", j), ms(g, "matmul_a8", j), f"{best(g, j) / best(n, j):.2f}×"]
            print("| " + " | ".join(cells) + " |")
