// Causal grouped-query attention of one token column (gemma3; src/llm/kernels.rs), over the
// block's cache up to the token's position (local blocks: only the last `window` positions).
// One workgroup serves up to four query heads of one KV head — the query heads that share its
// keys and values, as the lanes of a vec4 — and one of ATTENTION_SPLITS shares of the value
// dimensions: each key and value is loaded once for four heads, and a decode step still has a
// workgroup per share to spread over the adapter's cores (docs/llm.md#attention). The softmax runs
// online over chunks of LLM_WG positions — each invocation scores one position of a chunk for
// the four heads, then every invocation rescales and accumulates its own value dimensions — so
// any context length takes the same workgroup memory.

struct Attention {
    heads: u32,
    kv_heads: u32,
    key_length: u32,
    value_length: u32,
    // Positions a query sees, itself included; 0: every earlier position.
    window: u32,
}

// HEAD_MAX, the longest key or value head (the host refuses longer ones), and ATTENTION_SPLITS
// are src/llm/kernels.rs's; gemma3's heads are 128 or 256.
const VALUES_PER_LANE: u32 = (HEAD_MAX + ATTENTION_SPLITS * LLM_WG - 1u) / (ATTENTION_SPLITS * LLM_WG);
// Below any score of normed queries and keys; exp of it minus a score is 0.
const MASKED: f32 = -1e30;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> at: Attention;
@group(0) @binding(2) var<storage, read> q: array<f32>;
// Keys as vec4: the host refuses a key length that is not a multiple of 4.
@group(0) @binding(3) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> v_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

// Dimension i of the four query heads (zero for heads past the group's end).
var<workgroup> query: array<vec4<f32>, HEAD_MAX>;
// The chunk's softmax weights, one vec4 of heads per position.
var<workgroup> weight: array<vec4<f32>, LLM_WG>;
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
fn attention(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    // x: KV head and quad of its query heads; y: token column; z: share of the values.
    let group = at.heads / at.kv_heads;
    let quads = (group + 3u) / 4u;
    let kv = wg.x / quads;
    let head0 = kv * group + (wg.x % quads) * 4u;
    let count = min(4u, kv * group + group - head0);
    let j = wg.y;
    let pos = step.pos0 + j;
    let kl = at.key_length;
    let vl = at.value_length;
    let share = (vl + ATTENTION_SPLITS - 1u) / ATTENTION_SPLITS;
    let d0 = wg.z * share;
    let d1 = min(vl, d0 + share);
    for (var i = lane; i < kl; i += LLM_WG) {
        var v = vec4<f32>(0.0);
        for (var h = 0u; h < count; h++) {
            v[h] = q[(j * at.heads + head0 + h) * kl + i];
        }
        query[i] = v;
    }
    workgroupBarrier();
    var first = 0u;
    if at.window > 0u && pos + 1u > at.window {
        first = pos + 1u - at.window;
    }
    var m = vec4<f32>(MASKED);
    var total = vec4<f32>(0.0);
    var acc: array<vec4<f32>, VALUES_PER_LANE>;
    for (var s0 = first; s0 <= pos; s0 += LLM_WG) {
        let s = s0 + lane;
        var score = vec4<f32>(MASKED);
        if s <= pos {
            let key = (s * at.kv_heads + kv) * (kl / 4u);
            score = vec4<f32>(0.0);
            for (var i = 0u; i < kl / 4u; i++) {
                let k = k_cache[key + i];
                score += query[4u * i] * k.x + query[4u * i + 1u] * k.y + query[4u * i + 2u] * k.z
                    + query[4u * i + 3u] * k.w;
            }
        }
        let next_m = max(m, heads_max(lane, score));
        var e = vec4<f32>(0.0);
        if s <= pos {
            e = exp(score - next_m);
        }
        weight[lane] = e;
        // Its barriers also publish `weight`.
        let chunk_sum = heads_sum(lane, e);
        let factor = exp(m - next_m);
        total = total * factor + chunk_sum;
        let n = min(LLM_WG, pos + 1u - s0);
        for (var v = 0u; v < VALUES_PER_LANE; v++) {
            let d = d0 + lane + v * LLM_WG;
            if d < d1 {
                var sum = acc[v] * factor;
                for (var t = 0u; t < n; t++) {
                    sum += weight[t] * v_cache[((s0 + t) * at.kv_heads + kv) * vl + d];
                }
                acc[v] = sum;
            }
        }
        m = next_m;
        // Every invocation has read this chunk's weights before the next chunk writes them.
        workgroupBarrier();
    }
    for (var v = 0u; v < VALUES_PER_LANE; v++) {
        let d = d0 + lane + v * LLM_WG;
        if d < d1 {
            for (var h = 0u; h < count; h++) {
                out[(j * at.heads + head0 + h) * vl + d] = acc[v][h] / total[h];
            }
        }
    }
}
