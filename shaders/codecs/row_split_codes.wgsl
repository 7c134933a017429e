// row_split_k128_v1 as the A8 profile reads it (ops/matmul_a8.wgsl's codec interface): each
// chunk's signed codes as 32 int8 bytes packed four per u32, and the A32 map. Included after
// codecs/row_split.wgsl, whose plane layout it reads the same way: base bits in plane0, high bits
// in plane1, the group scale from chunk_affine.
//
// The codes go to bytes four at a time (one u32 of four values per operation, whole vec4s of
// them), then take their sign: every grouped code fits an int8 (q8's bytes are the codes
// already), so the product is `s · Σ code · x_code` with no offset term.

// Stored codes of CODE_BITS per byte to their int8 value: q2's u - 1 (the high bit of each byte
// set first, so no byte borrows from the next), or the two's-complement sign copied into the
// byte's upper bits (the sign bit times the mask of bits CODE_BITS..7 stays inside its byte).
fn signed_bytes(u: vec4<u32>) -> vec4<u32> {
    if OFFSET_ONE {
        return ((u | vec4<u32>(0x80808080u)) - vec4<u32>(0x01010101u)) ^ vec4<u32>(0x80808080u);
    }
    if CODE_BITS == 8u {
        return u;
    }
    let sign = (u >> vec4<u32>(CODE_BITS - 1u)) & vec4<u32>(0x01010101u);
    return u | (sign * ((0xffu << CODE_BITS) & 0xffu));
}

// The stored codes of values 16h..16h + 15 of chunk c of `row`, four per word.
fn half_bytes(row: u32, c: u32, h: u32) -> vec4<u32> {
    let base = (P.off0 + row * P.stride0) / 4u + c * BASE_BITS;
    if BASE_BITS == 2u {
        // One word holds the half's sixteen 2-bit codes.
        return pairs_to_bytes(vec4<u32>(plane0[base + h]) >> vec4<u32>(0u, 8u, 16u, 24u));
    }
    if BASE_BITS == 8u {
        let at = base + 4u * h;
        return vec4<u32>(plane0[at], plane0[at + 1u], plane0[at + 2u], plane0[at + 3u]);
    }
    // Two words of eight nibbles, then the high bits of plane1 above them.
    let w0 = plane0[base + 2u * h];
    let w1 = plane0[base + 2u * h + 1u];
    var u = nibbles_to_bytes(vec4<u32>(w0, w0 >> 16u, w1, w1 >> 16u));
    let hbase = (P.off1 + row * P.stride1) / 4u + c * HIGH_BITS;
    if HIGH_BITS == 1u {
        let bits = vec4<u32>(plane1[hbase]) >> (vec4<u32>(0u, 4u, 8u, 12u) + vec4<u32>(16u * h));
        u |= bits_to_bytes(bits) << vec4<u32>(4u);
    } else if HIGH_BITS == 2u {
        let bits = vec4<u32>(plane1[hbase + h]) >> vec4<u32>(0u, 8u, 16u, 24u);
        u |= pairs_to_bytes(bits) << vec4<u32>(4u);
    }
    return u;
}

fn chunk_codes(row: u32, c: u32) -> Codes {
    return Codes(signed_bytes(half_bytes(row, c, 0u)), signed_bytes(half_bytes(row, c, 1u)));
}

// The codes are the A32 levels, so the map is A32's: the group scale, no offset.
fn chunk_affine8(row: u32, c: u32) -> vec4<f32> {
    return chunk_affine(row, c);
}

// Only what ops/matmul_a8.wgsl's pair path needs to compile: grouped kernels go a chunk at a time
// (A8_PAIRS is false for them: src/gpu/kernels.rs, a8_pairs).
fn chunk_pair8(row: u32, c: u32) -> Pair8 {
    return Pair8(chunk_codes(row, c), chunk_codes(row, c + 1u), chunk_affine8(row, c), chunk_affine8(row, c + 1u));
}
