//! ninfer-wgpu: NInfer's persistent weight formats on any GPU through wgpu.
//!
//! Data flows one way: payload bytes → [`EncodedTensor`] (geometry and size checked) → the
//! scalar [`oracle`] on the CPU, or an upload and a kernel on the GPU.

pub mod args;
#[cfg(not(target_arch = "wasm32"))]
pub mod bench;
pub mod conformance;
pub mod container;
pub mod encode;
pub mod error;
#[cfg(not(target_arch = "wasm32"))]
pub mod files;
pub mod format;
pub mod gguf;
pub mod gpu;
pub mod layout;
pub mod llm;
pub mod model;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
pub mod numeric;
pub mod oracle;
#[cfg(feature = "reports")]
pub mod report;
pub mod tensor;
pub mod testgen;
#[cfg(all(target_arch = "wasm32", feature = "web"))]
pub mod web;
pub mod words;

/// The wgpu this library is built on (30.x): an engine handing over its own device
/// ([`gpu::Gpu::from_device`]) must use this one, and can name it through here.
pub use wgpu;

pub use error::{Error, Result};
pub use format::{Category, Format};
pub use layout::Layout;
pub use tensor::{EncodedTensor, TensorDesc, Validated};
pub use words::{BlockWords, DirectWords, Fp8RowWords, GroupedWords, LogicalWords, Nvfp4Words};
