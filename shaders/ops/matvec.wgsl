// Matvec y = W x: a workgroup of 256 invocations owns MATVEC_ROWS rows, MATVEC_LANES lanes per
// row. Each lane walks the row's chunks with stride MATVEC_LANES (each weight byte read once,
// as whole u32 words), then the row's lanes reduce through workgroup memory.

const MATVEC_ROWS: u32 = 4u;
const MATVEC_LANES: u32 = 64u;

var<workgroup> partial: array<f32, 256>;

// This invocation's share of row `row`: chunks lane, lane + 64, ...
fn lane_sum(row: u32, lane: u32) -> f32 {
    var acc = 0.0;
    if row < P.rows {
        for (var c = lane; c < P.chunks; c += MATVEC_LANES) {
            acc += chunk_dot(row, c);
        }
    }
    return acc;
}

@compute @workgroup_size(256)
fn matvec(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let r = li / MATVEC_LANES;
    let lane = li % MATVEC_LANES;
    let row = (wg.y * P.groups_x + wg.x) * MATVEC_ROWS + r;
    partial[li] = lane_sum(row, lane);
    workgroupBarrier();
    for (var s = MATVEC_LANES / 2u; s > 0u; s >>= 1u) {
        if lane < s {
            partial[li] += partial[li + s];
        }
        workgroupBarrier();
    }
    if lane == 0u && row < P.rows {
        OUT[P.out_off + row] = bitcast<u32>(row_finish(row, partial[li]));
    }
}
