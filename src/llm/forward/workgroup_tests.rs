//! Which workgroup the synchronising model kernels get (src/llm/forward.rs).

use super::*;

/// The option is what the pipelines get when set; unset, CPU drivers get CPU_WG and every
/// other adapter LLM_WG.
#[test]
fn the_kernel_workgroup_asked_for_wins_else_the_adapters() {
    for device in ["Cpu", "DiscreteGpu", "IntegratedGpu", "Other"] {
        for asked in [1, CPU_WG, 32, LLM_WG] {
            assert_eq!(kernel_workgroup_on(Some(asked), device), asked, "{device}");
        }
    }
    assert_eq!(kernel_workgroup_on(None, "Cpu"), CPU_WG);
    for device in ["DiscreteGpu", "IntegratedGpu", "VirtualGpu", "Other"] {
        assert_eq!(kernel_workgroup_on(None, device), LLM_WG, "{device}");
    }
}
