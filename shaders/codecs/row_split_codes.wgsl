// row_split_k128_v1 as the A8 profile reads it (shaders/ops/matmul_a8.wgsl's codec interface): each
// chunk's signed codes as 32 int8 bytes packed four per u32, and the A32 map. Included after
// shaders/codecs/row_split.wgsl, whose plane layout it reads the same way: base bits in plane0, high bits
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

// The 32 stored codes of chunk c of `row` (values 0..15, then 16..31), four per word; the base
// words are one vec4 load where the window allows (plane0_words4), shared by both halves.
fn stored_codes(row: u32, c: u32) -> Codes {
    let base = (P.off0 + record_at(row, c, 4u * BASE_BITS, P.stride0)) / 4u;
    let bytes = vec4<u32>(0u, 8u, 16u, 24u);
    if PACK_CRUMBS {
        // A word per half of sixteen 2-bit codes: two u32 loads, which count fewer instructions
        // on lavapipe than half of a vec4 picked by the chunk's parity
        // (docs/performance.md#kernel-geometry).
        let w = vec2<u32>(plane0[base], plane0[base + 1u]);
        return Codes(pairs_to_bytes(vec4<u32>(w.x) >> bytes), pairs_to_bytes(vec4<u32>(w.y) >> bytes));
    }
    if PACK_BYTES {
        return Codes(plane0_words4(base), plane0_words4(base + 4u));
    }
    if !PACK_NIBBLES {
        // No packing this codec reads: chunk_affine8 makes the chunk NaN.
        return Codes(vec4<u32>(0u), vec4<u32>(0u));
    }
    // Eight nibbles per word, then the high bits of plane1 above them.
    let w = plane0_words4(base);
    var lo = nibbles_to_bytes(vec4<u32>(w.x, w.x >> 16u, w.y, w.y >> 16u));
    var hi = nibbles_to_bytes(vec4<u32>(w.z, w.z >> 16u, w.w, w.w >> 16u));
    let hbase = (P.off1 + record_at(row, c, 4u * HIGH_BITS, P.stride1)) / 4u;
    if HIGH_BITS == 1u {
        let h = plane1[hbase];
        lo |= bits_to_bytes(vec4<u32>(h) >> vec4<u32>(0u, 4u, 8u, 12u)) << vec4<u32>(4u);
        hi |= bits_to_bytes(vec4<u32>(h) >> vec4<u32>(16u, 20u, 24u, 28u)) << vec4<u32>(4u);
    } else if HIGH_BITS == 2u {
        lo |= pairs_to_bytes(vec4<u32>(plane1[hbase]) >> bytes) << vec4<u32>(4u);
        hi |= pairs_to_bytes(vec4<u32>(plane1[hbase + 1u]) >> bytes) << vec4<u32>(4u);
    }
    return Codes(lo, hi);
}

fn chunk_codes(row: u32, c: u32) -> Codes {
    let u = stored_codes(row, c);
    return Codes(signed_bytes(u[0]), signed_bytes(u[1]));
}

// The codes are the A32 levels, so the map is A32's: the group scale, no offset.
fn chunk_affine8(row: u32, c: u32) -> vec4<f32> {
    if !(PACK_CRUMBS || PACK_NIBBLES || PACK_BYTES) {
        return vec4<f32>(poison_f32());
    }
    return chunk_affine(row, c);
}

// Only what shaders/ops/matmul_a8.wgsl's pair path needs to compile: grouped kernels go a chunk at a time
// (A8_PAIRS is false for them: src/gpu/kernels/mod.rs, a8_pairs).
fn chunk_pair8(row: u32, c: u32) -> Pair8 {
    return Pair8(chunk_codes(row, c), chunk_codes(row, c + 1u), chunk_affine8(row, c), chunk_affine8(row, c + 1u));
}
