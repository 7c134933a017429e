"""Mesa's GALLIVM_DEBUG=asm listing, read once for tools/lavapipe-asm.sh and
tools/lavapipe-profile.sh: compiled functions as lists of (offset, mnemonic, operands)."""
import collections
import random
import re
import sys


def functions(path):
    funcs, cur = [], None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if re.match(r"^[A-Za-z_.]+:$", line):
            cur = []
            funcs.append(cur)
        elif cur is not None:
            m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
            if m:
                cur.append((int(m.group(1), 16), m.group(2), m.group(3)))
    if not funcs:
        sys.exit("no GALLIVM_DEBUG=asm output: is this lavapipe?")
    return funcs


def largest_function(path):
    return max(functions(path), key=len)


def load_base(f, ips):
    """The address `f` was loaded at: the base that puts the most of a sample of `ips` on its
    instruction boundaries (the listing has offsets only)."""
    random.seed(0)
    votes = collections.Counter()
    for ip in random.sample(ips, min(300, len(ips))):
        for o, _, _ in f:
            votes[ip - o] += 1
    return votes.most_common(1)[0][0]


def hottest_function(path, ips):
    """The function the most samples land in, with its load address. The largest is not always
    the kernel: llama.cpp's test-backend-ops compiles several pipelines."""
    best = None
    for f in functions(path):
        if len(f) < 200:
            continue
        base = load_base(f, ips)
        offsets = {o for o, _, _ in f}
        hits = sum(1 for ip in ips if ip - base in offsets)
        if best is None or hits > best[0]:
            best = (hits, f, base)
    if best is None:
        sys.exit("no compiled function of 200 instructions or more in the listing")
    return best[1], best[2]
