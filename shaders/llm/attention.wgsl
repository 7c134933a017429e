// Causal grouped-query attention of one token column (src/llm/kernels.rs), over the block's
// cache up to the token's position (local blocks: only the last `window` positions), scores
// soft-capped where the model says (gemma2: cap · tanh(s / cap)).
// One workgroup serves up to four query heads of one KV head — the query heads that share its
// keys and values, as the lanes of a vec4 — and one of the dispatch's z shares: each key and
// value is loaded once for four heads, and a decode step still has a workgroup per share to
// spread over the adapter's cores. On GPUs a share is a part of the value dimensions (every share
// scores every key); where POSITION_SHARES is set (CPU drivers, whose cost is the per-lane load
// of each key and value) a share is a run of the positions with every value dimension, so each
// key and value is loaded once, and each share writes its softmax's running max, sum and
// unweighted values to `part` for `attention_combine` (docs/llm.md#attention). A prompt's step,
// with workgroups enough in its columns, runs one share. The softmax runs online over chunks of
// CHUNK positions — each invocation scores POSITIONS consecutive positions of a chunk for the
// four heads (each query element it loads serves them all), then the invocations that own value
// dimensions, four each, rescale and accumulate them — so any context length takes the same
// workgroup memory.

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

// Dimension i of the four query heads (zero for heads past the group's end).
var<workgroup> query: array<vec4<f32>, HEAD_MAX>;
// The chunk's softmax weights, one vec4 of heads per position.
var<workgroup> weight: array<vec4<f32>, CHUNK>;
var<workgroup> partial4: array<vec4<f32>, LLM_WG>;

// The lane-wise largest of every invocation's `value`, seen by all of them.
fn heads_max(lane: u32, value: vec4<f32>) -> vec4<f32> {
    partial4[lane] = value;
    workgroupBarrier();
    for (var half = LLM_WG / 2u; half > 0u; half /= 2u) {
        if lane < half {
            partial4[lane] = max(partial4[lane], partial4[lane + half]);
        }
        workgroupBarrier();
    }
    let total = partial4[0];
    workgroupBarrier();
    return total;
}

// The lane-wise sum of every invocation's `value`, seen by all of them.
fn heads_sum(lane: u32, value: vec4<f32>) -> vec4<f32> {
    partial4[lane] = value;
    workgroupBarrier();
    for (var half = LLM_WG / 2u; half > 0u; half /= 2u) {
        if lane < half {
            partial4[lane] += partial4[lane + half];
        }
        workgroupBarrier();
    }
    let total = partial4[0];
    workgroupBarrier();
    return total;
}

@compute @workgroup_size(LLM_WG)
fn attention(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    // x: KV head and quad of its query heads; y: token column; z: share.
    let group = at.heads / at.kv_heads;
    let quads = (group + 3u) / 4u;
    let kv = wg.x / quads;
    let head0 = kv * group + (wg.x % quads) * 4u;
    let count = min(4u, kv * group + group - head0);
    let j = wg.y;
    let pos = step.pos0 + j;
    let kq = at.key_length / 4u;
    let vq = at.value_length / 4u;
    var first = 0u;
    if at.window > 0u && pos + 1u > at.window {
        first = pos + 1u - at.window;
    }
    // This workgroup's value quads [v0, v1) and positions [first, last]; a position share past
    // the end has none (first > last) and writes an empty softmax (max MASKED, sum 0).
    var v0 = 0u;
    var v1 = vq;
    var last = pos;
    if POSITION_SHARES {
        let span = (pos + 1u - first + groups.z - 1u) / groups.z;
        first += wg.z * span;
        last = min(pos, first + span - 1u);
    } else {
        let share = (vq + groups.z - 1u) / groups.z;
        v0 = wg.z * share;
        v1 = min(vq, v0 + share);
    }
    for (var i = lane; i < at.key_length; i += LLM_WG) {
        var v = vec4<f32>(0.0);
        for (var h = 0u; h < count; h++) {
            v[h] = q[(j * at.heads + head0 + h) * at.key_length + i];
        }
        query[i] = v;
    }
    workgroupBarrier();
    var m = vec4<f32>(MASKED);
    var total = vec4<f32>(0.0);
    // acc[4 v + c]: value dimension 4 (v0 + lane + v LLM_WG) + c of the four heads.
    var acc: array<vec4<f32>, 4u * VALUE_QUADS_PER_LANE>;
    for (var s0 = first; s0 <= last; s0 += CHUNK) {
        let s = s0 + lane * POSITIONS;
        // Positions past `last` read `last`'s key (any cached row would do) and are masked after.
        var rows: array<u32, POSITIONS>;
        var score: array<vec4<f32>, POSITIONS>;
        for (var p = 0u; p < POSITIONS; p++) {
            rows[p] = (min(s + p, last) * at.kv_heads + kv) * kq;
        }
        if s <= last {
            for (var i = 0u; i < kq; i++) {
                let q0 = query[4u * i];
                let q1 = query[4u * i + 1u];
                let q2 = query[4u * i + 2u];
                let q3 = query[4u * i + 3u];
                for (var p = 0u; p < POSITIONS; p++) {
                    let k = k_cache[rows[p] + i];
                    score[p] += q0 * k.x + q1 * k.y + q2 * k.z + q3 * k.w;
                }
            }
        }
        if at.softcap > 0.0 {
            // |s / cap| past 10 is ±1 in f32; the clamp keeps a tanh built on exp finite.
            for (var p = 0u; p < POSITIONS; p++) {
                score[p] = at.softcap * tanh(clamp(score[p] / at.softcap, vec4<f32>(-10.0), vec4<f32>(10.0)));
            }
        }
        var top = vec4<f32>(MASKED);
        for (var p = 0u; p < POSITIONS; p++) {
            if s + p > last {
                score[p] = vec4<f32>(MASKED);
            }
            top = max(top, score[p]);
        }
        let next_m = max(m, heads_max(lane, top));
        var sum = vec4<f32>(0.0);
        for (var p = 0u; p < POSITIONS; p++) {
            var e = vec4<f32>(0.0);
            if s + p <= last {
                e = exp(score[p] - next_m);
            }
            weight[lane * POSITIONS + p] = e;
            sum += e;
        }
        // Its barriers also publish `weight`.
        let chunk_sum = heads_sum(lane, sum);
        let factor = exp(m - next_m);
        total = total * factor + chunk_sum;
        let n = min(CHUNK, last + 1u - s0);
        for (var v = 0u; v < VALUE_QUADS_PER_LANE; v++) {
            let d = v0 + lane + v * LLM_WG;
            if d < v1 {
                var a0 = acc[4u * v] * factor;
                var a1 = acc[4u * v + 1u] * factor;
                var a2 = acc[4u * v + 2u] * factor;
                var a3 = acc[4u * v + 3u] * factor;
                for (var t = 0u; t < n; t++) {
                    let w = weight[t];
                    let x = v_cache[((s0 + t) * at.kv_heads + kv) * vq + d];
                    a0 += w * x.x;
                    a1 += w * x.y;
                    a2 += w * x.z;
                    a3 += w * x.w;
                }
                acc[4u * v] = a0;
                acc[4u * v + 1u] = a1;
                acc[4u * v + 2u] = a2;
                acc[4u * v + 3u] = a3;
            }
        }
        m = next_m;
        // Every invocation has read this chunk's weights before the next chunk writes them.
        workgroupBarrier();
    }
    if POSITION_SHARES && groups.z > 1u {
        // Unnormalised: attention_combine weighs the shares by their maxima and sums.
        let stride = at.value_length + 2u;
        for (var h = 0u; h < count; h++) {
            let base = ((j * at.heads + head0 + h) * groups.z + wg.z) * stride;
            if lane == 0u {
                part[base] = m[h];
                part[base + 1u] = total[h];
            }
            for (var v = 0u; v < VALUE_QUADS_PER_LANE; v++) {
                let d = lane + v * LLM_WG;
                if d < vq {
                    let o = base + 2u + 4u * d;
                    part[o] = acc[4u * v][h];
                    part[o + 1u] = acc[4u * v + 1u][h];
                    part[o + 2u] = acc[4u * v + 2u][h];
                    part[o + 3u] = acc[4u * v + 3u][h];
                }
            }
        }
        return;
    }
    for (var v = 0u; v < VALUE_QUADS_PER_LANE; v++) {
        let d = v0 + lane + v * LLM_WG;
        if d < v1 {
            for (var h = 0u; h < count; h++) {
                let o = (j * at.heads + head0 + h) * at.value_length + 4u * d;
                out[o] = acc[4u * v][h] / total[h];
                out[o + 1u] = acc[4u * v + 1u][h] / total[h];
                out[o + 2u] = acc[4u * v + 2u][h] / total[h];
                out[o + 3u] = acc[4u * v + 3u][h] / total[h];
            }
        }
    }
}
