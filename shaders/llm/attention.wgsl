// Causal grouped-query attention of token columns (src/llm/kernels.rs), over the block's cache
// up to each token's position (local blocks: only the last `window` positions), scores
// soft-capped where the model says (gemma2: cap · tanh(s / cap)).
// One workgroup serves up to four query heads of one KV head — the query heads that share its
// keys and values, as the lanes of a vec4 — for COLUMNS token columns, and one of the
// dispatch's z shares: each key and value is loaded once for four heads and every column, and a
// decode step still has a workgroup per share to spread over the adapter's cores. On GPUs a
// share is a part of the value dimensions (every share scores every key); where POSITION_SHARES
// is set (CPU drivers, whose cost is the per-lane load of each key and value) a share is a run
// of the positions with every value dimension, so each key and value is loaded once, and each
// share writes its softmax's running max, sum and unweighted values to `part` for
// `attention_combine` (docs/llm.md#attention). A prompt's step, with workgroups enough in its
// columns, runs one share. The softmax runs online over chunks of CHUNK positions — each
// invocation scores POSITIONS consecutive positions of a chunk for the four heads of each column
// (each query element it loads serves them all), then the invocations that own value
// dimensions, four each, rescale and accumulate them — so any context length takes the same
// workgroup memory. COLUMNS, written by the host, is 1 but in the CPU drivers' variant for
// prompt steps (`attention_columns`), where a workgroup a column loaded every key and value
// again for each column.

// `Attention`, the uniform block, is generated from src/llm/uniforms.rs.

// Positions an invocation scores per chunk, and the chunk: each query element an invocation
// reads from workgroup memory serves them all. Eight in the CPU drivers' shape (the one with
// POSITION_SHARES), where that read is a per-lane load; four on GPUs, where 128 invocations'
// chunk of 512 weights already takes 8 KB of workgroup memory (docs/llm.md#attention).
const POSITIONS: u32 = select(4u, 8u, POSITION_SHARES);
const CHUNK: u32 = LLM_WG * POSITIONS;
// HEAD_MAX, the longest key or value head (the host refuses longer ones), is
// src/llm/kernels.rs's; gemma3's heads are 128 or 256. An invocation holds four value dimensions
// (a vec4 of the cache) of its workgroup's share, for the four heads: as many as one share, the
// whole head, needs.
const VALUE_QUADS_PER_LANE: u32 = (HEAD_MAX / 4u + LLM_WG - 1u) / LLM_WG;
// Below any score of normed queries and keys; exp of it minus a score is 0.
const MASKED: f32 = -1e30;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> at: Attention;
@group(0) @binding(2) var<storage, read> q: array<f32>;
// Keys and values as vec4s: the host refuses lengths that are not a multiple of 4.
@group(0) @binding(3) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
// Position shares' partial results: per column, head and share, its max, its sum, then its
// value_length unweighted values (`attention_combine` reads them).
@group(0) @binding(6) var<storage, read_write> part: array<f32>;

// Dimension i of the four query heads of column c at c · HEAD_MAX + i (zero for heads past the
// group's end).
var<workgroup> query: array<vec4<f32>, COLUMNS * HEAD_MAX>;
// The chunk's softmax weights of column c, one vec4 of heads per position, from c · CHUNK.
var<workgroup> weight: array<vec4<f32>, COLUMNS * CHUNK>;
var<workgroup> partial4: array<vec4<f32>, COLUMNS * LLM_WG>;

// The lane-wise largest of every invocation's `value`, column by column, seen by all of them.
fn heads_max(lane: u32, value: array<vec4<f32>, COLUMNS>) -> array<vec4<f32>, COLUMNS> {
    for (var c = 0u; c < COLUMNS; c++) {
        partial4[c * LLM_WG + lane] = value[c];
    }
    workgroupBarrier();
    for (var half = LLM_WG / 2u; half > 0u; half /= 2u) {
        if lane < half {
            for (var c = 0u; c < COLUMNS; c++) {
                let i = c * LLM_WG + lane;
                partial4[i] = max(partial4[i], partial4[i + half]);
            }
        }
        workgroupBarrier();
    }
    var total: array<vec4<f32>, COLUMNS>;
    for (var c = 0u; c < COLUMNS; c++) {
        total[c] = partial4[c * LLM_WG];
    }
    workgroupBarrier();
    return total;
}

// The lane-wise sum of every invocation's `value`, column by column, seen by all of them.
fn heads_sum(lane: u32, value: array<vec4<f32>, COLUMNS>) -> array<vec4<f32>, COLUMNS> {
    for (var c = 0u; c < COLUMNS; c++) {
        partial4[c * LLM_WG + lane] = value[c];
    }
    workgroupBarrier();
    for (var half = LLM_WG / 2u; half > 0u; half /= 2u) {
        if lane < half {
            for (var c = 0u; c < COLUMNS; c++) {
                let i = c * LLM_WG + lane;
                partial4[i] += partial4[i + half];
            }
        }
        workgroupBarrier();
    }
    var total: array<vec4<f32>, COLUMNS>;
    for (var c = 0u; c < COLUMNS; c++) {
        total[c] = partial4[c * LLM_WG];
    }
    workgroupBarrier();
    return total;
}

// The first position the token at `pos` sees: its window's start on local blocks.
fn first_seen(pos: u32) -> u32 {
    if at.window > 0u && pos + 1u > at.window {
        return pos + 1u - at.window;
    }
    return 0u;
}

@compute @workgroup_size(LLM_WG)
fn attention(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    // x: KV head and quad of its query heads; y: run of COLUMNS token columns; z: share.
    let group = at.heads / at.kv_heads;
    let quads = (group + 3u) / 4u;
    let kv = wg.x / quads;
    let head0 = kv * group + (wg.x % quads) * 4u;
    let count = min(4u, kv * group + group - head0);
    let j0 = wg.y * COLUMNS;
    let cols = min(COLUMNS, step.columns - j0);
    let pos0 = step.pos0 + j0;
    let kq = at.key_length / 4u;
    let vq = at.value_length / 4u;
    // This workgroup's value quads [v0, v1) and positions [first, last] — of the union of its
    // columns' — a position share past the end has none (first > last) and writes an empty
    // softmax (max MASKED, sum 0).
    var first = first_seen(pos0);
    var last = pos0 + cols - 1u;
    var v0 = 0u;
    var v1 = vq;
    if POSITION_SHARES {
        let span = (last + 1u - first + groups.z - 1u) / groups.z;
        first += wg.z * span;
        last = min(last, first + span - 1u);
    } else {
        let share = (vq + groups.z - 1u) / groups.z;
        v0 = wg.z * share;
        v1 = min(vq, v0 + share);
    }
    // Column c's own positions of those: [lo[c], hi[c]], none for a column past the step's.
    var lo: array<u32, COLUMNS>;
    var hi: array<u32, COLUMNS>;
    for (var c = 0u; c < COLUMNS; c++) {
        lo[c] = max(first, first_seen(pos0 + c));
        hi[c] = min(last, pos0 + c);
        if c >= cols {
            lo[c] = 1u;
            hi[c] = 0u;
        }
    }
    for (var c = 0u; c < cols; c++) {
        for (var i = lane; i < at.key_length; i += LLM_WG) {
            var v = vec4<f32>(0.0);
            for (var h = 0u; h < count; h++) {
                v[h] = q[((j0 + c) * at.heads + head0 + h) * at.key_length + i];
            }
            query[c * HEAD_MAX + i] = v;
        }
    }
    workgroupBarrier();
    var m: array<vec4<f32>, COLUMNS>;
    var total: array<vec4<f32>, COLUMNS>;
    for (var c = 0u; c < COLUMNS; c++) {
        m[c] = vec4<f32>(MASKED);
    }
    // acc[4 (c VALUE_QUADS_PER_LANE + v) + e]: value dimension 4 (v0 + lane + v LLM_WG) + e of
    // column c's four heads.
    var acc: array<vec4<f32>, 4u * COLUMNS * VALUE_QUADS_PER_LANE>;
    for (var s0 = first; s0 <= last; s0 += CHUNK) {
        let s = s0 + lane * POSITIONS;
        // Positions past `last` read `last`'s key (any cached row would do) and are masked after.
        var rows: array<u32, POSITIONS>;
        var score: array<vec4<f32>, COLUMNS * POSITIONS>;
        for (var p = 0u; p < POSITIONS; p++) {
            rows[p] = (min(s + p, last) * at.kv_heads + kv) * kq;
        }
        if s <= last {
            for (var i = 0u; i < kq; i++) {
                if COLUMNS == 1u {
                    // Each key used as it is loaded: with the keys loaded first, as below,
                    // decode steps were slower on lavapipe (docs/llm.md#attention).
                    let q0 = query[4u * i];
                    let q1 = query[4u * i + 1u];
                    let q2 = query[4u * i + 2u];
                    let q3 = query[4u * i + 3u];
                    for (var p = 0u; p < POSITIONS; p++) {
                        let k = k_cache[rows[p] + i];
                        score[p] += q0 * k.x + q1 * k.y + q2 * k.z + q3 * k.w;
                    }
                } else {
                    var k: array<vec4<f32>, POSITIONS>;
                    for (var p = 0u; p < POSITIONS; p++) {
                        k[p] = k_cache[rows[p] + i];
                    }
                    for (var c = 0u; c < COLUMNS; c++) {
                        let q0 = query[c * HEAD_MAX + 4u * i];
                        let q1 = query[c * HEAD_MAX + 4u * i + 1u];
                        let q2 = query[c * HEAD_MAX + 4u * i + 2u];
                        let q3 = query[c * HEAD_MAX + 4u * i + 3u];
                        for (var p = 0u; p < POSITIONS; p++) {
                            let kp = k[p];
                            score[c * POSITIONS + p] += q0 * kp.x + q1 * kp.y + q2 * kp.z + q3 * kp.w;
                        }
                    }
                }
            }
        }
        if at.softcap > 0.0 {
            // |s / cap| past 10 is ±1 in f32; the clamp keeps a tanh built on exp finite.
            for (var i = 0u; i < COLUMNS * POSITIONS; i++) {
                score[i] = at.softcap * tanh(clamp(score[i] / at.softcap, vec4<f32>(-10.0), vec4<f32>(10.0)));
            }
        }
        var top: array<vec4<f32>, COLUMNS>;
        for (var c = 0u; c < COLUMNS; c++) {
            top[c] = vec4<f32>(MASKED);
            for (var p = 0u; p < POSITIONS; p++) {
                if s + p < lo[c] || s + p > hi[c] {
                    score[c * POSITIONS + p] = vec4<f32>(MASKED);
                }
                top[c] = max(top[c], score[c * POSITIONS + p]);
            }
        }
        let chunk_top = heads_max(lane, top);
        var next_m: array<vec4<f32>, COLUMNS>;
        var sum: array<vec4<f32>, COLUMNS>;
        for (var c = 0u; c < COLUMNS; c++) {
            next_m[c] = max(m[c], chunk_top[c]);
            for (var p = 0u; p < POSITIONS; p++) {
                var e = vec4<f32>(0.0);
                if s + p >= lo[c] && s + p <= hi[c] {
                    e = exp(score[c * POSITIONS + p] - next_m[c]);
                }
                weight[c * CHUNK + lane * POSITIONS + p] = e;
                sum[c] += e;
            }
        }
        // Its barriers also publish `weight`.
        let chunk_sum = heads_sum(lane, sum);
        var factor: array<vec4<f32>, COLUMNS>;
        for (var c = 0u; c < COLUMNS; c++) {
            factor[c] = exp(m[c] - next_m[c]);
            total[c] = total[c] * factor[c] + chunk_sum[c];
        }
        let n = min(CHUNK, last + 1u - s0);
        for (var v = 0u; v < VALUE_QUADS_PER_LANE; v++) {
            let d = v0 + lane + v * LLM_WG;
            if d < v1 {
                // a[4 c + e]: this quad's dimension e of column c's heads; each value loaded
                // serves every column.
                var a: array<vec4<f32>, 4u * COLUMNS>;
                for (var c = 0u; c < COLUMNS; c++) {
                    for (var e = 0u; e < 4u; e++) {
                        a[4u * c + e] = acc[4u * (c * VALUE_QUADS_PER_LANE + v) + e] * factor[c];
                    }
                }
                for (var t = 0u; t < n; t++) {
                    let x = v_cache[((s0 + t) * at.kv_heads + kv) * vq + d];
                    for (var c = 0u; c < COLUMNS; c++) {
                        let w = weight[c * CHUNK + t];
                        a[4u * c] += w * x.x;
                        a[4u * c + 1u] += w * x.y;
                        a[4u * c + 2u] += w * x.z;
                        a[4u * c + 3u] += w * x.w;
                    }
                }
                for (var c = 0u; c < COLUMNS; c++) {
                    for (var e = 0u; e < 4u; e++) {
                        acc[4u * (c * VALUE_QUADS_PER_LANE + v) + e] = a[4u * c + e];
                    }
                }
            }
        }
        m = next_m;
        // Every invocation has read this chunk's weights before the next chunk writes them.
        workgroupBarrier();
    }
    if POSITION_SHARES && groups.z > 1u {
        // Unnormalised: attention_combine weighs the shares by their maxima and sums.
        let stride = at.value_length + 2u;
        for (var c = 0u; c < cols; c++) {
            for (var h = 0u; h < count; h++) {
                let base = (((j0 + c) * at.heads + head0 + h) * groups.z + wg.z) * stride;
                if lane == 0u {
                    part[base] = m[c][h];
                    part[base + 1u] = total[c][h];
                }
                for (var v = 0u; v < VALUE_QUADS_PER_LANE; v++) {
                    let d = lane + v * LLM_WG;
                    if d < vq {
                        let o = base + 2u + 4u * d;
                        let a = 4u * (c * VALUE_QUADS_PER_LANE + v);
                        part[o] = acc[a][h];
                        part[o + 1u] = acc[a + 1u][h];
                        part[o + 2u] = acc[a + 2u][h];
                        part[o + 3u] = acc[a + 3u][h];
                    }
                }
            }
        }
        return;
    }
    for (var c = 0u; c < cols; c++) {
        for (var v = 0u; v < VALUE_QUADS_PER_LANE; v++) {
            let d = v0 + lane + v * LLM_WG;
            if d < v1 {
                let a = 4u * (c * VALUE_QUADS_PER_LANE + v);
                for (var h = 0u; h < count; h++) {
                    let o = ((j0 + c) * at.heads + head0 + h) * at.value_length + 4u * d;
                    out[o] = acc[a][h] / total[c][h];
                    out[o + 1u] = acc[a + 1u][h] / total[c][h];
                    out[o + 2u] = acc[a + 2u][h] / total[c][h];
                    out[o + 3u] = acc[a + 3u][h] / total[c][h];
                }
            }
        }
    }
}
