// Row gather: the exact words of requested rows, in request order. The host groups requests by
// the payload window that holds their source row; this pass's requests are the pairs
// (output row, pass-local source row) at ROWS[2 * (P.index_off + i)], i < P.rows. One
// invocation per 32-value chunk of a request, as in dequant.

const GATHER_WG: u32 = 64u;

@group(0) @binding(4) var<storage, read> ROWS: array<u32>;

@compute @workgroup_size(64)
fn gather(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let id = (wg.y * P.groups_x + wg.x) * GATHER_WG + li;
    if id >= P.rows * P.chunks {
        return;
    }
    let pair = 2u * (P.index_off + id / P.chunks);
    let out_row = ROWS[pair];
    let src = ROWS[pair + 1u];
    write_chunk_words(src, id % P.chunks, P.out_off + out_row * P.k);
}
