// The tall tiled kernel's stage (src/gpu/kernels/geometry.rs: staged_records, staged_blocks):
// an invocation's rows' records loaded as vec4s into private memory, where the block readers
// take their words (record_word, which a module with this file defines instead of
// shaders/codecs/gguf_records.wgsl). On a CPU driver every storage load is a loop over the SIMD
// program's lanes, with a mask test, a descriptor reload and an extract per lane and load, so a
// word loaded alone costs nearly half what a vec4 does
// (docs/performance.md#records-staged-a-vec4-at-a-time). The file after it sets STAGE_ROWS: the
// rows one stage holds.

// Record b starts at byte b * BLOCK_BYTES of the stage: on a word for every b where blocks are
// whole words, two bytes into one for odd b where they are not.
const STAGE_WORDS: u32 = STAGE_ROWS * BLOCK_BYTES / 4u;
var<private> STAGE: array<u32, STAGE_WORDS>;

// Word w of the staged records (the readers are called with base b * BLOCK_BYTES). Every index
// here is a constant once the loops are unrolled, so STAGE stays in registers.
fn record_word(w: u32) -> u32 {
    return STAGE[w];
}

// The u32 at byte b of plane 0, b even: two aligned loads funnel-shifted.
fn stage_u32_at(b: u32) -> u32 {
    let w = b >> 2u;
    let s = (b & 3u) * 8u;
    // As p0_u32_at: (x << 1) << (31 - s) is x << (32 - s), and 0 for s = 0.
    return (plane0[w] >> s) | ((plane0[w + 1u] << 1u) << (31u - s));
}

// Record `b` of the stage from plane 0 byte `src` (even), for rows outside the tiles.
fn stage_record(b: u32, src: u32) {
    let at = b * BLOCK_BYTES / 4u;
    if BLOCK_BYTES % 4u == 0u {
        for (var k = 0u; k < BLOCK_BYTES / 4u; k++) {
            STAGE[at + k] = plane0[(src >> 2u) + k];
        }
    } else if (b & 1u) == 0u {
        // Whole words, then the last two bytes into the low half of a word whose high half
        // record b + 1 fills.
        for (var k = 0u; k < BLOCK_BYTES / 4u; k++) {
            STAGE[at + k] = stage_u32_at(src + 4u * k);
        }
        STAGE[at + BLOCK_BYTES / 4u] = stage_u32_at(src + BLOCK_BYTES - 2u) & 0xffffu;
    } else {
        // The first two bytes into the high half of the word record b - 1 ended in, then whole
        // words.
        STAGE[at] |= stage_u32_at(src) << 16u;
        for (var k = 0u; k < BLOCK_BYTES / 4u; k++) {
            STAGE[at + 1u + k] = stage_u32_at(src + 2u + 4u * k);
        }
    }
}

// Rows row..row + n - 1's records of chunk c into STAGE (n = 4 or 8, row a multiple of n).
// In row tiles they lie side by side from byte s, which is on a 16-byte boundary where n
// records fill whole vec4s. Four records of a size 2 mod 4 (q4_0, q5_0, q8_0, iq4_nl; q3_K, q6_K) fill
// whole vec4s and two words, from s on a boundary or 8 bytes past one by the lane: those two
// words come first or last, and each stage word is picked by a select, never a branch.
fn stage_records(row: u32, c: u32, n: u32) {
    let words = n * BLOCK_BYTES / 4u;
    if P.vec0 != 0u && (P.off0 & 15u) == 0u && row + n <= P.tiled_rows {
        let s = block_base(row, c);
        let vecs = words / 4u;
        if words % 4u == 0u {
            for (var k = 0u; k < vecs; k++) {
                let q = plane0_vec4[(s >> 4u) + k];
                STAGE[4u * k] = q.x;
                STAGE[4u * k + 1u] = q.y;
                STAGE[4u * k + 2u] = q.z;
                STAGE[4u * k + 3u] = q.w;
            }
            return;
        }
        let late = (s & 8u) != 0u;
        let v = select(s, s + 8u, late) >> 4u;
        let t = select(s + 16u * vecs, s, late) >> 2u;
        let two = vec2<u32>(plane0[t], plane0[t + 1u]);
        // Stage words 4k.. take vec4 k on a boundary; 8 bytes past one, the previous vec4's
        // (or the two's) last half and this one's first. A loop of vec4s, not of words, so that
        // it unrolls (34 words for q8_0) and every index stays a constant.
        var prev = vec4<u32>(two, two);
        for (var k = 0u; k < vecs; k++) {
            let q = plane0_vec4[v + k];
            let lo = select(q.xy, prev.zw, late);
            let hi = select(q.zw, q.xy, late);
            STAGE[4u * k] = lo.x;
            STAGE[4u * k + 1u] = lo.y;
            STAGE[4u * k + 2u] = hi.x;
            STAGE[4u * k + 3u] = hi.y;
            prev = q;
        }
        let last = select(two, prev.zw, late);
        STAGE[4u * vecs] = last.x;
        STAGE[4u * vecs + 1u] = last.y;
    } else {
        for (var b = 0u; b < n; b++) {
            stage_record(b, block_base(row + b, c));
        }
    }
}
