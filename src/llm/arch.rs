//! The architectures this runs, as data: one row of facts per GGUF `general.architecture`, read
//! by the configuration (`config.rs`), the CPU reference and the GPU forward alike. Adding an
//! architecture is a row here, plus a kernel only where its math is new.
//!
//! The facts are llama.cpp's graph for each (its `src/models/<arch>.cpp` and hyperparameter
//! loader, read, not copied): where the norms sit, whether query and key heads are normed,
//! how RoPE pairs a head's dimensions, the gated activation, the embedding's scale, the
//! sliding-window rule and the soft-capping defaults.

/// Where a block's RMS norms sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norms {
    /// Before attention and before the feed-forward; their outputs join the residual as they
    /// are (llama, qwen2, qwen3, gemma).
    Pre,
    /// Also after each, before the residual add (gemma2, gemma3): four norms a block.
    Sandwich,
}

/// How RoPE pairs a head's dimensions (llama.cpp's rope types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// `LLAMA_ROPE_TYPE_NORM`: dimensions 2i and 2i + 1.
    Adjacent,
    /// `LLAMA_ROPE_TYPE_NEOX`: dimensions i and i + d/2.
    Halves,
}

/// The feed-forward's gate: act(gate) · up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// x · sigmoid(x).
    Silu,
    /// GELU's tanh form, as ggml computes it.
    GeluTanh,
}

/// Which blocks attend through a sliding window, where the file does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Every block sees every earlier position (llama.cpp applies no window to these).
    None,
    /// A window where the file declares `attention.sliding_window`, over blocks chosen by a
    /// pattern of this period by default (gemma3: 6).
    IfDeclared { pattern: usize },
    /// Always a window: `window` positions unless the file says, over a pattern of this period
    /// (gemma2: 4096 and 2).
    Always { window: usize, pattern: usize },
}

/// The GGUF architectures this runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Architecture {
    /// Llama 2 and 3.x, Mistral, TinyLlama, SmolLM.
    Llama,
    Qwen2,
    Qwen3,
    Gemma,
    Gemma2,
    Gemma3,
}

/// One architecture's facts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Description {
    pub norms: Norms,
    /// Query and key heads RMS-normed (`attn_q_norm`, `attn_k_norm`) before RoPE.
    pub qk_norm: bool,
    pub pairing: Pairing,
    pub activation: Activation,
    /// Embedding rows scaled by sqrt(width).
    pub scaled_embedding: bool,
    pub window: Window,
    /// Attention scores soft-capped by this unless the file says (gemma2: 50).
    pub attention_softcap: Option<f32>,
    /// Logits soft-capped by this unless the file says (gemma2: 30).
    pub final_softcap: Option<f32>,
    /// A separate `output.weight` may replace the tied head (llama.cpp's loader for gemma and
    /// gemma2 always ties it).
    pub separate_head: bool,
    /// `rope_freqs.weight` (Llama 3.1's per-dimension frequency factors) may be present.
    pub rope_factors: bool,
    /// The block count at which the queries' scale is 1/sqrt(width / heads) instead of
    /// 1/sqrt(key length) (gemma2 and gemma3 27B, by llama.cpp's model-type rule).
    pub width_scaled_queries_at: Option<usize>,
}

impl Architecture {
    pub const ALL: [Architecture; 6] = [
        Architecture::Llama,
        Architecture::Qwen2,
        Architecture::Qwen3,
        Architecture::Gemma,
        Architecture::Gemma2,
        Architecture::Gemma3,
    ];

    /// `general.architecture` as GGUF writes it.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Llama => "llama",
            Architecture::Qwen2 => "qwen2",
            Architecture::Qwen3 => "qwen3",
            Architecture::Gemma => "gemma",
            Architecture::Gemma2 => "gemma2",
            Architecture::Gemma3 => "gemma3",
        }
    }

    pub fn from_name(name: &str) -> Option<Architecture> {
        Architecture::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Every name, for errors: "llama, qwen2, …".
    pub fn supported() -> String {
        Architecture::ALL.map(Architecture::name).join(", ")
    }

    pub fn description(self) -> Description {
        let llama = Description {
            norms: Norms::Pre,
            qk_norm: false,
            pairing: Pairing::Adjacent,
            activation: Activation::Silu,
            scaled_embedding: false,
            window: Window::None,
            attention_softcap: None,
            final_softcap: None,
            separate_head: true,
            rope_factors: false,
            width_scaled_queries_at: None,
        };
        let gemma = Description {
            pairing: Pairing::Halves,
            activation: Activation::GeluTanh,
            scaled_embedding: true,
            separate_head: false,
            ..llama
        };
        match self {
            Architecture::Llama => Description { rope_factors: true, ..llama },
            Architecture::Qwen2 => Description { pairing: Pairing::Halves, ..llama },
            Architecture::Qwen3 => Description { pairing: Pairing::Halves, qk_norm: true, ..llama },
            Architecture::Gemma => gemma,
            Architecture::Gemma2 => Description {
                norms: Norms::Sandwich,
                window: Window::Always { window: 4096, pattern: 2 },
                attention_softcap: Some(50.0),
                final_softcap: Some(30.0),
                width_scaled_queries_at: Some(46),
                ..gemma
            },
            Architecture::Gemma3 => Description {
                norms: Norms::Sandwich,
                qk_norm: true,
                window: Window::IfDeclared { pattern: 6 },
                separate_head: true,
                width_scaled_queries_at: Some(62),
                ..gemma
            },
        }
    }
}

impl std::fmt::Display for Architecture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
