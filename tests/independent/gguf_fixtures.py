#!/usr/bin/env python3
"""Writes a GGUF file with llama.cpp's own Python library (`gguf`) holding a tensor of every
type gguf knows — random valid blocks (finite binary16 scales) and, where gguf can quantize,
blocks quantized from random data — plus metadata of every value type, and records gguf's own
dequantization of each tensor. tests/gguf.rs reads the file with the Rust reader and decodes
with the Rust oracle, which must match bit for bit.

Usage: gguf_fixtures.py OUT_DIR SEED FORMATS_JSON
FORMATS_JSON is `ninfer-wgpu formats --json`: the registry's ggml types and where their blocks keep
binary16 multipliers, so a type added to the registry is generated with valid scales here without
an edit. Writes OUT_DIR/fixture.gguf, OUT_DIR/<tensor>.f32 (gguf's dequantization) and
manifest.json: {"tensors": [...], "not_in_gguf": [registered ggml type ids gguf does not know]}.
"""
import json
import os
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

# Byte offsets of the binary16 multipliers inside the blocks of the types gguf knows and the
# registry does not (the registry's own come from FORMATS_JSON, which overrides these).
F16_AT = {T.Q4_1: [0, 2], T.Q5_1: [0, 2], T.TQ1_0: [52], T.TQ2_0: [64]}
# A super-scale spread over the top nibbles of four u16 words at this offset (iq1_m).
F16_TOP_NIBBLES = {}


def load_registry(path):
    """The registry's ggml type ids; fills F16_AT and F16_TOP_NIBBLES from it."""
    ids = []
    for f in json.load(open(path)):
        if f.get("ggml_name") is None:
            continue
        t, fields = f["ggml_type"], f["ggml_f16_fields"]
        ids.append(t)
        if "at" in fields:
            F16_AT[t] = fields["at"]
        else:
            F16_TOP_NIBBLES[t] = fields["top_nibbles"]
    return ids


def finite_f16(rng, n):
    """Random finite binary16 words of both signs across the exponent range."""
    v = rng.standard_normal(n).astype(np.float32) * np.float32(2.0) ** rng.integers(-14, 8, n).astype(np.float32)
    return v.astype(np.float16).view(np.uint16)


def random_blocks(rng, qtype, n_blocks):
    values, size = gguf.GGML_QUANT_SIZES[qtype]
    b = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    for at in F16_AT.get(int(qtype), []):
        b[:, at:at + 2] = finite_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    at = F16_TOP_NIBBLES.get(int(qtype))
    if at is not None:
        d = finite_f16(rng, n_blocks)
        words = b[:, at:at + 8].copy().view(np.uint16)
        for i in range(4):
            words[:, i] = (words[:, i] & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12)
        b[:, at:at + 8] = words.view(np.uint8)
    return b


def main():
    out, seed = sys.argv[1], int(sys.argv[2])
    registered = load_registry(sys.argv[3])
    known = {int(t) for t in gguf.GGML_QUANT_SIZES}
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    writer = gguf.GGUFWriter(os.path.join(out, "fixture.gguf"), "ninfer-test")
    writer.add_key_value("test.u8", 200, gguf.GGUFValueType.UINT8)
    writer.add_key_value("test.i8", -5, gguf.GGUFValueType.INT8)
    writer.add_key_value("test.u16", 60000, gguf.GGUFValueType.UINT16)
    writer.add_key_value("test.i16", -30000, gguf.GGUFValueType.INT16)
    writer.add_key_value("test.u32", 4000000000, gguf.GGUFValueType.UINT32)
    writer.add_key_value("test.i32", -2000000000, gguf.GGUFValueType.INT32)
    writer.add_key_value("test.f32", 1.5, gguf.GGUFValueType.FLOAT32)
    writer.add_key_value("test.bool", True, gguf.GGUFValueType.BOOL)
    writer.add_key_value("test.string", "ninfer ✓", gguf.GGUFValueType.STRING)
    writer.add_key_value("test.u64", 2**63 + 5, gguf.GGUFValueType.UINT64)
    writer.add_key_value("test.i64", -(2**62), gguf.GGUFValueType.INT64)
    writer.add_key_value("test.f64", -0.25, gguf.GGUFValueType.FLOAT64)
    writer.add_array("test.strings", ["a", "bc", ""])
    writer.add_array("test.ints", [1, 2, 3])
    manifest = []
    for qtype in sorted(gguf.GGML_QUANT_SIZES, key=int):
        if qtype not in quants._type_traits and qtype not in (T.F32, T.F16):
            continue
        values, size = gguf.GGML_QUANT_SIZES[qtype]
        n, k = 3, 2 * max(values, 32)
        cases = []
        if qtype in (T.F32, T.F16, T.BF16):
            data = rng.standard_normal((n, k)).astype(np.float32)
            if qtype == T.F32:
                cases.append(("plain", data, data.copy()))
            elif qtype == T.F16:
                cases.append(("plain", data.astype(np.float16), data.astype(np.float16).astype(np.float32)))
            else:
                q = quants.quantize(data, qtype)
                cases.append(("quantized", q, quants.dequantize(q, qtype)))
        else:
            blocks = random_blocks(rng, qtype, n * k // values).reshape(n, k // values * size)
            cases.append(("random", blocks, quants.dequantize(blocks, qtype)))
            try:
                data = (rng.standard_normal((n, k)) * 3).astype(np.float32)
                q = quants.quantize(data, qtype)
                cases.append(("quantized", q, quants.dequantize(q, qtype)))
            except (NotImplementedError, quants.QuantError):
                pass
        for label, stored, deq in cases:
            name = f"{qtype.name.lower()}.{label}"
            if qtype in (T.F32, T.F16):
                writer.add_tensor(name, stored)
            else:
                writer.add_tensor(name, stored, raw_dtype=qtype)
            deq.astype("<f4").tofile(os.path.join(out, name + ".f32"))
            manifest.append({"name": name, "ggml_type": int(qtype), "type": qtype.name, "n": n, "k": k})
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"tensors": manifest, "not_in_gguf": [t for t in registered if t not in known]}, f, indent=1)


if __name__ == "__main__":
    main()
