// The tiled kernels' subgroup variant (shaders/ops/matmul_tiled.wgsl, matmul_tiled_a8.wgsl): no
// workgroup copy of the activation. Lanes 0..X_STEP_VECS - 1 of each subgroup load one vec4 of a
// column's step each, and every lane takes them from there by subgroupShuffle. On a CPU driver
// each lane's load is a loop over the lanes, so a few useful vec4 loads and as many shuffles
// replace a load per lane and vec4 (docs/performance.md#tiled-products). Needs subgroups of at
// least 8 invocations (capability.rs, tiled_variant).

// Nothing to stage: each column is loaded where it is used.
fn stage_step(j0: u32, columns: u32, step: u32, li: u32) {}

// Column j0 + j's activation for `step`, from the first lanes' loads.
fn column_step(j0: u32, j: u32, step: u32, lane: u32) -> XStep {
    let l = lane % 8u;
    var mine: XVec;
    if l < X_STEP_VECS {
        mine = x_step_vec(j0 + j, step, l);
    }
    var x: XStep;
    for (var i = 0u; i < X_STEP_VECS; i++) {
        x[i] = subgroupShuffle(mine, i);
    }
    return x;
}

@compute @workgroup_size(TILED_WG)
fn matmul_tiled_subgroup(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    tiled(wg, li, lane);
}
