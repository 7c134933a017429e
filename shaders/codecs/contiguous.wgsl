// contiguous_le_v1: direct words in C order, viewed as rows of the last axis. plane0 byte
// off0 + row*stride0 + k*WORD_BYTES. Constants prepended by the host: WORD_BYTES (2 for bf16, 4
// for fp32 and int32).
//
// Dequant copies words bit for bit — no float operation touches them, so NaN payloads, signed
// zeros, subnormals and int32 values all survive.

// One word at any position (bf16 rows start on odd halfwords when K is odd).
fn word_at(row: u32, k: u32) -> u32 {
    let b = P.off0 + row * P.stride0 + k * WORD_BYTES;
    if WORD_BYTES == 2u {
        return (p0_u32_at(b) & 0xffffu) << 16u;
    }
    return plane0[b >> 2u];
}

// The chunk's 32 words as binary32 bit patterns (bf16 expanded to the high half). Words past K
// are whatever follows the row; callers mask or skip them.
fn chunk_words(row: u32, c: u32) -> ChunkBits {
    var out: ChunkBits;
    let start = P.off0 + row * P.stride0 + c * 32u * WORD_BYTES;
    if WORD_BYTES == 4u || (start & 3u) == 0u {
        // Aligned: whole u32 words, two bf16 values per word (the even one in the low half).
        let base = start >> 2u;
        for (var i = 0u; i < 8u; i++) {
            if WORD_BYTES == 4u {
                out[i] = vec4<u32>(plane0[base + 4u * i], plane0[base + 4u * i + 1u], plane0[base + 4u * i + 2u], plane0[base + 4u * i + 3u]);
            } else {
                let w0 = plane0[base + 2u * i];
                let w1 = plane0[base + 2u * i + 1u];
                out[i] = vec4<u32>(w0 << 16u, w0 & 0xffff0000u, w1 << 16u, w1 & 0xffff0000u);
            }
        }
        return out;
    }
    for (var i = 0u; i < 8u; i++) {
        let k = c * 32u + 4u * i;
        out[i] = vec4<u32>(word_at(row, k), word_at(row, k + 1u), word_at(row, k + 2u), word_at(row, k + 3u));
    }
    return out;
}

fn chunk_bits(row: u32, c: u32) -> ChunkBits {
    return chunk_words(row, c);
}

fn chunk_dot(row: u32, c: u32) -> f32 {
    let words = chunk_words(row, c);
    let last = (c + 1u) * 32u > P.k;
    var acc = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        var v = bitcast<vec4<f32>>(words[i]);
        if last {
            // Words past K belong to the next row: mask them (a NaN there times zero is NaN).
            let k = vec4<u32>(c * 32u + 4u * i) + vec4<u32>(0u, 1u, 2u, 3u);
            v = select(v, vec4<f32>(0.0), k >= vec4<u32>(P.k));
        }
        acc += v * x4(c, i);
    }
    return acc.x + acc.y + acc.z + acc.w;
}

fn row_finish(row: u32, acc: f32) -> f32 {
    return acc;
}
