//! Foundation tests: registry, numeric words, layouts, validation, oracle, round trips and bad
//! input. One test binary (several modules) keeps link time down.

#[path = "foundation/bad_input.rs"]
mod bad_input;
#[path = "foundation/layouts.rs"]
mod layouts;
#[path = "foundation/numeric.rs"]
mod numeric;
#[path = "foundation/oracle.rs"]
mod oracle;
#[path = "foundation/registry.rs"]
mod registry;
#[path = "foundation/roundtrip.rs"]
mod roundtrip;
#[path = "foundation/scan.rs"]
mod scan;
#[path = "foundation/seed.rs"]
mod seed;
#[path = "foundation/validation.rs"]
mod validation;
