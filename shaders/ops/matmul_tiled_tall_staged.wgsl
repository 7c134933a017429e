// The tall tiled kernel's reads (shaders/ops/matmul_tiled_tall.wgsl) for the 32-value GGUF types
// whose blocks are whole words (q4_1, q5_1: src/gpu/kernels/geometry.rs, staged_records). On a
// CPU driver every storage load is a loop over the SIMD program's lanes, a mask test, a bounds
// check and a descriptor reload per lane and load, so a word loaded alone costs nearly what a
// vec4 does (docs/performance.md#records-staged-four-rows-at-a-time). In row tiles an
// invocation's rows (four or eight from a multiple of four inside a tile of 32) have their
// records of one chunk side by side, from a 16-byte boundary where the window starts on one:
// they are loaded as vec4s into STAGE, and the block readers take their words from there
// (record_word, which this module defines instead of shaders/codecs/gguf_records.wgsl). Rows
// outside the tiles, or a window off a 16-byte boundary, fill STAGE word by word as before.

const STAGE_ROWS: u32 = 2u * TILED_ROW_BLOCK;
const RECORD_WORDS: u32 = BLOCK_BYTES / 4u;
var<private> STAGE: array<u32, STAGE_ROWS * RECORD_WORDS>;

// Word w of the staged records: record b's words start at b * RECORD_WORDS, so the readers are
// called with base b * BLOCK_BYTES. Every index here is a constant once the loops are unrolled,
// so STAGE stays in registers.
fn record_word(w: u32) -> u32 {
    return STAGE[w];
}

// Rows row..row + n - 1's records of chunk c into STAGE (n = 4 or 8, row a multiple of n).
fn stage_records(row: u32, c: u32, n: u32) {
    if P.vec0 != 0u && (P.off0 & 15u) == 0u && row + n <= P.tiled_rows {
        let v = block_base(row, c) >> 4u;
        for (var k = 0u; k < n * RECORD_WORDS / 4u; k++) {
            let q = plane0_vec4[v + k];
            STAGE[4u * k] = q.x;
            STAGE[4u * k + 1u] = q.y;
            STAGE[4u * k + 2u] = q.z;
            STAGE[4u * k + 3u] = q.w;
        }
    } else {
        for (var b = 0u; b < n; b++) {
            let w = block_base(row + b, c) >> 2u;
            for (var k = 0u; k < RECORD_WORDS; k++) {
                STAGE[b * RECORD_WORDS + k] = plane0[w + k];
            }
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
// rows' records staged; rows past the pass's end decode what was loaded and are not written.
fn tall_one_column(t: Tile, li: u32, lane: u32) {
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
