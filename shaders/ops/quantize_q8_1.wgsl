// The A8 profile's activation: each 32-value chunk of each column quantized as ggml's q8_1
// (`quantize_row_q8_1_ref`, src/gguf/q8_1.rs): d = amax / 127, codes roundf(x · (1 / d)), d
// stored as binary16 — so the scale a product sees is the binary16 value, as in ggml. One
// invocation per (column, chunk) writes the layout shaders/ops/matmul_a8.wgsl reads, with the exact
// integer sum of each half's codes (where ggml keeps the rounded s = d Σ codes).
//
// XF is the f32 activation, columns P.x_stride vec4s apart from vec4 P.in_off on (values at or
// past K are read as zero); OUT receives 12 words per chunk, column j's chunk c at word
// 12 (j P.chunks + c).

@group(0) @binding(4) var<storage, read> XF: array<vec4<f32>>;

const QUANTIZE_WG: u32 = 64u;

// C's roundf: halves away from zero (WGSL's round() takes them to even). v - trunc(v) is exact.
fn round_away(v: f32) -> f32 {
    let t = trunc(v);
    return t + select(0.0, sign(v), abs(v - t) >= 0.5);
}

// The binary16 bits nearest a finite binary32 >= 0 (ties to even), built from its bits.
fn f16_bits_of(v: f32) -> u32 {
    let bits = bitcast<u32>(v);
    let e = i32(bits >> 23u) - 127;
    let sig = (bits & 0x7fffffu) | 0x800000u;
    if bits == 0u || e < -25 {
        return 0u;
    }
    if e > 15 {
        return 0x7c00u;
    }
    // Significand bits to drop: 13 for a normal binary16, more below 2^-14.
    let drop = u32(13 + max(-14 - e, 0));
    var h = sig >> drop;
    let rest = sig & ((1u << drop) - 1u);
    let half = 1u << (drop - 1u);
    if rest > half || (rest == half && (h & 1u) == 1u) {
        h += 1u;
    }
    // A normal value: the implicit bit becomes the exponent field (a carry out of the
    // significand moves it up one, as it should).
    if e >= -14 {
        h += u32(e + 14) << 10u;
    }
    return h;
}

@compute @workgroup_size(64)
fn quantize_q8_1(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let id = (wg.y * P.groups_x + wg.x) * QUANTIZE_WG + li;
    if id >= P.columns * P.chunks {
        return;
    }
    let j = id / P.chunks;
    let c = id % P.chunks;
    let at = P.in_off + j * P.x_stride + 8u * c;
    var x: Chunk;
    var amax = 0.0;
    for (var i = 0u; i < 8u; i++) {
        x[i] = mask_past_k(XF[at + i], 32u * c + 4u * i);
        let a = abs(x[i]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    let d = amax / 127.0;
    let inv = select(0.0, 1.0 / d, d != 0.0);
    var sums = vec2<i32>(0);
    let out = 12u * id;
    for (var i = 0u; i < 8u; i++) {
        let v = x[i] * inv;
        let q = vec4<i32>(vec4<f32>(round_away(v.x), round_away(v.y), round_away(v.z), round_away(v.w)));
        let b = vec4<u32>(bitcast<vec4<u32>>(q) & vec4<u32>(255u)) << vec4<u32>(0u, 8u, 16u, 24u);
        OUT[out + i] = b.x | b.y | b.z | b.w;
        let s = q.x + q.y + q.z + q.w;
        if i < 4u {
            sums.x += s;
        } else {
            sums.y += s;
        }
    }
    OUT[out + 8u] = bitcast<u32>(f16_bits_to_f32(f16_bits_of(d)));
    OUT[out + 9u] = bitcast<u32>(sums.x);
    OUT[out + 10u] = bitcast<u32>(sums.y);
    OUT[out + 11u] = 0u;
}
