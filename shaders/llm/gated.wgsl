// act(gate) · up of every token column (src/llm/kernels.rs): `gate_up` holds each column's gate
// rows then its up rows (2 · width values per column), `out` width values; act is GELU's tanh
// form (gemma) or SiLU (llama, qwen), as the uniform's `activation` says.

// `Gated`, the uniform block, is generated from src/llm/uniforms.rs.

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> gg: Gated;
@group(0) @binding(2) var<storage, read> gate_up: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

// sqrt(2 / π)
const GELU_C: f32 = 0.7978845608028654;

// GELU's tanh form. Past |t| = 10, tanh(t) is ±1 in f32; the clamp keeps a driver whose tanh
// goes through exp from overflowing to inf / inf.
fn gelu(x: f32) -> f32 {
    let t = clamp(GELU_C * (x + 0.044715 * x * x * x), -10.0, 10.0);
    return 0.5 * x * (1.0 + tanh(t));
}

// x · sigmoid(x), as ggml's silu: x / (1 + e^-x). Below -88, e^-x overflows to +inf and the
// quotient is -0, the value the exact form rounds to.
fn silu(x: f32) -> f32 {
    return x / (1.0 + exp(-x));
}

@compute @workgroup_size(LLM_WG)
fn gated(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    let j = id.y;
    if i >= gg.width || j >= step.columns {
        return;
    }
    let at = j * 2u * gg.width;
    let g = gate_up[at + i];
    var a: f32;
    if gg.activation == 1u {
        a = silu(g);
    } else {
        a = gelu(g);
    }
    out[j * gg.width + i] = a * gate_up[at + gg.width + i];
}
