//! Language models over the library's kernels: today a gemma3 model's configuration, read and
//! checked from its GGUF (the tokenizer, the GPU forward pass and the CPU reference forward come
//! next; issue 36).

pub mod config;

pub use config::Gemma3Config;
