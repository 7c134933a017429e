#!/usr/bin/env python3
"""Writes the hostile model seeds of the `model` fuzz target beside the tiny gemma3 seeds
(tools/make-model-seed.py), each the seed with one thing wrong that the runner must refuse
(docs/untrusted-input.md#model-files):

  hostile-nan-norm.gguf       blk.0.attn_norm.weight all NaN
  hostile-inf-embd.gguf       token_embd.weight's first value +inf
  hostile-window-0.gguf       gemma3.attention.sliding_window = 0
  hostile-block-count.gguf    the two-block GQA seed declaring block_count 1 (its pattern key
                              renamed, so that the count is what is wrong)

Needs llama.cpp's `gguf` package (for tensor offsets). Usage: tools/make-hostile-model-seeds.py
"""
import os
import struct

from gguf import GGUFReader

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
seeds = os.path.join(root, "fuzz/seeds/model")


def key_value_at(data, key, ty):
    """The offset of `key`'s value, a scalar of GGUF value type `ty` right after the key."""
    pattern = struct.pack("<Q", len(key)) + key.encode() + struct.pack("<I", ty)
    at = data.find(pattern)
    assert at >= 0 and data.find(pattern, at + 1) < 0, f"{key}: not found once"
    return at + len(pattern)


def tensor_at(path, name):
    t = next(t for t in GGUFReader(path).tensors if t.name == name)
    return t.data_offset, t.n_elements


def write(name, data):
    path = os.path.join(seeds, name)
    with open(path, "wb") as f:
        f.write(data)
    print(path, len(data), "bytes")


tiny = os.path.join(seeds, "tiny-gemma3.gguf")
gqa = os.path.join(seeds, "tiny-gemma3-gqa.gguf")
base = bytearray(open(tiny, "rb").read())

data = bytearray(base)
at, n = tensor_at(tiny, "blk.0.attn_norm.weight")
data[at:at + 4 * n] = struct.pack("<f", float("nan")) * n
write("hostile-nan-norm.gguf", data)

data = bytearray(base)
at, _ = tensor_at(tiny, "token_embd.weight")
data[at:at + 4] = struct.pack("<f", float("inf"))
write("hostile-inf-embd.gguf", data)

data = bytearray(base)
at = key_value_at(data, "gemma3.attention.sliding_window", 4)
data[at:at + 4] = struct.pack("<I", 0)
write("hostile-window-0.gguf", data)

data = bytearray(open(gqa, "rb").read())
# Its per-block pattern (two bools) would be refused first: renamed in place (the same length,
# so no offset moves), an unknown key that readers ignore.
pattern = b"gemma3.attention.sliding_window_pattern"
assert data.count(pattern) == 1
at = data.find(pattern)
data[at:at + len(pattern)] = b"gemma3.attention.sliding_window_patterX"
at = key_value_at(data, "gemma3.block_count", 4)
assert struct.unpack("<I", data[at:at + 4])[0] == 2
data[at:at + 4] = struct.pack("<I", 1)
write("hostile-block-count.gguf", data)
