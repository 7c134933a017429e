//! `.ninfer` container tests: round trips, one crafted file per reader rule, first-use checks,
//! a mutation corpus, and the file commands end to end on the CPU. One test binary (several
//! modules) keeps link time down.

mod cli;
mod common;
mod corpus;
mod first_use;
mod roundtrip;
mod rules;
mod sources;
mod stacked;
