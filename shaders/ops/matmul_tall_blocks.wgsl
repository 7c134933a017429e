// One column by four rows an invocation, as the tall tiled kernel's one-column path, for the
// 256-value GGUF types whose chunks are read a few words at a time from unaligned records
// (q2_K, q3_K, q6_K, tq1_0: src/gpu/kernels/geometry.rs, staged_blocks), after
// shaders/ops/matmul_tiled_stage.wgsl.
// A chunk of q6_K takes 18 words of its 210-byte record and two halves, each loaded alone and
// funnel-shifted; here the four rows' records of a block, side by side in row tiles, are loaded
// once as vec4s and its eight chunks read from the stage
// (docs/performance.md#256-value-records-staged-a-block-at-a-time). A kernel of its own
// (Columns::TallOneColumn): the readers take every word from the stage, and the tall kernel's
// many-column path reads a chunk of eight rows where it lies.

const STAGE_ROWS: u32 = TILED_ROW_BLOCK;

// Chunk j of the staged block whose first chunk is c0, against the column's activation. j is a
// literal at every call, so once inlined every stage index is a constant and STAGE stays out of
// memory a lane at a time.
fn staged_chunk(t: Tile, c0: u32, j: u32, lane: u32) -> vec4<f32> {
    let c = c0 + j;
    let x = column_step(t.j0, 0u, c, lane);
    return vec4<f32>(
        chunk_dot(block_levels(0u, j, c), block_affine(0u, j, c), x),
        chunk_dot(block_levels(BLOCK_BYTES, j, c), block_affine(BLOCK_BYTES, j, c), x),
        chunk_dot(block_levels(2u * BLOCK_BYTES, j, c), block_affine(2u * BLOCK_BYTES, j, c), x),
        chunk_dot(block_levels(3u * BLOCK_BYTES, j, c), block_affine(3u * BLOCK_BYTES, j, c), x),
    );
}

// Rows past the pass's end decode what was staged and are not written (as one_column's).
@compute @workgroup_size(TILED_WG)
fn matmul_tall_one_column(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    codec_prepare(li, TILED_WG);
    let t = tile_of(wg, li);
    var sums = vec4<f32>(0.0);
    for (var c0 = 0u; c0 < P.chunks; c0 += 8u) {
        stage_records(t.row, c0, TILED_ROW_BLOCK);
        sums += staged_chunk(t, c0, 0u, lane);
        sums += staged_chunk(t, c0, 1u, lane);
        sums += staged_chunk(t, c0, 2u, lane);
        sums += staged_chunk(t, c0, 3u, lane);
        sums += staged_chunk(t, c0, 4u, lane);
        sums += staged_chunk(t, c0, 5u, lane);
        sums += staged_chunk(t, c0, 6u, lane);
        sums += staged_chunk(t, c0, 7u, lane);
    }
    for (var b = 0u; b < TILED_ROW_BLOCK; b++) {
        if t.row + b < P.rows {
            write_column(t.row + b, t.j0, sums[b]);
        }
    }
}
