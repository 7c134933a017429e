// Per head of one token column (gemma3; src/llm/kernels.rs): query and key heads get their RMS
// norm and NeoX RoPE (pairs i and i + len/2), queries the attention scale; queries go to `q`,
// keys and values to the block's cache row at the token's position. One workgroup per
// (head, column): heads 0..H are queries, then KV key heads, then KV value heads.

// `Heads`, the uniform block, is generated from src/llm/uniforms.rs.

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> hp: Heads;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
@group(0) @binding(3) var<storage, read> q_norm: array<f32>;
@group(0) @binding(4) var<storage, read> k_norm: array<f32>;
// [table][position][pair] (cos, sin), computed on the host in f64: WGSL's sin and cos are
// accurate only near [-π, π], and a position's angles reach thousands of radians.
@group(0) @binding(5) var<storage, read> rope: array<vec2<f32>>;
@group(0) @binding(6) var<storage, read_write> q: array<f32>;
@group(0) @binding(7) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(8) var<storage, read_write> v_cache: array<f32>;

@compute @workgroup_size(LLM_WG)
fn qk_rope(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let head = wg.x;
    let j = wg.y;
    let pos = step.pos0 + j;
    let column = j * hp.qkv_stride;
    let kl = hp.key_length;
    if head >= hp.heads + hp.kv_heads {
        // A value head: copied to the cache as it is.
        let v = head - hp.heads - hp.kv_heads;
        let src_at = column + (hp.heads + hp.kv_heads) * kl + v * hp.value_length;
        let to = (pos * hp.kv_heads + v) * hp.value_length;
        for (var i = lane; i < hp.value_length; i += LLM_WG) {
            v_cache[to + i] = qkv[src_at + i];
        }
        return;
    }
    let is_query = head < hp.heads;
    let src_at = column + head * kl;
    var squares = 0.0;
    for (var i = lane; i < kl; i += LLM_WG) {
        squares += qkv[src_at + i] * qkv[src_at + i];
    }
    let inv = inverseSqrt(workgroup_sum(lane, squares) / f32(kl) + hp.eps);
    let half = kl / 2u;
    let angles = (hp.table * hp.context + pos) * half;
    for (var i = lane; i < half; i += LLM_WG) {
        var a = qkv[src_at + i] * inv;
        var b = qkv[src_at + i + half] * inv;
        if is_query {
            a *= q_norm[i];
            b *= q_norm[i + half];
        } else {
            a *= k_norm[i];
            b *= k_norm[i + half];
        }
        let cs = rope[angles + i];
        let ra = a * cs.x - b * cs.y;
        let rb = a * cs.y + b * cs.x;
        if is_query {
            let to = j * hp.heads * kl + head * kl;
            q[to + i] = ra * hp.q_scale;
            q[to + i + half] = rb * hp.q_scale;
        } else {
            let to = (pos * hp.kv_heads + head - hp.heads) * kl;
            k_cache[to + i] = ra;
            k_cache[to + i + half] = rb;
        }
    }
}
