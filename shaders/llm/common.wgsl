// What every model kernel shares: the step's uniform (written by the host once per submission)
// and a workgroup sum. Every model kernel runs LLM_WG invocations per workgroup.

// `Step` (the step's uniform, written by the host once per submission) and every kernel's own
// uniform block are generated from src/llm/uniforms.rs and come first.

// LLM_WG (invocations per workgroup) and HEAD_MAX come first, from src/llm/kernels.rs.
var<workgroup> partial: array<f32, LLM_WG>;

// The sum of every invocation's `value`, seen by all of them.
fn workgroup_sum(lane: u32, value: f32) -> f32 {
    partial[lane] = value;
    workgroupBarrier();
    for (var half = LLM_WG / 2u; half > 0u; half /= 2u) {
        if lane < half {
            partial[lane] += partial[lane + half];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}

// The largest of every invocation's `value`, seen by all of them.
fn workgroup_max(lane: u32, value: f32) -> f32 {
    partial[lane] = value;
    workgroupBarrier();
    for (var half = LLM_WG / 2u; half > 0u; half /= 2u) {
        if lane < half {
            partial[lane] = max(partial[lane], partial[lane + half]);
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}
