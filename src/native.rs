//! Blocking convenience for native programs (the CLI, tests, benches): the library's GPU API is
//! async, and a native caller that has no executor waits on it here. Not built for wasm32, where
//! the browser's event loop drives the futures.

/// Runs a future of the async API to completion on this thread.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    pollster::block_on(future)
}
