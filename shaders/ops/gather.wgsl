// Row gather: the exact words of requested rows, in request order. Request i (i < P.rows) reads
// its id from IDS[P.in_off + i] and writes its K words from OUT[P.out_off + i * P.out_stride] on.
// A pass binds the source rows P.row0..P.row0 + P.span of the table; a request whose id lies in
// another pass's window is that pass's. Nothing about the ids is planned on the host, so an
// engine's ids never leave the device. One invocation per 32-value chunk of a request.
//
// An id at or past the table's N (P.total_rows) is never read: the pass holding row 0 writes the
// poison word over its output row and counts it in STATUS (word 0: how many, word 1: the largest
// such id), which the caller reads (src/gpu/bound.rs, BoundOp::status).

const GATHER_WG: u32 = 64u;

@group(0) @binding(4) var<storage, read> IDS: array<u32>;
@group(0) @binding(7) var<storage, read_write> STATUS: array<atomic<u32>, 2>;

@compute @workgroup_size(64)
fn gather(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let id = (wg.y * P.groups_x + wg.x) * GATHER_WG + li;
    if id >= P.rows * P.chunks {
        return;
    }
    let request = id / P.chunks;
    let c = id % P.chunks;
    let src = IDS[P.in_off + request];
    let out_row = P.out_off + request * P.out_stride;
    if src >= P.total_rows {
        if P.row0 == 0u {
            for (var l = 32u * c; l < min(32u * c + 32u, P.k); l++) {
                OUT[out_row + l] = 0x7fc0deadu;
            }
            if c == 0u {
                atomicAdd(&STATUS[0], 1u);
                atomicMax(&STATUS[1], src);
            }
        }
        return;
    }
    if src < P.row0 || src - P.row0 >= P.span {
        return;
    }
    write_chunk_words(src - P.row0, c, out_row);
}
