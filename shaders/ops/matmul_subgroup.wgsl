// Matmul, subgroup variant (needs the SUBGROUP device feature): subgroupAdd replaces the first
// log2(subgroup size) steps of the tree. It relies on subgroups being runs of consecutive local
// invocation indices with a size dividing 64 — the capability table allows this variant only
// where the platform probe confirmed exactly that.

// Column j's sum of subgroup g (at most 256 / 4 subgroups) is subgroup_sums[j * 64 + g].
var<workgroup> subgroup_sums: array<f32, 512>;

@compute @workgroup_size(256)
fn matmul_subgroup(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                   @builtin(subgroup_size) sg: u32, @builtin(subgroup_invocation_id) sid: u32) {
    let r = li / MATMUL_LANES;
    let lane = li % MATMUL_LANES;
    let row = (wg.y * P.groups_x + wg.x) * MATMUL_ROWS + r;
    lane_sums(row, lane, li);
    // Each invocation reads only its own partial slots, so no barrier is needed before the adds.
    for (var j = 0u; j < P.columns; j++) {
        let total = subgroupAdd(partial[j * MATMUL_WG + li]);
        if sid == 0u {
            subgroup_sums[j * 64u + li / sg] = total;
        }
    }
    workgroupBarrier();
    if lane == 0u && row < P.rows {
        let per_row = MATMUL_LANES / sg;
        for (var j = 0u; j < P.columns; j++) {
            var sum = 0.0;
            for (var i = 0u; i < per_row; i++) {
                sum += subgroup_sums[j * 64u + r * per_row + i];
            }
            write_column(row, j, sum);
        }
    }
}
