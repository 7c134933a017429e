#!/usr/bin/env python3
"""Writes fuzz/seeds/gguf/registry.gguf: a GGUF holding two rows of every ggml type of the
registry (random bytes, finite binary16 scales where the registry says the block keeps them),
plus f32, f16 and bf16 tensors. Written by hand, not with llama.cpp's gguf package, so a type that
package does not know (q2_0) is in the seed too. tests/gguf.rs fails until a new type is here.

Usage: tools/make-gguf-seed.py [OUT]   (runs target/debug/ninfer-wgpu formats --json;
                                        BIN=path overrides the binary)
"""
import json
import os
import random
import struct
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "fuzz/seeds/gguf/registry.gguf")
binary = os.environ.get("BIN", os.path.join(root, "target/debug/ninfer-wgpu"))
formats = json.loads(subprocess.run([binary, "formats", "--json"], capture_output=True, check=True).stdout)
rng = random.Random(42)
ALIGN = 32


def string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def f16_one():
    return struct.pack("<H", 0x3C00)


tensors = []  # (name, dims innermost first, ggml type, data)
for f in formats:
    if f["ggml_name"] is None:
        continue
    geometry = f["geometry"]  # "Block { values: 256, bytes: 144 }"
    values = int(geometry.split("values: ")[1].split(",")[0])
    size = int(geometry.split("bytes: ")[1].split(" ")[0])
    data = bytearray()
    for _ in range(2):
        block = bytearray(rng.getrandbits(8) for _ in range(size))
        fields = f["ggml_f16_fields"]
        for at in fields.get("at", []):
            block[at:at + 2] = f16_one()
        if "top_nibbles" in fields:
            at = fields["top_nibbles"]
            for i in range(4):
                w = struct.unpack_from("<H", block, at + 2 * i)[0]
                w = (w & 0x0FFF) | (((0x3C00 >> (4 * i)) & 0xF) << 12)
                struct.pack_into("<H", block, at + 2 * i, w)
        data += block
    tensors.append((f["ggml_name"], [values, 2], f["ggml_type"], bytes(data)))
tensors.append(("f32", [8, 2], 0, struct.pack("<16f", *[rng.uniform(-1, 1) for _ in range(16)])))
tensors.append(("bf16", [8, 2], 30, bytes(rng.getrandbits(8) & 0x3F if i % 2 else rng.getrandbits(8) for i in range(32))))
# fp16: every word is valid (NaNs included), so any bytes.
tensors.append(("f16", [8, 2], 1, bytes(rng.getrandbits(8) for _ in range(32))))

head = b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", len(tensors)) + struct.pack("<Q", 1)
head += string("general.alignment") + struct.pack("<I", 4) + struct.pack("<I", ALIGN)
offset = 0
data = b""
for name, dims, ggml_type, payload in tensors:
    head += string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
    head += struct.pack("<I", ggml_type) + struct.pack("<Q", offset)
    padded = payload + bytes(-len(payload) % ALIGN)
    data += padded
    offset += len(padded)
head += bytes(-len(head) % ALIGN)
with open(out, "wb") as f:
    f.write(head + data)
print(f"{out}: {len(tensors)} tensors, {len(head) + len(data)} bytes")
