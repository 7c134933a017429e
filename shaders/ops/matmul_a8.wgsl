// Matmul, A8 profile (the A8 (q8_1) bound of ../shared/spec/criteria.md#matvec--matmul): the
// activation arrives quantized to ggml's q8_1 by shaders/ops/quantize_q8_1.wgsl, and a chunk's
// product is integer dot products of the weights' int8 codes with the activation's codes, then
// f32: per 16-value half, `d_x (a Σ code·x_code - b Σ x_code)`. `dot4` is dot4I8Packed
// (shaders/ops/dot4_packed.wgsl) or the portable emulation (shaders/ops/dot4_emulated.wgsl).
// `lane_sums` is what shaders/ops/matmul.wgsl calls.
//
// The codec's A8 file (shaders/codecs/gguf_codes.wgsl, shaders/codecs/row_split_codes.wgsl,
// shaders/codecs/block_scale_codes.wgsl) provides
// `chunk_codes(row, c) -> Codes` and `chunk_affine8(row, c)` (a0, b0, a1, b1) for one chunk, and
// `chunk_pair8(row, c) -> Pair8` for chunks c and c + 1 where A8_PAIRS (generated:
// src/gpu/kernels/geometry.rs, a8_pairs) says the kernel goes a pair at a time.
//
// X holds, per column j and chunk c, three vec4<u32> from X[P.in_off + j * P.x_stride + 3c]: the 32 int8
// codes (values 0..15, then 16..31, four per word, lowest byte first), then (binary32 bits of
// the binary16 scale d, Σ codes of values 0..15, Σ codes of values 16..31, 0).

// Codes and Pair8 are shaders/ops/codes.wgsl's.

@group(0) @binding(4) var<storage, read> X: array<vec4<u32>>;

// Σ of the 16 int8 products of one half.
fn dot_half(w: vec4<u32>, x: vec4<u32>) -> i32 {
    return dot4(w.x, x.x) + dot4(w.y, x.y) + dot4(w.z, x.z) + dot4(w.w, x.w);
}

// Σ_k w x over one chunk. The integer sums are exact (|Σ| <= 16 · 127 · 127 < 2^24).
fn chunk_dot8(q: Codes, f: vec4<f32>, x0: vec4<u32>, x1: vec4<u32>, m: vec4<u32>) -> f32 {
    let qx = vec2<f32>(f32(dot_half(q[0], x0)), f32(dot_half(q[1], x1)));
    let sx = vec2<f32>(f32(bitcast<i32>(m.y)), f32(bitcast<i32>(m.z)));
    return bitcast<f32>(m.x) * (f.x * qx.x - f.y * sx.x + f.z * qx.y - f.w * sx.y);
}

// The codes and map of chunk c of `row`, or zeros for a row past the pass's end.
fn codes_or_zero(row: u32, c: u32, q: ptr<function, Codes>, f: ptr<function, vec4<f32>>) {
    if row < P.rows {
        *q = chunk_codes(row, c);
        *f = chunk_affine8(row, c);
    }
}

// Chunks c and c + 1 of `row`, or zeros for a row past the pass's end.
fn pair_or_zero(row: u32, c: u32) -> Pair8 {
    if row < P.rows {
        return chunk_pair8(row, c);
    }
    return Pair8(Codes(), Codes(), vec4<f32>(0.0), vec4<f32>(0.0));
}

// The activation of chunks c and c + 1 of one column, loaded once for the block's rows.
struct XPair {
    a0: vec4<u32>,
    a1: vec4<u32>,
    am: vec4<u32>,
    b0: vec4<u32>,
    b1: vec4<u32>,
    bm: vec4<u32>,
}

fn pair_dot(p: Pair8, x: XPair) -> f32 {
    return chunk_dot8(p.a, p.fa, x.a0, x.a1, x.am) + chunk_dot8(p.b, p.fb, x.b0, x.b1, x.bm);
}

// As shaders/ops/matmul_a32.wgsl: this invocation's share of its row block's rows for every
// column.
// ggml's blocks of 64 values or more go a pair of chunks at a time (A8_PAIRS).
fn lane_sums(row: u32, lane: u32) -> Sums {
    if A8_PAIRS {
        return pair_sums(row, lane);
    }
    let walk = lane_walk(lane, select(0u, P.chunks, row < P.rows));
    if KERNEL_COLUMNS == 1u && MATVEC_ROW_AT_A_TIME {
        // Matvec: as shaders/ops/matmul_a32.wgsl, the activation chunk first, then one row at a
        // time for the block's ROW_BLOCK rows.
        var acc: array<f32, ROW_BLOCK>;
        for (var c = walk.x; c < walk.y; c += MATMUL_RUN) {
            let at = P.in_off + 3u * c;
            let x0 = X[at];
            let x1 = X[at + 1u];
            let m = X[at + 2u];
            for (var b = 0u; b < ROW_BLOCK; b++) {
                var q: Codes;
                var f = vec4<f32>(0.0);
                codes_or_zero(row + b, c, &q, &f);
                acc[b] += chunk_dot8(q, f, x0, x1, m);
            }
        }
        return row_sums(acc);
    }
    // Rows together (ROW_BLOCK is 4 here: src/gpu/kernels/geometry.rs, RowBlock::for_kernel):
    // column sums of the four rows, indexed by the (uniform) column: a private array, which a
    // SIMD compiler keeps as whole vectors, where workgroup slots cost a scatter per update.
    var acc: Sums;
    for (var c = walk.x; c < walk.y; c += MATMUL_RUN) {
        var q0: Codes;
        var q1: Codes;
        var q2: Codes;
        var q3: Codes;
        var f0 = vec4<f32>(0.0);
        var f1 = vec4<f32>(0.0);
        var f2 = vec4<f32>(0.0);
        var f3 = vec4<f32>(0.0);
        codes_or_zero(row, c, &q0, &f0);
        codes_or_zero(row + 1u, c, &q1, &f1);
        codes_or_zero(row + 2u, c, &q2, &f2);
        codes_or_zero(row + 3u, c, &q3, &f3);
        for (var j = 0u; j < column_count(); j++) {
            let at = P.in_off + j * P.x_stride + 3u * c;
            let x0 = X[at];
            let x1 = X[at + 1u];
            let m = X[at + 2u];
            acc[j] += vec4<f32>(chunk_dot8(q0, f0, x0, x1, m), chunk_dot8(q1, f1, x0, x1, m), chunk_dot8(q2, f2, x0, x1, m), chunk_dot8(q3, f3, x0, x1, m));
        }
    }
    return acc;
}

fn pair_sums(row: u32, lane: u32) -> Sums {
    // Pairs of chunks (P.chunks is even: whole 256-value blocks).
    let walk = lane_walk(lane, select(0u, P.chunks / 2u, row < P.rows));
    if KERNEL_COLUMNS == 1u && MATVEC_ROW_AT_A_TIME {
        var acc: array<f32, ROW_BLOCK>;
        for (var c = 2u * walk.x; c < 2u * walk.y; c += 2u * MATMUL_RUN) {
            let at = P.in_off + 3u * c;
            let x = XPair(X[at], X[at + 1u], X[at + 2u], X[at + 3u], X[at + 4u], X[at + 5u]);
            for (var b = 0u; b < ROW_BLOCK; b++) {
                acc[b] += pair_dot(pair_or_zero(row + b, c), x);
            }
        }
        return row_sums(acc);
    }
    // Rows together, every row of the block decoded before the column loop, so each activation
    // load serves ROW_BLOCK rows (8 in the grid families' several-column kernels:
    // src/gpu/kernels/geometry.rs, RowBlock). The decoded pairs are spilled by a CPU driver, but a
    // spill costs a vector store and load where each activation word is a per-lane loop. Four
    // rows to a Quad, not an array of ROW_BLOCK pairs: lavapipe kept that array in scratch
    // memory, more than doubling the count (docs/performance.md#four-rows-to-a-quad).
    var acc: Sums;
    for (var c = 2u * walk.x; c < 2u * walk.y; c += 2u * MATMUL_RUN) {
        let lo = quad_or_zero(row, c);
        var hi: Quad;
        if ROW_QUARTERS == 2u {
            hi = quad_or_zero(row + 4u, c);
        }
        for (var j = 0u; j < column_count(); j++) {
            let at = P.in_off + j * P.x_stride + 3u * c;
            let x = XPair(X[at], X[at + 1u], X[at + 2u], X[at + 3u], X[at + 4u], X[at + 5u]);
            acc[j * ROW_QUARTERS] += quad_dot(lo, x);
            if ROW_QUARTERS == 2u {
                acc[j * ROW_QUARTERS + 1u] += quad_dot(hi, x);
            }
        }
    }
    return acc;
}

// Four consecutive rows' pairs at chunk c.
struct Quad {
    p0: Pair8,
    p1: Pair8,
    p2: Pair8,
    p3: Pair8,
}

fn quad_or_zero(row: u32, c: u32) -> Quad {
    return Quad(pair_or_zero(row, c), pair_or_zero(row + 1u, c), pair_or_zero(row + 2u, c), pair_or_zero(row + 3u, c));
}

fn quad_dot(q: Quad, x: XPair) -> vec4<f32> {
    return vec4<f32>(pair_dot(q.p0, x), pair_dot(q.p1, x), pair_dot(q.p2, x), pair_dot(q.p3, x));
}
