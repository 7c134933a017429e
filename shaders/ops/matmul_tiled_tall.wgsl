// The tiled kernel's tall shape (src/gpu/kernels/ops.rs, Columns::TiledTall): A32's subgroup
// variant as CPU drivers take it, assembled after shaders/ops/matmul_tiled.wgsl and
// matmul_tiled_subgroup.wgsl, with an entry point of its own. One column goes by four rows as
// there; two or more by eight (docs/performance.md#eight-rows-an-invocation-on-cpu-drivers).
// How rows are read is the last file's: tall_one_column, tall_stage and tall_weights come from
// shaders/ops/matmul_tiled_tall_direct.wgsl, or from matmul_tiled_tall_staged.wgsl for the types
// whose records are loaded eight rows at a time (src/gpu/kernels/geometry.rs, staged_records),
// where one column takes eight rows too.
// Only modules of this shape hold it: its idle invocations leave the shuffles out of uniform
// control flow, which WGSL's subgroup uniformity rule refuses where a browser checks it.

// Four rows' sums with one column's chunk x: a scalar sum per row, a quad of x at a time, the
// form the eight-row counts were taken with (at four rows it counted as dot_chunk's did), so a
// row's sum is one register beside a quad of x however many rows an invocation holds.
fn four_rows(w0: Chunk, w1: Chunk, w2: Chunk, w3: Chunk, x: Chunk) -> vec4<f32> {
    var s = vec4<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        s += vec4<f32>(dot(w0[i], x[i]), dot(w1[i], x[i]), dot(w2[i], x[i]), dot(w3[i], x[i]));
    }
    return s;
}

// Many columns with eight rows an invocation. Each column's activation step is loaded and
// shuffled once per SIMD program, a loop over its lanes on a CPU driver, and here serves eight
// rows instead of four. The first half of the workgroup takes its TILED_ROWS rows; the second
// half returns at once (a CPU driver runs a workgroup's SIMD programs one after another, so an
// idle one costs a check), which keeps the rows per workgroup those the planner and the
// one-column path use. Nothing is staged in this variant, so no barrier follows the return.
fn tall(wg: vec3<u32>, li: u32, lane: u32) {
    if li >= TILED_WG / 2u {
        return;
    }
    let j0 = wg.z * TILE_COLUMNS;
    let columns = min(TILE_COLUMNS, P.columns - j0);
    let row = (wg.y * P.groups_x + wg.x) * TILED_ROWS + li * 2u * TILED_ROW_BLOCK;
    var lo: TileSums;
    var hi: TileSums;
    for (var c = 0u; c < P.chunks; c++) {
        tall_stage(row, c);
        let w0 = tall_weights(row, 0u, c);
        let w1 = tall_weights(row, 1u, c);
        let w2 = tall_weights(row, 2u, c);
        let w3 = tall_weights(row, 3u, c);
        let w4 = tall_weights(row, 4u, c);
        let w5 = tall_weights(row, 5u, c);
        let w6 = tall_weights(row, 6u, c);
        let w7 = tall_weights(row, 7u, c);
        for (var j = 0u; j < columns; j++) {
            let x = column_step(j0, j, c, lane);
            lo[j] += four_rows(w0, w1, w2, w3, x);
            hi[j] += four_rows(w4, w5, w6, w7, x);
        }
    }
    for (var j = 0u; j < columns; j++) {
        for (var b = 0u; b < TILED_ROW_BLOCK; b++) {
            if row + b < P.rows {
                write_column(row + b, j0 + j, lo[j][b]);
            }
            if row + TILED_ROW_BLOCK + b < P.rows {
                write_column(row + TILED_ROW_BLOCK + b, j0 + j, hi[j][b]);
            }
        }
    }
}

@compute @workgroup_size(TILED_WG)
fn matmul_tiled_tall(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    codec_prepare(li, TILED_WG);
    if P.columns == 1u {
        tall_one_column(wg, li, lane);
        return;
    }
    tall(wg, li, lane);
}
