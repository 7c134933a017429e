// The attention's position shares joined (src/llm/kernels.rs): where a decode step's attention
// ran ATTENTION_SPLITS shares of the positions (POSITION_SHARES, CPU drivers), each wrote, per
// column and head, its softmax's running max m, its sum l and its unnormalised values a. The
// whole softmax is their sum, each share weighed by e^(m − M) for the largest max M:
// out = Σ a e^(m − M) / Σ l e^(m − M). A share without positions wrote m = −1e30 and l = a = 0,
// so its weight is 0. One invocation per column, head and value dimension.

// `Attention`, the uniform block, is generated from src/llm/uniforms.rs.

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> at: Attention;
@group(0) @binding(2) var<storage, read> part: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(LLM_WG)
fn attention_combine(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    let j = id.y;
    if i >= at.heads * at.value_length || j >= step.columns {
        return;
    }
    let head = i / at.value_length;
    let d = i % at.value_length;
    let stride = at.value_length + 2u;
    let first = (j * at.heads + head) * ATTENTION_SPLITS * stride;
    var top = part[first];
    for (var z = 1u; z < ATTENTION_SPLITS; z++) {
        top = max(top, part[first + z * stride]);
    }
    var sum = 0.0;
    var value = 0.0;
    for (var z = 0u; z < ATTENTION_SPLITS; z++) {
        let at_z = first + z * stride;
        let weight = exp(part[at_z] - top);
        sum += part[at_z + 1u] * weight;
        value += part[at_z + 2u + d] * weight;
    }
    out[(j * at.heads + head) * at.value_length + d] = value / sum;
}
