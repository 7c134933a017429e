// gguf_blocks_v1, ggml's legacy blocks whose value is one exact product d * q: q8_0, q4_0, q5_0,
// iq4_nl (32 values) and q2_0 (64 values). Row `row` starts at plane0 byte off0 + row*stride0;
// blocks are BLOCK_BYTES long and not 4-byte aligned (q4_0 is 18 bytes), so every read goes
// through the unaligned loaders. A 32-value chunk lies inside one block.
//
// Constants prepended by the host from the registry: BLOCK_VALUES, BLOCK_BYTES, and GGUF_KIND
// (which inner decoder below; one per ggml type, like ggml-webgpu's per-type sections).
//
// Weight = d * q with d a binary16 (at most 11 significant bits, never an f32 subnormal) and
// |q| <= 127: exact in binary32, as ggml's dequantize_row_* computes it.

const KIND_Q8_0: u32 = 0u;
const KIND_Q4_0: u32 = 1u;
const KIND_Q5_0: u32 = 2u;
const KIND_IQ4_NL: u32 = 3u;
const KIND_Q2_0: u32 = 4u;

fn p0_u8_at(b: u32) -> u32 {
    return (plane0[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

// kvalues_iq4nl packed four int8 per u32 (read by shifts: a dynamically indexed const array is
// copied to function memory by some compilers).
fn kvalue_iq4nl(i: u32) -> f32 {
    let words = vec4<u32>(0xbfad9881u, 0xf6eaddcfu, 0x26190d01u, 0x71594535u);
    let w = select(select(words.x, words.y, i >= 4u), select(words.z, words.w, i >= 12u), i >= 8u);
    return f32(bitcast<i32>(w << (24u - 8u * (i & 3u))) >> 24u);
}

// The block holding chunk c of a row, and the first value of the chunk inside it.
fn block_base(row: u32, c: u32) -> u32 {
    return P.off0 + row * P.stride0 + (c * 32u / BLOCK_VALUES) * BLOCK_BYTES;
}

fn chunk_scale(row: u32, c: u32) -> f32 {
    return f16_bits_to_f32(p0_u32_at(block_base(row, c)) & 0xffffu);
}

// The chunk's 32 integer levels q (the weight is d * q).
fn chunk_levels(row: u32, c: u32) -> Chunk {
    let base = block_base(row, c);
    var q: Chunk;
    if GGUF_KIND == KIND_Q8_0 {
        for (var i = 0u; i < 8u; i++) {
            let w = bitcast<vec4<i32>>(vec4<u32>(p0_u32_at(base + 2u + 4u * i)) << vec4<u32>(24u, 16u, 8u, 0u));
            q[i] = vec4<f32>(w >> vec4<u32>(24u));
        }
    } else if GGUF_KIND == KIND_Q2_0 {
        // 64-value block: chunk half h takes code bytes [8h, 8h + 8); q = c - 1.
        let half = (c * 32u) % BLOCK_VALUES / 32u;
        for (var j = 0u; j < 2u; j++) {
            let w = vec4<u32>(p0_u32_at(base + 2u + 8u * half + 4u * j));
            for (var t = 0u; t < 4u; t++) {
                let u = (w >> (vec4<u32>(0u, 2u, 4u, 6u) + vec4<u32>(8u * t))) & vec4<u32>(3u);
                q[4u * j + t] = vec4<f32>(vec4<i32>(u) - vec4<i32>(1));
            }
        }
    } else {
        // q4_0, q5_0, iq4_nl: value j < 16 is the low nibble of byte j, value j >= 16 the high one.
        let qs = base + select(2u, 6u, GGUF_KIND == KIND_Q5_0);
        let qh = select(0u, p0_u32_at(base + 2u), GGUF_KIND == KIND_Q5_0);
        for (var j = 0u; j < 4u; j++) {
            let w = p0_u32_at(qs + 4u * j);
            for (var h = 0u; h < 2u; h++) {
                var v: vec4<f32>;
                for (var l = 0u; l < 4u; l++) {
                    let lane = 4u * j + l;
                    let nib = (w >> (8u * l + 4u * h)) & 15u;
                    if GGUF_KIND == KIND_IQ4_NL {
                        v[l] = kvalue_iq4nl(nib);
                    } else if GGUF_KIND == KIND_Q5_0 {
                        let hi = (qh >> (lane + 16u * h)) & 1u;
                        v[l] = f32(i32(nib | (hi << 4u)) - 16);
                    } else {
                        v[l] = f32(i32(nib) - 8);
                    }
                }
                q[j + 4u * h] = v;
            }
        }
    }
    return q;
}

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    let q = chunk_levels(row, c);
    let d = chunk_scale(row, c);
    var out: ChunkBits;
    for (var i = 0u; i < 8u; i++) {
        out[i] = bitcast<vec4<u32>>(q[i] * d);
    }
    return out;
}

// K is a multiple of the block, so every chunk is whole.
fn chunk_dot(row: u32, c: u32) -> f32 {
    let q = chunk_levels(row, c);
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        acc += q[i] * x4(c, i);
    }
    return (acc.x + acc.y + acc.z + acc.w) * chunk_scale(row, c);
}

fn row_finish(row: u32, acc: f32) -> f32 {
    return acc;
}
