// The A8 dot product through WGSL's packed_4x8_integer_dot_product language feature (a
// hardware instruction where the driver has one, the compiler's own expansion elsewhere).
fn dot4(a: u32, b: u32) -> i32 {
    return dot4I8Packed(a, b);
}
