//! The model kernels' uniform blocks, each defined once: the Rust struct the host fills and the
//! WGSL `struct` every model kernel is assembled with are written by one macro from one field
//! list (as `src/gpu/params.rs` does for the product kernels), so the two sides cannot drift;
//! before, the host wrote bare word arrays against structs kept by hand in the WGSL files.

use bytemuck::{Pod, Zeroable};

/// A uniform block as the host writes it: its bytes, padded to WGSL's 16-byte uniform size.
pub trait Uniform: Pod {
    fn padded_bytes(&self) -> Vec<u8> {
        let mut bytes = bytemuck::bytes_of(self).to_vec();
        bytes.resize(bytes.len().div_ceil(16).max(1) * 16, 0);
        bytes
    }
}

macro_rules! uniforms {
    ($($(#[doc = $sdoc:literal])+ $name:ident { $($(#[doc = $doc:literal])* $field:ident: $ty:ident,)+ })+) => {
        $(
            $(#[doc = $sdoc])+
            #[repr(C)]
            #[derive(Debug, Clone, Copy, Default, PartialEq, Pod, Zeroable)]
            pub struct $name {
                $($(#[doc = $doc])* pub $field: $ty,)+
            }

            impl Uniform for $name {}
        )+

        /// Every block's WGSL declaration, as the model kernels are assembled with them.
        pub fn wgsl() -> String {
            let mut s = String::from("// Generated from src/llm/uniforms.rs.\n");
            $(
                s.push_str(concat!("struct ", stringify!($name), " {\n"));
                $(s.push_str(concat!("    ", stringify!($field), ": ", stringify!($ty), ",\n"));)+
                s.push_str("}\n");
            )+
            s
        }

        /// (block, its fields) in declaration order, for the tests.
        #[cfg(test)]
        const BLOCKS: &[(&str, &[&str])] = &[$((stringify!($name), &[$(stringify!($field)),+])),+];
    };
}

uniforms! {
    /// What a step is, written by the host once per submission (binding 0 of every kernel).
    Step {
        /// Token columns in this step.
        columns: u32,
        /// The position of column 0.
        pos0: u32,
        /// The first column whose logits the step keeps (the final norm's shift).
        out_from: u32,
        pad: u32,
    }
    /// `shaders/llm/norm.wgsl`: the embedding's scale or a residual add, then the next norm.
    Norm {
        width: u32,
        /// 0: embedding (x = src · scale); 1: residual of a post-norm (x = x + rms_norm(src) · w_in);
        /// 2: plain residual (x = x + src).
        mode: u32,
        /// 1: shift h's columns by the step's `out_from` (the final norm); 0: no shift.
        shifted: u32,
        eps: f32,
        scale: f32,
    }
    /// `shaders/llm/qk_rope.wgsl`: the heads' biases, the query and key heads' norm and RoPE.
    Heads {
        heads: u32,
        kv_heads: u32,
        key_length: u32,
        value_length: u32,
        /// Values per column of `qkv` (queries, keys, values back to back).
        qkv_stride: u32,
        /// Positions per RoPE table (the cache's context).
        context: u32,
        /// Which RoPE table: 0 the global base, 1 the local base.
        table: u32,
        eps: f32,
        q_scale: f32,
        /// 1: query and key heads are RMS-normed (then scaled by `q_norm`, `k_norm`).
        qk_norm: u32,
        /// RoPE's pairs: 0 (i, i + len/2), NeoX; 1 (2i, 2i + 1), llama.
        pairing: u32,
        /// 1: every head adds its bias.
        biased: u32,
    }
    /// `shaders/llm/attention.wgsl`.
    Attention {
        heads: u32,
        kv_heads: u32,
        key_length: u32,
        value_length: u32,
        /// Positions a query sees, itself included; 0: every earlier position.
        window: u32,
        /// Scores soft-capped to ±softcap; 0: not capped.
        softcap: f32,
    }
    /// `shaders/llm/gated.wgsl`.
    Gated {
        width: u32,
        /// 0: GELU (tanh form); 1: SiLU.
        activation: u32,
    }
    /// `shaders/llm/softcap.wgsl`: the final logit soft-cap.
    Softcap {
        /// Logits per column (the vocabulary).
        count: u32,
        cap: f32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_is_its_fields_as_four_byte_words_in_order() {
        let text = wgsl();
        for (name, fields) in BLOCKS {
            let body = text.split(&format!("struct {name} {{\n")).nth(1).unwrap().split('}').next().unwrap();
            let got: Vec<&str> = body.lines().map(|l| l.trim().split(':').next().unwrap()).collect();
            assert_eq!(got, *fields, "{name}");
        }
        let sizes = [
            std::mem::size_of::<Step>(),
            std::mem::size_of::<Norm>(),
            std::mem::size_of::<Heads>(),
            std::mem::size_of::<Attention>(),
            std::mem::size_of::<Gated>(),
            std::mem::size_of::<Softcap>(),
        ];
        let words: Vec<usize> = BLOCKS.iter().map(|(_, f)| 4 * f.len()).collect();
        assert_eq!(sizes.to_vec(), words, "no padding inside a block");
        assert_eq!(Norm { width: 3, ..Default::default() }.padded_bytes().len(), 32);
    }
}
