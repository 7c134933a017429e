@compute @workgroup_size(256)
fn subgroup_layout(@builtin(local_invocation_index) li: u32, @builtin(subgroup_size) sg: u32,
                   @builtin(subgroup_invocation_id) sid: u32) {
    io[li] = select(0u, 1u, sid == li % sg && MATMUL_WG % sg == 0u && sg >= 4u);
}
