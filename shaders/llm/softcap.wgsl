// The final logit soft-cap, in place (gemma2; src/llm/kernels.rs): z = cap · tanh(z / cap) for
// every logit of the step's kept columns.

// `Softcap`, the uniform block, is generated from src/llm/uniforms.rs.

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> sc: Softcap;
@group(0) @binding(2) var<storage, read_write> logits: array<f32>;

@compute @workgroup_size(LLM_WG)
fn softcap(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    // Rows: the kept columns, never more than the step's.
    if i >= sc.count || id.y >= step.columns {
        return;
    }
    let at = id.y * sc.count + i;
    // |z / cap| past 10 is ±1 in f32; the clamp keeps a tanh built on exp finite.
    logits[at] = sc.cap * tanh(clamp(logits[at] / sc.cap, -10.0, 10.0));
}
