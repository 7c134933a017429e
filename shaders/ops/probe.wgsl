// Platform probes, run once when a device opens.
// subnormal: io[1] = io[0] * io[2] as f32 (a normal times a normal whose exact product is a
//   binary32 subnormal); a zero result means the platform flushes subnormal results.
// subgroup_layout (subgroup module only): for each invocation, 1 if its subgroup_invocation_id is
//   local_invocation_index % subgroup_size and the size is at least 4 and divides the products'
//   MATMUL_WG (generated), else 0. That no subgroup spans two row blocks is the capability
//   table's check of the adapter's largest subgroup size against each kernel's lanes.

@group(0) @binding(0) var<storage, read_write> io: array<u32>;

@compute @workgroup_size(1)
fn subnormal() {
    io[1] = bitcast<u32>(bitcast<f32>(io[0]) * bitcast<f32>(io[2]));
}
