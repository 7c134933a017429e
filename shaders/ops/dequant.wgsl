// Dequant: one invocation per 32-value chunk writes the chunk's exact binary32 words (int32:
// its integer words) to OUT, C order; lanes past K are not written.

const DEQUANT_WG: u32 = 64u;

@compute @workgroup_size(64)
fn dequant(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let id = (wg.y * P.groups_x + wg.x) * DEQUANT_WG + li;
    if id >= P.rows * P.chunks {
        return;
    }
    let row = id / P.chunks;
    let c = id % P.chunks;
    let bits = chunk_bits(row, c);
    let base = P.out_off + row * P.k + c * 32u;
    let n = min(32u, P.k - c * 32u);
    for (var i = 0u; i < 8u; i++) {
        for (var l = 0u; l < 4u; l++) {
            if 4u * i + l < n {
                OUT[base + 4u * i + l] = bits[i][l];
            }
        }
    }
}
