// Per head of one token column (src/llm/kernels.rs): every head gets its bias where the model
// has them (qwen2); query and key heads their RMS norm where the model has one (qwen3, gemma3),
// then RoPE of pairs (i, i + len/2) (NeoX) or (2i, 2i + 1) (llama), queries the attention
// scale; queries go to `q`, keys and values to the block's cache row at the token's position.
// One workgroup per (head, column): heads 0..H are queries, then KV key heads, then KV value
// heads.

// `Heads`, the uniform block, is generated from src/llm/uniforms.rs.

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> hp: Heads;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
// The q, k and v biases back to back, as a column of `qkv` (read where `biased` is 1).
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> q_norm: array<f32>;
@group(0) @binding(5) var<storage, read> k_norm: array<f32>;
// [table][position][pair] (cos, sin), computed on the host in f64 (frequency factors and
// scaling included): WGSL's sin and cos are accurate only near [-π, π], and a position's angles
// reach thousands of radians.
@group(0) @binding(6) var<storage, read> rope: array<vec2<f32>>;
@group(0) @binding(7) var<storage, read_write> q: array<f32>;
@group(0) @binding(8) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(9) var<storage, read_write> v_cache: array<f32>;

// Element `i` of this column's q, k and v, with its bias where the model has them.
fn biased_qkv(column: u32, i: u32) -> f32 {
    if hp.biased == 1u {
        return qkv[column + i] + bias[i];
    }
    return qkv[column + i];
}

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
        let src_at = (hp.heads + hp.kv_heads) * kl + v * hp.value_length;
        let to = (pos * hp.kv_heads + v) * hp.value_length;
        for (var i = lane; i < hp.value_length; i += LLM_WG) {
            v_cache[to + i] = biased_qkv(column, src_at + i);
        }
        return;
    }
    let is_query = head < hp.heads;
    let src_at = head * kl;
    var inv = 1.0;
    if hp.qk_norm == 1u {
        var squares = 0.0;
        for (var i = lane; i < kl; i += LLM_WG) {
            let x = biased_qkv(column, src_at + i);
            squares += x * x;
        }
        inv = inverseSqrt(workgroup_sum(lane, squares) / f32(kl) + hp.eps);
    }
    let half = kl / 2u;
    let angles = (hp.table * hp.context + pos) * half;
    for (var i = lane; i < half; i += LLM_WG) {
        // The pair's two dimensions: (i, i + half) for NeoX, (2i, 2i + 1) for llama.
        var ia = i;
        var ib = i + half;
        if hp.pairing == 1u {
            ia = 2u * i;
            ib = 2u * i + 1u;
        }
        var a = biased_qkv(column, src_at + ia) * inv;
        var b = biased_qkv(column, src_at + ib) * inv;
        if hp.qk_norm == 1u {
            if is_query {
                a *= q_norm[ia];
                b *= q_norm[ib];
            } else {
                a *= k_norm[ia];
                b *= k_norm[ib];
            }
        }
        let cs = rope[angles + i];
        let ra = a * cs.x - b * cs.y;
        let rb = a * cs.y + b * cs.x;
        if is_query {
            let to = j * hp.heads * kl + head * kl;
            q[to + ia] = ra * hp.q_scale;
            q[to + ib] = rb * hp.q_scale;
        } else {
            let to = (pos * hp.kv_heads + head - hp.heads) * kl;
            k_cache[to + ia] = ra;
            k_cache[to + ib] = rb;
        }
    }
}
