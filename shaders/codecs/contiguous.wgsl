// contiguous_le_v1: direct words in C order, viewed as rows of the last axis. plane0 byte
// off0 + row*stride0 + k*WORD_BYTES. Constants prepended by the host: WORD_BYTES (2 for bf16, 4
// for fp32 and int32).
//
// Dequant copies words bit for bit — no float operation touches them, so NaN payloads, signed
// zeros, subnormals and int32 values all survive.

fn word_at(row: u32, k: u32) -> u32 {
    let b = P.off0 + row * P.stride0 + k * WORD_BYTES;
    if WORD_BYTES == 2u {
        return (p0_u32_at(b) & 0xffffu) << 16u;
    }
    return plane0[b >> 2u];
}

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    var out: ChunkBits;
    for (var i = 0u; i < 8u; i++) {
        let k = c * 32u + 4u * i;
        out[i] = vec4<u32>(word_at(row, k), word_at(row, k + 1u), word_at(row, k + 2u), word_at(row, k + 3u));
    }
    return out;
}

fn chunk_dot(row: u32, c: u32) -> f32 {
    let last = (c + 1u) * 32u > P.k;
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        let k = c * 32u + 4u * i;
        var v = bitcast<vec4<f32>>(vec4<u32>(word_at(row, k), word_at(row, k + 1u), word_at(row, k + 2u), word_at(row, k + 3u)));
        if last {
            // Words past K belong to the next row: mask them (a NaN there times zero is NaN).
            v = select(v, vec4<f32>(0.0), vec4<u32>(k) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(P.k));
        }
        acc += v * x4(c, i);
    }
    return acc.x + acc.y + acc.z + acc.w;
}

fn row_finish(row: u32, acc: f32) -> f32 {
    return acc;
}
