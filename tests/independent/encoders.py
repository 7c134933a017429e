#!/usr/bin/env python3
"""An independent re-implementation of grouped_absmax (section 7) and fp8_row_maxabs from the
format reference's text, with the row_split_k128_v1, row_scale_v1 and row_interleaved_v1 byte
layouts from layouts.md. It writes random cases and the payload bytes it expects; the Rust test
tests/independent.rs encodes the same inputs and compares the bytes.

Usage: encoders.py OUT_DIR SEED
"""
import json
import os
import sys

import ml_dtypes
import numpy as np

F32 = np.float32
QRANGE = {"q4_g64_fp16": (-8, 7, 4, 64), "q5_g64_fp16": (-16, 15, 5, 64), "q6_g64_fp16": (-32, 31, 6, 64), "q8_g32_fp16": (-127, 127, 8, 32)}


class Refused(Exception):
    pass


def f16_bits(x):
    return int(np.array(F32(x), dtype=F32).astype(np.float16).view(np.uint16))


def f16_value(bits):
    return F32(np.array(bits, dtype=np.uint16).view(np.float16))


def absmax_group(x, qmin, qmax):
    """Section 7.2, step by step, every operation in binary32 or binary16 with RNE."""
    amax = F32(np.max(np.abs(x)))
    if amax == 0:
        return 0, np.zeros(len(x), dtype=np.int64)
    raw = F32(amax / F32(qmax))
    s16 = f16_bits(raw)
    if s16 == 0:
        s16 = 0x0001
    if s16 & 0x7C00 == 0x7C00:
        raise Refused("scale overflow")
    inv = F32(F32(1.0) / f16_value(s16))
    normalized = (x.astype(F32) * inv).astype(F32)
    codes = np.clip(np.rint(normalized), qmin, qmax).astype(np.int64)
    return s16, codes


def align_up(x, a):
    return (x + a - 1) // a * a


def row_split_payload(fmt, n, k, codes, scales):
    """layouts.md's row_split_k128_v1, written from its per-code byte rules."""
    qmin, qmax, bits, group = QRANGE[fmt]
    base_b = {4: 32, 5: 32, 6: 32, 8: 32}[bits]
    high_b = {4: 0, 5: 8, 6: 16, 8: 0}[bits]
    k_pad = align_up(k, 128)
    gpr = k_pad // group
    base_bytes = n * gpr * base_b
    high_offset = align_up(base_bytes, 256)
    scale_offset = high_offset + align_up(n * gpr * high_b, 256)
    out = bytearray(scale_offset + n * gpr * 2)
    for r in range(n):
        for c in range(k):
            g, i = c // group, c % group
            rec = r * gpr + g
            u = int(codes[r, c]) & ((1 << bits) - 1)
            if bits == 8:
                out[rec * 32 + i] = u
            else:
                out[rec * 32 + i // 2] |= (u & 0xF) << (4 * (i % 2))
                if bits == 5:
                    out[high_offset + rec * 8 + i // 8] |= (u >> 4) << (i % 8)
                elif bits == 6:
                    out[high_offset + rec * 16 + i // 4] |= (u >> 4) << (2 * (i % 4))
        for g in range((k + group - 1) // group):
            at = scale_offset + 2 * (r * gpr + g)
            out[at:at + 2] = int(scales[r][g]).to_bytes(2, "little")
    return bytes(out)


def grouped_absmax(fmt, x):
    qmin, qmax, _, group = QRANGE[fmt]
    n, k = x.shape
    codes = np.zeros((n, k), dtype=np.int64)
    scales = []
    for r in range(n):
        row_scales = []
        for g0 in range(0, k, group):
            s, c = absmax_group(x[r, g0:g0 + group], qmin, qmax)
            codes[r, g0:g0 + group] = c
            row_scales.append(s)
        scales.append(row_scales)
    return row_split_payload(fmt, n, k, codes, scales)


def fp8_row_maxabs(fmt, x):
    staged = x.astype(F32).astype(ml_dtypes.bfloat16).astype(F32)
    if not np.all(np.isfinite(staged)):
        raise Refused("non-finite after bf16 staging")
    n, k = x.shape
    codes = np.zeros((n, k), dtype=np.uint8)
    scales = []
    for r in range(n):
        row = staged[r]
        amax = F32(np.max(np.abs(row)))
        if amax == 0:
            scales.append(0)
            continue
        raw = F32(amax / F32(448.0))
        if fmt == "fp8_e4m3fn_row_bf16":
            s = int(np.array(raw, dtype=F32).astype(ml_dtypes.bfloat16).view(np.uint16))
            inf = 0x7F80
            s = 1 if s == 0 else s
            s32 = F32(np.array(s, dtype=np.uint16).view(ml_dtypes.bfloat16))
        else:
            s = f16_bits(raw)
            inf = 0x7C00
            s = 1 if s == 0 else s
            s32 = f16_value(s)
        if s & inf == inf:
            raise Refused("scale overflow")
        with np.errstate(over="ignore", divide="ignore"):
            inv = F32(F32(1.0) / s32)
        if not np.isfinite(inv):
            raise Refused("reciprocal overflow")
        v = np.clip((row * inv).astype(F32), F32(-448.0), F32(448.0))
        codes[r] = v.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        scales.append(s)
    if fmt == "fp8_e4m3fn_row_bf16":
        scale_offset = align_up(n * k, 256)
        out = bytearray(scale_offset + 2 * n)
        out[:n * k] = codes.tobytes()
        for r, s in enumerate(scales):
            out[scale_offset + 2 * r:scale_offset + 2 * r + 2] = s.to_bytes(2, "little")
        return bytes(out)
    out = bytearray()
    for r, s in enumerate(scales):
        out += codes[r].tobytes() + s.to_bytes(2, "little")
    return bytes(out)


def matrices(rng, group):
    """(name, matrix) cases: magnitudes across the range, subnormal-scale groups, exact ties."""
    yield "gaussian", rng.standard_normal((5, 130)).astype(F32)
    yield "heavy_tailed", (rng.standard_t(2, (4, 200)) * 10).astype(F32)
    x = rng.standard_normal((6, 96)).astype(F32)
    for r in range(6):
        x[r] *= F32(10.0 ** rng.integers(-9, 4))  # 1e-9 gives binary16-subnormal scales
    yield "mixed_magnitudes", x
    yield "tiny", (rng.standard_normal((2, 64)) * 1e-30).astype(F32)
    yield "huge", (rng.standard_normal((2, 64)) * 1e5).astype(F32)
    yield "overflowing", (rng.standard_normal((2, 64)) * 1e7).astype(F32)
    # Exact ties: amax = qmax * s (s a binary16 value), other values at (j + 0.5) * s.
    t = np.zeros((8, 2 * group), dtype=F32)
    for r in range(8):
        s = f16_value(f16_bits(F32(rng.uniform(0.01, 2.0))))
        t[r] = (rng.integers(-6, 6, 2 * group) + F32(0.5)) * s
        t[r, 0] = F32(7 * s)
    yield "ties", t
    # Near ties, a few ULPs either side: where x * round_f32(1 / s) and x / s pick different codes.
    near = t.copy()
    steps = rng.integers(-3, 4, near.shape)
    for _ in range(3):
        up, down = steps > 0, steps < 0
        near[up] = np.nextafter(near[up], F32(np.inf))
        near[down] = np.nextafter(near[down], F32(-np.inf))
        steps = steps - np.sign(steps)
    near[:, 0] = t[:, 0]
    yield "near_ties", near
    # bf16-representable E4M3 midpoints with a unit row scale (amax 448 → scale 1.0).
    m = np.array([[448.0, 1.0625, -1.1875, 0.5 + 1 / 32, 3.25, -6.5, 0.0, -0.0]], dtype=F32)
    yield "e4m3_ties", m


def main():
    out_dir, seed = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    jobs = [("grouped_absmax", f) for f in QRANGE] + [("fp8_row_maxabs", f) for f in ("fp8_e4m3fn_row_bf16", "fp8_e4m3fn_row_fp16")]
    for method, fmt in jobs:
        group = QRANGE[fmt][3] if fmt in QRANGE else 32
        for name, x in matrices(rng, group):
            case = f"{method}-{fmt}-{name}"
            x.astype("<f4").tofile(os.path.join(out_dir, case + ".f32"))
            try:
                payload = grouped_absmax(fmt, x) if method == "grouped_absmax" else fp8_row_maxabs(fmt, x)
                with open(os.path.join(out_dir, case + ".bin"), "wb") as f:
                    f.write(payload)
                refused = False
            except Refused:
                refused = True
            cases.append({"case": case, "method": method, "format": fmt, "n": int(x.shape[0]), "k": int(x.shape[1]), "refused": refused})
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main()
