// The tiled kernel's subgroup variant (shaders/ops/matmul_tiled.wgsl): no workgroup copy of the
// activation. Lanes 0..7 of each subgroup load one vec4 of a column's chunk each, and every lane
// takes the eight from them by subgroupShuffle. On a CPU driver each lane's load is a loop over
// the lanes, so eight useful vec4 loads and eight shuffles replace eight loads per lane
// (docs/performance.md#tiled-products). Needs subgroups of at least 8 invocations (capability.rs).

// Nothing to stage: each column is loaded where it is used.
fn stage_chunk(j0: u32, columns: u32, c: u32, li: u32) {}

// Column j0 + j's activation chunk c, from lanes 0..7's loads.
fn column_chunk(j0: u32, j: u32, c: u32, lane: u32) -> Chunk {
    let mine = x_quad(j0 + j, c, lane % 8u);
    var x: Chunk;
    for (var i = 0u; i < 8u; i++) {
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
