// Shared by every kernel: the bindings, the parameter block, byte loaders over array<u32>, and
// exact decoders that build binary32 words with integer operations.
//
// Why integer decoders: WGSL lets an implementation flush subnormals in arithmetic and in
// unpack2x16float, and the legal minimum binary16 scale 0x0001 is a subnormal. Building the
// binary32 word from the stored bits gives the exact value on every platform.
//
// The host prepends the format's constants (generated from the Rust registry) before this file:
// CHUNK, and the codec's own constants. A chunk is 32 consecutive values of one row.

struct Params {
    rows: u32,      // rows in this pass
    k: u32,         // logical K (values per row)
    chunks: u32,    // chunks per row: ceil(K / 32)
    row0: u32,      // global index of this pass's first row
    off0: u32,      // plane 0: byte offset of the pass's first row inside its binding
    stride0: u32,   // plane 0: bytes per row
    off1: u32,
    stride1: u32,
    off2: u32,
    stride2: u32,
    aux0: u32,      // codec-specific (see each codec)
    aux1: u32,
    out_off: u32,   // dequant: word offset of the pass's first output inside the output binding
    groups_x: u32,  // workgroups along x, to linearise a 2-D dispatch
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> plane0: array<u32>;
@group(0) @binding(2) var<storage, read> plane1: array<u32>;
@group(0) @binding(3) var<storage, read> plane2: array<u32>;
@group(0) @binding(4) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> OUT: array<u32>;

// Little-endian u32 at any byte offset. Only bytes inside the payload are ever used; a read of
// the following word for an unaligned offset stays inside the 4-byte-padded buffer or is
// clamped by the runtime's bounds checks and then shifted out.
fn p0_u32_at(b: u32) -> u32 {
    let w = b >> 2u;
    let s = (b & 3u) * 8u;
    if s == 0u {
        return plane0[w];
    }
    return (plane0[w] >> s) | (plane0[w + 1u] << (32u - s));
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

fn p2_u32_at(b: u32) -> u32 {
    let w = b >> 2u;
    let s = (b & 3u) * 8u;
    if s == 0u {
        return plane2[w];
    }
    return (plane2[w] >> s) | (plane2[w + 1u] << (32u - s));
}

fn p2_u16_at(b: u32) -> u32 {
    return p2_u32_at(b) & 0xffffu;
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

// bf16 bits -> binary32: the word is the high half (numeric-formats.txt section 3.1).
fn bf16_bits_to_f32(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
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

// Sign-extends the low `bits` bits of u.
fn sign_extend(u: u32, bits: u32) -> i32 {
    return bitcast<i32>(u << (32u - bits)) >> (32u - bits);
}

// x[c*32 + 4i .. +4], zero beyond K (the host pads x to whole chunks with zeros).
fn x4(c: u32, i: u32) -> vec4<f32> {
    return X[c * 8u + i];
}

// A chunk's 32 values as eight vec4s.
alias Chunk = array<vec4<f32>, 8>;
// A chunk's 32 exact binary32 words, for dequant.
alias ChunkBits = array<vec4<u32>, 8>;

// The words of q * s for codecs whose weight is one scale times an integer level (exact there).
fn scaled_bits(q: Chunk, s: f32) -> ChunkBits {
    var out: ChunkBits;
    for (var i = 0u; i < 8u; i++) {
        out[i] = bitcast<vec4<u32>>(q[i] * s);
    }
    return out;
}

// Σ q x over chunk c.
fn chunk_sum_qx(q: Chunk, c: u32) -> f32 {
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        acc += q[i] * x4(c, i);
    }
    return acc.x + acc.y + acc.z + acc.w;
}
