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


def kind(op, arg):
    """The kind of one listed instruction, for the by-kind tables of tools/lavapipe-profile.sh and
    tools/lavapipe-icount.sh."""
    if op.startswith("j"):
        return "branch"
    if "(%rsp" in arg:
        return "stack (spill/reload)"
    if "(%rip" in arg:
        return "constant load"
    if "(" in arg:
        return "buffer or workgroup memory"
    # Lavapipe's lane-by-lane gathers and extracts.
    if op in ("vpblendd", "vpextrd", "vextracti128", "vpinsrd", "vpbroadcastd", "vpermd", "vinserti128"):
        return "lane moves"
    return "vector ALU" if op.startswith("v") else "scalar ALU"


def callgrind_jit_costs(path):
    """Self Ir per instruction address of the code in no object file (lavapipe's compiled
    shaders), from a callgrind output written with --dump-instr=yes."""
    costs, names = {}, {}
    npos, in_jit, addr, skip = 1, False, 0, False
    for line in open(path, errors="replace"):
        if line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith(("ob=", "cob=")):
            # Object names are numbered once, where an object (or a callee's, cob=) first appears.
            m = re.match(r"c?ob=(?:\((\d+)\))?\s*(.*)", line.strip())
            if m.group(2):
                names[m.group(1)] = m.group(2)
            if line.startswith("ob="):
                in_jit = names.get(m.group(1), m.group(2)) == "???"
        elif line.startswith("calls="):
            skip = True  # the next cost line is the call's inclusive cost, not this code's own
        elif line[:1] in "0123456789+-*":
            # A cost line; positions are relative to the previous cost line's, whatever its object.
            tokens = line.split()
            pos = tokens[0]
            if pos != "*":
                addr = addr + int(pos, 0) if pos[0] in "+-" else int(pos, 16)
            if in_jit and not skip and len(tokens) > npos:
                costs[addr] = costs.get(addr, 0) + int(tokens[npos])
            skip = False
    return costs


def costliest_function(path, costs):
    """The listed function whose instructions hold the most of `costs` (Ir per address), with
    its load address: the base is voted by the costliest addresses, as load_base does for
    samples."""
    ips = [a for a, _ in sorted(costs.items(), key=lambda x: -x[1])[:300]]
    best = None
    for f in functions(path):
        if len(f) < 200:
            continue
        base = load_base(f, ips)
        held = sum(costs.get(base + o, 0) for o, _, _ in f)
        if best is None or held > best[0]:
            best = (held, f, base)
    if best is None:
        sys.exit("no compiled function of 200 instructions or more in the listing")
    return best[1], best[2]
