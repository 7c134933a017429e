//! Language models over the library's kernels: today a gemma3 model's configuration, read and
//! checked from its GGUF, and its vocabulary's tokenizer (the GPU forward pass and the CPU
//! reference forward come next; issue 36).

pub mod config;
#[cfg(test)]
mod testing;
pub mod tokenizer;

pub use config::Gemma3Config;
pub use tokenizer::{StreamDecoder, Tokenizer};
