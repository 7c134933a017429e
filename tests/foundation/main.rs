//! Foundation tests: registry, numeric words, layouts, validation, oracle, round trips and bad
//! input. One test binary (several modules) keeps link time down.

mod bad_input;
mod layouts;
mod numeric;
mod oracle;
mod registry;
mod roundtrip;
mod scan;
mod seed;
mod validation;
