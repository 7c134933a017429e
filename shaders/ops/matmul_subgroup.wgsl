// Matmul, subgroup variant (needs the SUBGROUP device feature): subgroupAdd replaces the first
// log2(subgroup size) steps of the tree. It relies on subgroups being runs of at least 4
// consecutive local invocation indices no wider than MATMUL_LANES (so none spans two row blocks)
// — the capability table allows this variant only where the platform probe confirmed the runs
// and the adapter's largest subgroup size is at most the kernel's lanes.

// The sum of column j for row b of subgroup g (at most MATMUL_WG / 4 subgroups) is
// subgroup_sums[(ROW_BLOCK j + b) * MATMUL_WG / 4 + g].
var<workgroup> subgroup_sums: array<f32, SUBGROUP_SLOTS>;

@compute @workgroup_size(MATMUL_WG)
fn matmul_subgroup(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                   @builtin(subgroup_size) sg: u32, @builtin(subgroup_invocation_id) sid: u32) {
    codec_prepare(li, MATMUL_WG);
    let lane = li % MATMUL_LANES;
    let row = block_row(wg, li);
    let sums = lane_sums(row, lane);
    for (var j = 0u; j < column_count(); j++) {
        for (var b = 0u; b < ROW_BLOCK; b++) {
            let total = subgroupAdd(sums[j * ROW_QUARTERS + b / 4u][b % 4u]);
            if sid == 0u {
                subgroup_sums[(ROW_BLOCK * j + b) * (MATMUL_WG / 4u) + li / sg] = total;
            }
        }
    }
    workgroupBarrier();
    if lane == 0u {
        let per_row = MATMUL_LANES / sg;
        let first = (li / MATMUL_LANES) * per_row;
        for (var b = 0u; b < ROW_BLOCK; b++) {
            if row + b < P.rows {
                for (var j = 0u; j < column_count(); j++) {
                    var sum = 0.0;
                    for (var i = 0u; i < per_row; i++) {
                        sum += subgroup_sums[(ROW_BLOCK * j + b) * (MATMUL_WG / 4u) + first + i];
                    }
                    write_column(row + b, j, sum);
                }
            }
        }
    }
}
