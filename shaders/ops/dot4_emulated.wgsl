// The A8 dot product without the packed_4x8_integer_dot_product language feature: each word's
// four int8 bytes sign-extended by shifts, then an i32 vector dot product.
fn dot4(a: u32, b: u32) -> i32 {
    let up = vec4<u32>(24u, 16u, 8u, 0u);
    let x = bitcast<vec4<i32>>(vec4<u32>(a) << up) >> vec4<u32>(24u);
    let y = bitcast<vec4<i32>>(vec4<u32>(b) << up) >> vec4<u32>(24u);
    return dot(x, y);
}
