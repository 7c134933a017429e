// row_split_k128_v1: grouped signed-integer codes in a base plane (plane0), a high plane for
// q5/q6 (plane1) and binary16 group scales (plane2). Inside one row, value k's base bits sit at
// bit k * BASE_BITS of the row's base bytes, its high bits at bit k * HIGH_BITS of the row's
// high bytes, and its scale at halfword k / GROUP of the row's scales — records of a row are
// contiguous, so a 32-value chunk is BASE_BITS consecutive u32 words.
//
// Constants prepended by the host from the registry: GROUP, CODE_BITS, BASE_BITS (2, 4 or 8),
// HIGH_BITS (0, 1 or 2), OFFSET_ONE (q2's u - 1 mapping).
//
// Weight = s32 * f32(q): an 11-bit scale times a code of at most 8 bits is exact in binary32,
// and it is a normal number (|s| >= 2^-24), so no rounding or flushing can touch it.

fn signed_codes(u: vec4<u32>) -> vec4<f32> {
    if OFFSET_ONE {
        return vec4<f32>(vec4<i32>(u) - vec4<i32>(1));
    }
    let shift = vec4<u32>(32u - CODE_BITS);
    return vec4<f32>(bitcast<vec4<i32>>(u << shift) >> shift);
}

// The 32 signed codes of chunk c of pass-local row `row`, as f32.
fn chunk_codes(row: u32, c: u32) -> Chunk {
    var q: Chunk;
    let base = (P.off0 + row * P.stride0) / 4u + c * BASE_BITS;
    if BASE_BITS == 2u {
        // q2 and t2: sixteen 2-bit words per u32, lowest lane lowest.
        for (var j = 0u; j < 2u; j++) {
            let w = vec4<u32>(plane0[base + j]);
            for (var t = 0u; t < 4u; t++) {
                q[j * 4u + t] = signed_codes((w >> (vec4<u32>(0u, 2u, 4u, 6u) + vec4<u32>(8u * t))) & vec4<u32>(3u));
            }
        }
    } else if BASE_BITS == 4u {
        // q4, q5, q6: eight nibbles per u32, even lane in the low nibble; high bits from plane1.
        let hbase = (P.off1 + row * P.stride1) / 4u + c * HIGH_BITS;
        for (var j = 0u; j < 4u; j++) {
            let w = vec4<u32>(plane0[base + j]);
            for (var t = 0u; t < 2u; t++) {
                let lane = 8u * j + 4u * t;
                var u = (w >> (vec4<u32>(0u, 4u, 8u, 12u) + vec4<u32>(16u * t))) & vec4<u32>(15u);
                if HIGH_BITS == 1u {
                    let h = vec4<u32>(plane1[hbase]);
                    u |= ((h >> (vec4<u32>(0u, 1u, 2u, 3u) + vec4<u32>(lane))) & vec4<u32>(1u)) << vec4<u32>(4u);
                } else if HIGH_BITS == 2u {
                    let h = vec4<u32>(plane1[hbase + lane / 16u]);
                    let s = vec4<u32>(0u, 2u, 4u, 6u) + vec4<u32>(2u * (lane % 16u));
                    u |= ((h >> s) & vec4<u32>(3u)) << vec4<u32>(4u);
                }
                q[j * 2u + t] = signed_codes(u);
            }
        }
    } else {
        // q8: one two's-complement byte per code.
        for (var j = 0u; j < 8u; j++) {
            let w = bitcast<vec4<i32>>(vec4<u32>(plane0[base + j]) << vec4<u32>(24u, 16u, 8u, 0u));
            q[j] = vec4<f32>(w >> vec4<u32>(24u));
        }
    }
    return q;
}

fn chunk_scale(row: u32, c: u32) -> f32 {
    let g = (c * 32u) / GROUP;
    return f16_bits_to_f32(p2_u16_at(P.off2 + row * P.stride2 + 2u * g));
}

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    return scaled_bits(chunk_codes(row, c), chunk_scale(row, c));
}

// Padding lanes hold code 0 and x is zero-padded, so the last partial chunk needs no mask.
fn chunk_dot(row: u32, c: u32) -> f32 {
    return chunk_sum_qx(chunk_codes(row, c), c) * chunk_scale(row, c);
}

fn row_finish(row: u32, acc: f32) -> f32 {
    return acc;
}
