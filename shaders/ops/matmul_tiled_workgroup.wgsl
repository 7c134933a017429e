// The tiled kernel's workgroup variant (shaders/ops/matmul_tiled.wgsl): for each chunk the
// workgroup first copies the tile's activation chunk to workgroup memory, each word read from
// storage once per workgroup, and every invocation reads the columns from there.

// The tile's activation chunk: column j's eight vec4s at tile_x[8 j ..].
var<workgroup> tile_x: array<vec4<f32>, TILE_X_VECS>;

fn stage_chunk(j0: u32, columns: u32, c: u32, li: u32) {
    // The previous chunk's columns are all read before the copy overwrites them.
    workgroupBarrier();
    for (var v = li; v < 8u * columns; v += TILED_WG) {
        tile_x[v] = x_quad(j0 + v / 8u, c, v % 8u);
    }
    workgroupBarrier();
}

// Column j0 + j's activation chunk c, as the workgroup copied it.
fn column_chunk(j0: u32, j: u32, c: u32, lane: u32) -> Chunk {
    var x: Chunk;
    for (var i = 0u; i < 8u; i++) {
        x[i] = tile_x[8u * j + i];
    }
    return x;
}

@compute @workgroup_size(TILED_WG)
fn matmul_tiled(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    tiled(wg, li, 0u);
}
