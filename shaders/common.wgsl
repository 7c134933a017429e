// Shared by every kernel: the bindings, the parameter block, byte loaders over array<u32>, and
// exact decoders that build binary32 words with integer operations.
//
// Why integer decoders: WGSL lets an implementation flush subnormals in arithmetic and in
// unpack2x16float, and the legal minimum binary16 scale 0x0001 is a subnormal. Building the
// binary32 word from the stored bits gives the exact value on every platform.
//
// The host prepends the format's constants (generated from the Rust registry) before this file:
// CHUNK, and the codec's own constants. A chunk is 32 consecutive values of one row.

// `struct Params` is generated from the Rust definition (src/gpu/params.rs) and prepended by
// the host, so the two sides cannot drift. Binding 4 is the op's own input (activations or row
// indices) and is declared by the op file.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> plane0: array<u32>;
@group(0) @binding(2) var<storage, read> plane1: array<u32>;
@group(0) @binding(3) var<storage, read> plane2: array<u32>;
@group(0) @binding(5) var<storage, read_write> OUT: array<u32>;
// Plane 0's window again, as vec4<u32>: bound only where P.vec0 says the window starts and ends
// on whole vec4s, and read only where the codec's rows do too (off0, stride0). A CPU driver
// checks bounds once per load per invocation, so one vec4 load costs what one u32 load does.
@group(0) @binding(6) var<storage, read> plane0_vec4: array<vec4<u32>>;

// Words w..w + 3 of plane 0, for a w that is a multiple of 4 wherever the rows start on whole
// vec4s: one vec4 load where the window allows it (P.vec0 and the rows' offset and stride,
// uniform), else four.
fn plane0_words4(w: u32) -> vec4<u32> {
    if P.vec0 != 0u && ((P.off0 | P.stride0) & 15u) == 0u {
        return plane0_vec4[w >> 2u];
    }
    return vec4<u32>(plane0[w], plane0[w + 1u], plane0[w + 2u], plane0[w + 3u]);
}

// The byte offset, from the pass's first row of its plane, of record `rec` (`rec_bytes` long:
// a GGUF block, a chunk's codes, a group's scale) of pass-local row `row`, rows `stride` bytes
// apart. The first P.tiled_rows rows of a pass lie in row tiles (src/gpu/plan/tiles.rs): a tile
// holds ROW_TILE rows in the bytes they take row by row, record-major, so the rows a subgroup
// decodes together at one chunk are side by side in memory instead of a row apart. Rows past
// them (and every row where P.tiled_rows is 0) lie row by row. A select, not a branch: only the
// last tile's invocations can differ.
fn record_at(row: u32, rec: u32, rec_bytes: u32, stride: u32) -> u32 {
    let r = row % ROW_TILE;
    let tiled = (row - r) * stride + (rec * ROW_TILE + r) * rec_bytes;
    return select(row * stride + rec * rec_bytes, tiled, row < P.tiled_rows);
}

// Little-endian u32 at any byte offset. Only bytes inside the payload are ever used; a read of
// the following word for an unaligned offset stays inside the 4-byte-padded buffer or is
// clamped by the runtime's bounds checks and then shifted out.
fn p0_u32_at(b: u32) -> u32 {
    let w = b >> 2u;
    let s = (b & 3u) * 8u;
    // Branch-free: (x << 1) << (31 - s) is x << (32 - s) for s > 0 and 0 for s = 0 (a shift by
    // 32 is not defined in WGSL). Neighbouring invocations read blocks of different alignment,
    // and a SIMD compiler runs both sides of a branch that diverges.
    return (plane0[w] >> s) | ((plane0[w + 1u] << 1u) << (31u - s));
}

fn p1_u32_at(b: u32) -> u32 {
    let w = b >> 2u;
    let s = (b & 3u) * 8u;
    if s == 0u {
        return plane1[w];
    }
    return (plane1[w] >> s) | (plane1[w + 1u] << (32u - s));
}

fn p1_u16_at(b: u32) -> u32 {
    return p1_u32_at(b) & 0xffffu;
}

fn p1_u8_at(b: u32) -> u32 {
    return (plane1[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

// A u16 at an even byte offset (row_split's group scales): it never straddles a word, so one
// load, where a u32 at an offset of 2 mod 4 takes two.
fn p2_u16_at(b: u32) -> u32 {
    return (plane2[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu;
}

// binary16 bits -> binary32, exact. Subnormals m * 2^-24 are binary32 normals: f32(m) * 2^-24 is
// exact and cannot flush.
fn f16_bits_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if e == 0u {
        return bitcast<f32>(sign | bitcast<u32>(f32(m) * bitcast<f32>(0x33800000u)));
    }
    if e == 31u {
        return bitcast<f32>(sign | 0x7f800000u | (m << 13u));
    }
    return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

// E4M3FN -> binary32 (no NaN words reach here: validated payloads only). Subnormals m * 2^-9 are
// binary32 normals, built by an exact product.
fn e4m3fn_to_f32(c: u32) -> f32 {
    let sign = (c & 0x80u) << 24u;
    let e = (c >> 3u) & 0xfu;
    let m = c & 7u;
    if e == 0u {
        return bitcast<f32>(sign | bitcast<u32>(f32(m) * bitcast<f32>(0x3b000000u)));
    }
    return bitcast<f32>(sign | ((e + 120u) << 23u) | (m << 20u));
}

// E2M1 -> binary32 with integer operations: exponent bits 2:1 (bias 1), mantissa bit 0, sign
// bit 3. A lookup table would be simpler to read, but a dynamically indexed `const` array is
// copied into function memory on every call by several compilers.
fn e2m1_to_f32(c: u32) -> f32 {
    let e = (c >> 1u) & 3u;
    let m = c & 1u;
    let normal = bitcast<f32>(((e + 126u) << 23u) | (m << 22u));
    let v = select(normal, f32(m) * 0.5, e == 0u);
    return select(v, -v, (c & 8u) != 0u);
}

// x * 2^e for any |e| <= 300 with one rounding at most (only when the result is subnormal).
// WGSL's ldexp is indeterminate for e > 128 and may return zero for e <= -127, so the exponent
// is applied in two halves, each well inside the range.
fn scale_pow2(x: f32, e: i32) -> f32 {
    let a = e / 2;
    return ldexp(ldexp(x, a), e - a);
}

// A binary32 word as (significand in [1, 2), exponent), subnormals normalised — so dividing
// by or multiplying with it never feeds a subnormal or an extreme value to f32 arithmetic.
// The word must be finite and nonzero.
fn split_f32(bits: u32) -> vec2<f32> {
    let e = i32((bits >> 23u) & 0xffu);
    var m = bits & 0x7fffffu;
    var exp = e - 127;
    if e == 0 {
        let top = 31 - i32(countLeadingZeros(m));
        exp = top - 149;
        m = (m << u32(23 - top)) & 0x7fffffu;
    }
    return vec2<f32>(bitcast<f32>(0x3f800000u | m), f32(exp));
}

// p / d for a finite, nonzero binary32 divisor word: the division sees a divisor in [1, 2),
// where WGSL promises 2.5 ULP, and the exponent is applied exactly.
fn divide_by_word(p: f32, d_bits: u32) -> f32 {
    let d = split_f32(d_bits);
    return scale_pow2(p / d.x, -i32(d.y));
}

// A chunk's 32 exact levels as eight vec4s (lane 4i + l is q[i][l]).
alias Chunk = array<vec4<f32>, 8>;

// A level vector where lanes at or past K are zero (`first` is the chunk's first value index):
// the words there belong to the next row (or the multipliers), and a NaN there times a zero
// activation would still be NaN.
fn mask_past_k(v: vec4<f32>, first: u32) -> vec4<f32> {
    let k = vec4<u32>(first) + vec4<u32>(0u, 1u, 2u, 3u);
    return select(v, vec4<f32>(0.0), k >= vec4<u32>(P.k));
}

// The exact binary32 word of sig * 2^exp (sig < 2^24; the value is representable or overflows).
fn exact_word(sign: u32, sig: u32, exp: i32) -> u32 {
    if sig == 0u {
        return sign;
    }
    let msb = 31 - i32(countLeadingZeros(sig));
    let top = msb + exp;
    if top > 127 {
        return sign | 0x7f800000u;
    }
    if top >= -126 {
        return sign | (u32(top + 127) << 23u) | ((sig << u32(23 - msb)) & 0x7fffffu);
    }
    // Subnormal: the fraction is sig * 2^(exp + 149), an exact left shift when the product of
    // two stored words is exactly representable (the only use: fp8 row products).
    return sign | (sig << u32(exp + 149));
}

// A finite binary32 word as (odd integer significand, exponent): value = sig * 2^exp, with
// subnormals handled and trailing zeros stripped so two short significands multiply in u32.
fn word_sig_exp(bits: u32) -> vec2<i32> {
    let e = i32((bits >> 23u) & 0xffu);
    var sig = bits & 0x7fffffu;
    var exp = -149;
    if e != 0 {
        sig |= 0x800000u;
        exp = e - 150;
    }
    if sig == 0u {
        return vec2<i32>(0, 0);
    }
    let tz = countTrailingZeros(sig);
    return vec2<i32>(i32(sig >> tz), exp + i32(tz));
}

// The exact word of x * y for two binary32 words whose significands together have at most 24
// bits (an E4M3FN level times a bf16 or binary16 row multiplier: 4 + 8 or 4 + 11 bits). The
// product is assembled, never computed, so a subnormal result is not flushed.
fn exact_product_word(x_bits: u32, y_bits: u32) -> u32 {
    let a = word_sig_exp(x_bits);
    let b = word_sig_exp(y_bits);
    let sign = (x_bits ^ y_bits) & 0x80000000u;
    return exact_word(sign, u32(a.x * b.x), a.y + b.y);
}

// p * y for a finite binary32 word y that may be subnormal: the multiply sees y's significand
// in [1, 2) and the exponent is applied exactly, so a subnormal factor is never fed to an f32
// multiply (which a device may flush).
fn multiply_by_word(p: f32, y_bits: u32) -> f32 {
    if (y_bits & 0x7fffffffu) == 0u {
        return p * bitcast<f32>(y_bits);
    }
    let y = split_f32(y_bits);
    return scale_pow2(p * y.x, i32(y.y)) * select(1.0, -1.0, (y_bits & 0x80000000u) != 0u);
}

// The poison NaN 0x7fc0dead as f32, returned by branches the host never takes. Built from a
// `let`, not a literal: a NaN is not a valid constant expression, so the browser's compiler
// (Tint) refuses `bitcast<f32>(0x7fc0deadu)`, which naga folds without complaint.
fn poison_f32() -> f32 {
    let bits = 0x7fc0deadu;
    return bitcast<f32>(bits);
}

// ---- codes to int8 bytes, four values per u32 (the A8 codec files) ----------------------------

// Bits 0..3 of x to bit 0 of bytes 0..3: the multiply's four copies of the nibble (at bits 0, 7,
// 14 and 21) do not overlap, so nothing carries, and bit k of copy k is bit 8k.
fn bits_to_bytes(x: vec4<u32>) -> vec4<u32> {
    return ((x & vec4<u32>(15u)) * 0x00204081u) & vec4<u32>(0x01010101u);
}

// The four 2-bit fields of x's low byte to bytes 0..3.
fn pairs_to_bytes(x: vec4<u32>) -> vec4<u32> {
    let b = x & vec4<u32>(0xffu);
    let t = (b | (b << vec4<u32>(12u))) & vec4<u32>(0x000f000fu);
    return (t | (t << vec4<u32>(6u))) & vec4<u32>(0x03030303u);
}

// The four nibbles of x's low 16 bits to bytes 0..3.
fn nibbles_to_bytes(x: vec4<u32>) -> vec4<u32> {
    let h = x & vec4<u32>(0xffffu);
    let t = (h | (h << vec4<u32>(8u))) & vec4<u32>(0x00ff00ffu);
    return (t | (t << vec4<u32>(4u))) & vec4<u32>(0x0f0f0f0fu);
}
