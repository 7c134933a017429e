// What the tiled kernels' bodies share (shaders/ops/matmul_tiled.wgsl for A32,
// shaders/ops/matmul_tiled_a8.wgsl for A8): where a workgroup's tile lies, and writing it.

// An invocation's part of a tile: its first row (TILED_ROW_BLOCK consecutive rows from there),
// and the tile's first column and column count (workgroup_id.z is the column tile).
struct Tile {
    row: u32,
    j0: u32,
    columns: u32,
}

fn tile_of(wg: vec3<u32>, li: u32) -> Tile {
    let j0 = wg.z * TILE_COLUMNS;
    return Tile((wg.y * P.groups_x + wg.x) * TILED_ROWS + li * TILED_ROW_BLOCK, j0, min(TILE_COLUMNS, P.columns - j0));
}

// An invocation's sums: four rows to a vec4, one per column of the tile.
alias TileSums = array<vec4<f32>, TILE_COLUMNS>;

// Writes the sums of the invocation's rows that lie inside the pass.
fn write_tile(t: Tile, acc: TileSums) {
    for (var b = 0u; b < TILED_ROW_BLOCK; b++) {
        if t.row + b < P.rows {
            for (var j = 0u; j < t.columns; j++) {
                write_column(t.row + b, t.j0 + j, acc[j][b]);
            }
        }
    }
}
