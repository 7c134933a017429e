// Causal grouped-query attention of one query head of one token column (gemma3;
// src/llm/kernels.rs), over the block's cache up to the token's position (local blocks: only the
// last `window` positions). The softmax runs online over chunks of LLM_WG positions — each
// invocation scores one position of a chunk, then every invocation rescales and accumulates its
// own value dimensions — so any context length takes the same workgroup memory.

struct Attention {
    heads: u32,
    kv_heads: u32,
    key_length: u32,
    value_length: u32,
    // Positions a query sees, itself included; 0: every earlier position.
    window: u32,
}

// HEAD_MAX, the longest key or value head (the host refuses longer ones), is
// src/llm/kernels.rs's; gemma3's heads are 128 or 256.
const VALUES_PER_LANE: u32 = HEAD_MAX / LLM_WG;
// Below any score of normed queries and keys; exp of it minus a score is 0.
const MASKED: f32 = -1e30;

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> at: Attention;
@group(0) @binding(2) var<storage, read> q: array<f32>;
@group(0) @binding(3) var<storage, read> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read> v_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

var<workgroup> query: array<f32, HEAD_MAX>;
var<workgroup> weight: array<f32, LLM_WG>;

@compute @workgroup_size(LLM_WG)
fn attention(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let head = wg.x;
    let j = wg.y;
    let pos = step.pos0 + j;
    let kl = at.key_length;
    let vl = at.value_length;
    let kv = head / (at.heads / at.kv_heads);
    for (var i = lane; i < kl; i += LLM_WG) {
        query[i] = q[(j * at.heads + head) * kl + i];
    }
    workgroupBarrier();
    var first = 0u;
    if at.window > 0u && pos + 1u > at.window {
        first = pos + 1u - at.window;
    }
    var m = MASKED;
    var total = 0.0;
    var acc: array<f32, VALUES_PER_LANE>;
    for (var s0 = first; s0 <= pos; s0 += LLM_WG) {
        let s = s0 + lane;
        var score = MASKED;
        if s <= pos {
            let key = (s * at.kv_heads + kv) * kl;
            score = 0.0;
            for (var i = 0u; i < kl; i++) {
                score += query[i] * k_cache[key + i];
            }
        }
        let next_m = max(m, workgroup_max(lane, score));
        var e = 0.0;
        if s <= pos {
            e = exp(score - next_m);
        }
        weight[lane] = e;
        let chunk_sum = workgroup_sum(lane, e);
        let factor = exp(m - next_m);
        total = total * factor + chunk_sum;
        let n = min(LLM_WG, pos + 1u - s0);
        for (var v = 0u; v < VALUES_PER_LANE; v++) {
            let d = lane + v * LLM_WG;
            if d < vl {
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
        let d = lane + v * LLM_WG;
        if d < vl {
            out[(j * at.heads + head) * vl + d] = acc[v] / total;
        }
    }
}
