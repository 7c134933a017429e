// Matmul for many columns, A32 (the A8 profile's body is shaders/ops/matmul_tiled_a8.wgsl): each weight chunk is decoded once per tile of TILE_COLUMNS
// columns, where the 8-column kernel (shaders/ops/matmul.wgsl) decodes it once per 8, and the
// activation is read from workgroup memory. A workgroup takes TILED_ROWS rows, TILED_ROW_BLOCK
// consecutive rows per invocation, and one column tile (workgroup_id.z). Y is column-major as in
// matmul.wgsl: OUT[P.out_off + j * P.out_stride + row], for the P.columns columns from
// X[P.in_off + j * P.x_stride ..] on.
//
// Every invocation is at the same chunk at once: it decodes its rows' chunk once and takes every
// column's activation chunk in turn, staged by the variant (a workgroup copy, or subgroup
// shuffles), where the 8-column kernel's lanes each load their own (most of its loads at many
// columns: docs/performance.md#tiled-products).
//
// The decoded chunks become weights (a q - b) once, then serve every column: the products the
// other kernels compute, rounded in another order (the A32 bound allows it).

// A row's chunk as weights (a q - b), zero for a row past the pass's end.
fn chunk_weights(row: u32, c: u32) -> Chunk {
    var w: Chunk;
    if row < P.rows {
        let q = chunk_levels(row, c);
        let f = chunk_affine(row, c);
        for (var i = 0u; i < 4u; i++) {
            w[i] = q[i] * f.x - f.y;
            w[i + 4u] = q[i + 4u] * f.z - f.w;
        }
    }
    return w;
}

// What the variants stage per column and step (shaders/ops/matmul_tiled_workgroup.wgsl,
// shaders/ops/matmul_tiled_subgroup.wgsl): a step is one chunk, its activation 8 vec4<f32>.
alias XVec = vec4<f32>;
alias XStep = Chunk;
const X_STEP_VECS: u32 = 8u;

fn x_step_vec(j: u32, step: u32, i: u32) -> vec4<f32> {
    return x_quad(j, step, i);
}

fn dot_chunk(w: Chunk, x: Chunk) -> f32 {
    var s = w[0] * x[0];
    for (var i = 1u; i < 8u; i++) {
        s += w[i] * x[i];
    }
    return hsum(s);
}

// One column (P.columns is uniform, so every invocation takes this path or none): the rows one
// at a time against the staged chunk, matvec's row order and expression (chunk_dot in
// shaders/ops/matmul_a32.wgsl), with one sum per row instead of TILE_COLUMNS, which CPU drivers
// would keep in memory. Where a CPU driver's tiled kernel is the subgroup variant this is its
// matvec for most formats (src/gpu/kernels/geometry.rs, matvec_by_rows).
// The four rows are written out and decoded whatever their index: a row past the pass's end
// reads bytes that are not its own (or zeros, past the binding) and only its write is skipped.
// A loop over the rows, or a decode under `row < P.rows`, made a CPU driver blend every decoded
// value under the lanes' mask and keep the sums in memory: a third more instructions
// (docs/performance.md#one-column-without-masks).
fn one_column(t: Tile, li: u32, lane: u32) {
    var sums = vec4<f32>(0.0);
    for (var c = 0u; c < P.chunks; c++) {
        stage_step(t.j0, 1u, c, li);
        let x = column_step(t.j0, 0u, c, lane);
        sums.x += chunk_dot(chunk_levels(t.row, c), chunk_affine(t.row, c), x);
        sums.y += chunk_dot(chunk_levels(t.row + 1u, c), chunk_affine(t.row + 1u, c), x);
        sums.z += chunk_dot(chunk_levels(t.row + 2u, c), chunk_affine(t.row + 2u, c), x);
        sums.w += chunk_dot(chunk_levels(t.row + 3u, c), chunk_affine(t.row + 3u, c), x);
    }
    for (var b = 0u; b < TILED_ROW_BLOCK; b++) {
        if t.row + b < P.rows {
            write_column(t.row + b, t.j0, sums[b]);
        }
    }
}

// The body of both variants' entry points: `stage_step` and `column_step` are the variant's
// (shaders/ops/matmul_tiled_workgroup.wgsl, shaders/ops/matmul_tiled_subgroup.wgsl); `lane` is
// the subgroup invocation id where the variant has one.
fn tiled(wg: vec3<u32>, li: u32, lane: u32) {
    codec_prepare(li, TILED_WG);
    let t = tile_of(wg, li);
    if P.columns == 1u {
        one_column(t, li, lane);
        return;
    }
    var acc: TileSums;
    // Every loop here is uniform (the same trip count for every invocation), as the barriers
    // need; rows past the pass's end decode to zero weights.
    for (var c = 0u; c < P.chunks; c++) {
        stage_step(t.j0, t.columns, c, li);
        let w0 = chunk_weights(t.row, c);
        let w1 = chunk_weights(t.row + 1u, c);
        let w2 = chunk_weights(t.row + 2u, c);
        let w3 = chunk_weights(t.row + 3u, c);
        for (var j = 0u; j < t.columns; j++) {
            let x = column_step(t.j0, j, c, lane);
            acc[j] += vec4<f32>(dot_chunk(w0, x), dot_chunk(w1, x), dot_chunk(w2, x), dot_chunk(w3, x));
        }
    }
    write_tile(t, acc);
}
