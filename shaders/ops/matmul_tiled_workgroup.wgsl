// The tiled kernels' workgroup variant (shaders/ops/matmul_tiled.wgsl, matmul_tiled_a8.wgsl):
// for each step the workgroup first copies the tile's activation to workgroup memory, each word
// read from storage once per workgroup, and every invocation reads the columns from there. The
// profile's body defines XVec, XStep, X_STEP_VECS (vec4s per column and step) and x_step_vec.

// The tile's activation for one step: column j's X_STEP_VECS vec4s at tile_x[X_STEP_VECS j ..].
var<workgroup> tile_x: array<XVec, TILE_X_VECS>;

fn stage_step(j0: u32, columns: u32, step: u32, li: u32) {
    // The previous step's columns are all read before the copy overwrites them.
    workgroupBarrier();
    for (var v = li; v < X_STEP_VECS * columns; v += TILED_WG) {
        tile_x[v] = x_step_vec(j0 + v / X_STEP_VECS, step, v % X_STEP_VECS);
    }
    workgroupBarrier();
}

// Column j0 + j's activation for `step`, as the workgroup copied it.
fn column_step(j0: u32, j: u32, step: u32, lane: u32) -> XStep {
    var x: XStep;
    for (var i = 0u; i < X_STEP_VECS; i++) {
        x[i] = tile_x[X_STEP_VECS * j + i];
    }
    return x;
}

@compute @workgroup_size(TILED_WG)
fn matmul_tiled(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    tiled(wg, li, 0u);
}
