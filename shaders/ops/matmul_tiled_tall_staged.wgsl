// The tall tiled kernel's reads (shaders/ops/matmul_tiled_tall.wgsl) for the 32-value GGUF types
// of even block sizes (q4_0, q5_0, q8_0, iq4_nl, q4_1, q5_1: src/gpu/kernels/geometry.rs,
// staged_records). On a CPU driver every storage load is a loop over the SIMD program's lanes,
// with a mask test, a descriptor reload and an extract per lane and load, so a word loaded alone
// costs nearly half what a vec4 does (docs/performance.md#records-staged-a-vec4-at-a-time). In
// row tiles an invocation's rows (four for one column, eight for more, from a multiple of that
// inside a tile of 32) have their records of one chunk side by side: they are loaded as vec4s
// into STAGE, and the block readers take their words from there (record_word, which this module
// defines instead of shaders/codecs/gguf_records.wgsl). Rows outside the tiles, or a window off
// a 16-byte boundary, fill STAGE record by record from the buffer.

const STAGE_ROWS: u32 = 2u * TILED_ROW_BLOCK;
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
// records fill whole vec4s. Four records of a size 2 mod 4 (q4_0, q5_0, q8_0, iq4_nl) fill
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

fn staged_levels(b: u32, c: u32) -> Chunk {
    return block_levels(b * BLOCK_BYTES, c % 8u, c);
}

fn staged_affine(b: u32, c: u32) -> vec4<f32> {
    return block_affine(b * BLOCK_BYTES, c % 8u, c);
}

// One column, four rows an invocation, as shaders/ops/matmul_tiled.wgsl's one_column with the
// rows' records staged. (Eight rows, half the workgroup idle, counted as many instructions and
// took longer: docs/performance.md#records-staged-a-vec4-at-a-time.) Rows past the pass's end
// decode what was loaded and are not written.
fn tall_one_column(wg: vec3<u32>, li: u32, lane: u32) {
    let t = tile_of(wg, li);
    var sums = vec4<f32>(0.0);
    for (var c = 0u; c < P.chunks; c++) {
        let x = column_step(t.j0, 0u, c, lane);
        stage_records(t.row, c, TILED_ROW_BLOCK);
        sums.x += chunk_dot(staged_levels(0u, c), staged_affine(0u, c), x);
        sums.y += chunk_dot(staged_levels(1u, c), staged_affine(1u, c), x);
        sums.z += chunk_dot(staged_levels(2u, c), staged_affine(2u, c), x);
        sums.w += chunk_dot(staged_levels(3u, c), staged_affine(3u, c), x);
    }
    for (var b = 0u; b < TILED_ROW_BLOCK; b++) {
        if t.row + b < P.rows {
            write_column(t.row + b, t.j0, sums[b]);
        }
    }
}

fn tall_stage(row: u32, c: u32) {
    stage_records(row, c, STAGE_ROWS);
}

// Staged record b (row row + b) of chunk c as weights (a q - b).
fn tall_weights(row: u32, b: u32, c: u32) -> Chunk {
    let q = staged_levels(b, c);
    let f = staged_affine(b, c);
    var w: Chunk;
    for (var i = 0u; i < 4u; i++) {
        w[i] = q[i] * f.x - f.y;
        w[i + 4u] = q[i + 4u] * f.z - f.w;
    }
    return w;
}
