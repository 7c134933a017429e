// Matvec, subgroup variant (needs the SUBGROUP device feature): subgroupAdd
// replaces the first log2(subgroup size) steps of the tree. It relies on subgroups being runs of
// consecutive local invocation indices with a size dividing 64 — the capability table allows
// this variant only where the platform probe confirmed exactly that.

@compute @workgroup_size(256)
fn matvec_subgroup(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                   @builtin(subgroup_size) sg: u32, @builtin(subgroup_invocation_id) sid: u32) {
    let r = li / MATVEC_LANES;
    let lane = li % MATVEC_LANES;
    let row = (wg.y * P.groups_x + wg.x) * MATVEC_ROWS + r;
    let total = subgroupAdd(lane_sum(row, lane));
    if sid == 0u {
        partial[li / sg] = total;
    }
    workgroupBarrier();
    if lane == 0u && row < P.rows {
        let per_row = MATVEC_LANES / sg;
        var acc = 0.0;
        for (var j = 0u; j < per_row; j++) {
            acc += partial[r * per_row + j];
        }
        OUT[P.out_off + row] = bitcast<u32>(row_finish(row, acc));
    }
}
