//! The kernels' uniform parameter block, defined once: the Rust struct and the WGSL `struct
//! Params` prepended to every kernel are both written by one macro from one field list, so the
//! two sides cannot drift (the v1 mirrored them by hand).

use bytemuck::{Pod, Zeroable};

macro_rules! params {
    ($($(#[doc = $doc:literal])+ $field:ident,)+) => {
        /// Per-pass kernel parameters (all `u32`, so the WGSL layout is the `repr(C)` one).
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
        pub struct Params {
            $($(#[doc = $doc])+ pub $field: u32,)+
        }

        /// The WGSL declaration of [`Params`].
        pub fn wgsl() -> String {
            let mut s = String::from("// Generated from src/gpu/params.rs.\nstruct Params {\n");
            $(
                s.push_str(concat!("    ", stringify!($field), ": u32,  //"));
                $(s.push_str($doc);)+
                s.push('\n');
            )+
            s.push_str("}\n");
            s
        }

        /// Field names in declaration order (tests compare them with the struct's size).
        pub const FIELDS: &[&str] = &[$(stringify!($field)),+];
    };
}

params! {
    /// rows (dequant, matmul) or requests (gather) in this pass
    rows,
    /// logical K (values per row)
    k,
    /// chunks per row: ceil(K / 32)
    chunks,
    /// global index of the pass's first payload row
    row0,
    /// plane 0: byte offset of the pass's first row inside its binding
    off0,
    /// plane 0: bytes per row
    stride0,
    /// plane 0: 1 when its window starts and ends on whole vec4s, so it reads as vec4<u32>
    /// through binding 6 (one bounds-checked load where four u32 take four)
    vec0,
    /// plane 1: byte offset inside its binding
    off1,
    /// plane 1: bytes per row
    stride1,
    /// plane 2: byte offset inside its binding
    off2,
    /// plane 2: bytes per row
    stride2,
    /// codec-specific (block_scale: scale tiles per 128-row band)
    aux0,
    /// codec-specific (block_scale: rows per divisor)
    aux1,
    /// word offset of the pass's first output inside the output binding
    out_off,
    /// matmul: words between output columns (N)
    out_stride,
    /// matmul: vec4s between activation columns
    x_stride,
    /// matmul: activation columns J this dispatch computes (1..=8)
    columns,
    /// workgroups along x, to linearise a 2-D dispatch
    groups_x,
    /// words (products: vec4s) before the op's input inside binding 4 (an engine's slice)
    in_off,
    /// gather: source rows this pass holds (row0..row0 + span)
    span,
    /// gather: N, the table's rows (an id at or past it is out of range)
    total_rows,
    /// rows of this pass's window (from its first) stored in row tiles, records of ROW_TILE
    /// rows side by side (src/gpu/plan/tiles.rs); 0 where the payload is row by row
    tiled_rows,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wgsl_struct_lists_every_field_as_a_u32_in_order() {
        let text = wgsl();
        let fields: Vec<&str> = text.lines().filter_map(|l| l.trim().split_once(": u32,").map(|(f, _)| f)).collect();
        assert_eq!(fields, FIELDS);
        assert_eq!(std::mem::size_of::<Params>(), 4 * FIELDS.len(), "every field is one u32, no padding");
    }
}
