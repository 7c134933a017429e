// Dequant: one invocation per 32-value chunk of the pass's rows writes the chunk's exact words,
// C order, from OUT word out_off on (the output is windowed per pass like the payload).

const DEQUANT_WG: u32 = 64u;

@compute @workgroup_size(64)
fn dequant(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let id = (wg.y * P.groups_x + wg.x) * DEQUANT_WG + li;
    if id >= P.rows * P.chunks {
        return;
    }
    let row = id / P.chunks;
    write_chunk_words(row, id % P.chunks, P.out_off + row * P.k);
}
