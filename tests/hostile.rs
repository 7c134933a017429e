//! Untrusted files: one regression test per class of hostile input that once got through — the
//! GPU path refusing what the CPU path refuses, linear-time readers, bounded memory and reads,
//! refusals of inconsistent files, short errors and non-finite outputs.

#[path = "hostile/cli.rs"]
mod cli;
#[path = "hostile/files.rs"]
mod files;
#[path = "hostile/gpu.rs"]
mod gpu;
#[path = "hostile/payloads.rs"]
mod payloads;
#[path = "hostile/readers.rs"]
mod readers;
