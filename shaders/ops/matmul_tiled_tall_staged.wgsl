// The tall tiled kernel's reads (shaders/ops/matmul_tiled_tall.wgsl) for the 32-value GGUF types
// of even block sizes (q4_0, q5_0, q8_0, iq4_nl, q4_1, q5_1: src/gpu/kernels/geometry.rs,
// staged_records), after shaders/ops/matmul_tiled_stage.wgsl. In row tiles an invocation's rows
// (four for one column, eight for more, from a multiple of that inside a tile of 32) have their
// records of one chunk side by side: they are loaded as vec4s into STAGE, and the block readers
// take their words from there. Rows outside the tiles, or a window off a 16-byte boundary, fill
// STAGE record by record from the buffer.

// Eight rows' records, for many columns.
const STAGE_ROWS: u32 = 2u * TILED_ROW_BLOCK;

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
