//! Language models over the library's kernels: today a gemma3 model's configuration, read and
//! checked from its GGUF, its vocabulary's tokenizer, and the CPU reference forward (the GPU
//! forward pass on the engine API comes next; issue 36).

pub mod config;
pub mod reference;
#[cfg(test)]
mod testing;
pub mod tokenizer;

pub use config::Gemma3Config;
pub use reference::Reference;
pub use tokenizer::{StreamDecoder, Tokenizer};
