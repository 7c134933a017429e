"""Mesa's GALLIVM_DEBUG=asm listing, read once for tools/lavapipe-asm.sh and
tools/lavapipe-profile.sh: the largest compiled function as (offset, mnemonic, operands)."""
import re
import sys


def largest_function(path):
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
    return max(funcs, key=len)
