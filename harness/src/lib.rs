//! `nohz-stress`: the `nohz` crate on host threads pinned to cores, showing what each seed
//! change buys (`Patched` against `Legacy`) while checking the crate's invariants.
//!
//! The library part holds the simulated machine ([`sim`]), the scenarios ([`scenario`]), the
//! measurement machinery shared with the benches ([`measure`]) and the report ([`report`]);
//! the `nohz-stress` binary is the command line.

pub mod engine;
pub mod measure;
pub mod plot;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod soak;
