// The residual stream's norms, one workgroup per token column (src/llm/kernels.rs).
//
// mode 0 (embedding):  x = src · scale
// mode 1 (residual):   x = x + rms_norm(src) · w_in   (a sandwich's post-norm: gemma2, gemma3)
// mode 2 (residual):   x = x + src                    (pre-norm blocks: llama, qwen, gemma)
// then, in both:       h = rms_norm(x) · w_out, written to column j − shift (columns before
// `shift` are not written: the final norm keeps only the positions whose logits are wanted).

// `Norm`, the uniform block, is generated from src/llm/uniforms.rs.

@group(0) @binding(0) var<uniform> step: Step;
@group(0) @binding(1) var<uniform> norm: Norm;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read> w_in: array<f32>;
@group(0) @binding(4) var<storage, read> w_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> x: array<f32>;
@group(0) @binding(6) var<storage, read_write> h: array<f32>;

@compute @workgroup_size(LLM_WG)
fn norm_columns(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let j = wg.x;
    let at = j * norm.width;
    if norm.mode == 1u {
        var squares = 0.0;
        for (var i = lane; i < norm.width; i += LLM_WG) {
            squares += src[at + i] * src[at + i];
        }
        let inv = inverseSqrt(workgroup_sum(lane, squares) / f32(norm.width) + norm.eps);
        for (var i = lane; i < norm.width; i += LLM_WG) {
            x[at + i] += src[at + i] * inv * w_in[i];
        }
    } else if norm.mode == 2u {
        for (var i = lane; i < norm.width; i += LLM_WG) {
            x[at + i] += src[at + i];
        }
    } else {
        for (var i = lane; i < norm.width; i += LLM_WG) {
            x[at + i] = src[at + i] * norm.scale;
        }
    }
    // Each invocation reads back only the values it wrote itself: no barrier needed.
    var squares = 0.0;
    for (var i = lane; i < norm.width; i += LLM_WG) {
        squares += x[at + i] * x[at + i];
    }
    let inv = inverseSqrt(workgroup_sum(lane, squares) / f32(norm.width) + norm.eps);
    let shift = select(0u, step.out_from, norm.shifted == 1u);
    if j < shift {
        return;
    }
    let out = (j - shift) * norm.width;
    for (var i = lane; i < norm.width; i += LLM_WG) {
        h[out + i] = x[at + i] * inv * w_out[i];
    }
}
