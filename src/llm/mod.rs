//! Language models over the library's kernels: the architectures this runs, as data (`arch.rs`);
//! a model's configuration, read and checked from its GGUF; its vocabulary's tokenizer; the CPU
//! reference forward; and the GPU forward on the engine API with the model's own kernels.

pub mod arch;
mod block;
pub mod chat;
pub mod config;
pub mod forward;
pub mod generate;
mod head;
pub mod ingest;
pub mod judge;
pub mod kernels;
pub mod reference;
pub mod sample;
#[cfg(test)]
mod testing;
pub mod tokenizer;
pub mod uniforms;
mod upload;
pub mod weights;

pub use arch::Architecture;
pub use config::{Gemma3Config, ModelConfig};
pub use forward::{DispatchKind, ForwardOptions, GpuForward, Keep, LoadStep};
pub use generate::{generate, Event, Flow, Forward, Generated, Request};
pub use ingest::StreamLoad;
pub use reference::{Reference, Session};
pub use sample::{Sampler, Sampling};
pub use tokenizer::{StreamDecoder, Tokenizer};
