//! `.ninfer` container tests: round trips, one crafted file per reader rule, first-use checks,
//! a mutation corpus, and the file commands end to end on the CPU. One test binary (several
//! modules) keeps link time down.

#[path = "container/cli.rs"]
mod cli;
#[path = "container/common.rs"]
mod common;
#[path = "container/corpus.rs"]
mod corpus;
#[path = "container/first_use.rs"]
mod first_use;
#[path = "container/roundtrip.rs"]
mod roundtrip;
#[path = "container/rules.rs"]
mod rules;
#[path = "container/sources.rs"]
mod sources;
