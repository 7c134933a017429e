#!/usr/bin/env python3
"""A/B of two ninfer-wgpu binaries on lavapipe: `bench --json` for each format, the binaries
alternating round by round (old, new; then new, old), and per (op, J) the median of each
binary's rounds with the new/old ratio. On these shared 2-vCPU machines one binary's time moves
by up to 2x within minutes, so a kept change needs several rounds, at more than one shape.

    OLD=/tmp/old-bin NEW=target/release/ninfer-wgpu tools/ab-bench.py ROUNDS COLUMNS FORMAT...
    SHAPE=16384x14336 PROFILE=a8 tools/ab-bench.py 4 1,8 gguf_q4_k gguf_iq2_s
"""
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

if len(sys.argv) < 4:
    sys.exit(__doc__)
rounds, columns, formats = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
bins = [("old", os.environ["OLD"]), ("new", os.environ.get("NEW", "target/release/ninfer-wgpu"))]
lvp = sorted(Path("/usr/share/vulkan/icd.d").glob("lvp_icd*.json"))
env = dict(os.environ, VK_ICD_FILENAMES=str(lvp[0]) if lvp else "")
shape, profile = os.environ.get("SHAPE", "4096x14336"), os.environ.get("PROFILE", "a32,a8")
for f in formats:
    times = {}
    for r in range(rounds):
        for name, binary in bins if r % 2 == 0 else bins[::-1]:
            cmd = [binary, "bench", "--adapter", "vulkan", "--formats", f, "--shape", shape, "--ops", "matmul",
                   "--columns", columns, "--profile", profile, "--json"]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
            for row in json.loads(out)["rows"]:
                times.setdefault((row["op"], row["columns"]), {}).setdefault(name, []).append(row["median_ms"])
    for (op, j), t in sorted(times.items()):
        old, new = statistics.median(t["old"]), statistics.median(t["new"])
        each = " | ".join(" ".join(f"{x:.0f}" for x in t[n]) for n in ("old", "new"))
        print(f"{f:12} {op:10} J{j}: old {old:6.1f} ms  new {new:6.1f} ms  new/old {new / old:.2f}  ({each})",
              flush=True)
