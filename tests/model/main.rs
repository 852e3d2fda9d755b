//! Property-based tests: the whole NOHZ state machine against a sequential reference model,
//! the primitives against `std` collections, and hostile inputs.
//!
//! - `reference`: the model, written from the kernel behaviour reference (plain data, no
//!   atomics, nothing called in the crate); `strategy`: what proptest draws; `machine`: the
//!   crate driven through the same transitions, its state projected onto the model's, and the
//!   properties checked after every step; `state_machine`: the `proptest-state-machine` tests
//!   for every policy (those beyond the kernel against the model taught what each changes,
//!   `reference::Beyond`), fixed replays, and checks that the generators reach what the
//!   properties are about; `sharded_hint`: `Sharded`'s `Hint` mode against `Patched`, its one
//!   divergence allowed and counted.
//! - `primitives`: `CpuMask` (1, 2, 64 and 128 words, any runtime CPU count, any bit
//!   pattern) and `Jiffies` (every distance below half the range) against `std`.
//! - `hostile`: inputs the kernel never sends get an error and change nothing; inputs it can
//!   send but warns about count a warning and then do what the kernel does; nothing panics.
//! - `compile_fail`: a zero-word `CpuMask` does not build (a fixture crate, built for real).
//!
//! # Policies beyond the kernel
//!
//! Where a policy keeps the kernel's observables, it runs against the kernel's model
//! (`Scalable`, `ShardedStrict`). Where it departs by design, either the model says the
//! departure (`reference::Beyond`, written from the policy's description: `Paced`'s kick, its
//! newidle hold and hashed ILB start, Khan's round robin and scaled deadline, Hegde's
//! housekeeping test), or, where it cannot say it cheaply, a differential against `Patched`
//! allows and counts exactly the documented divergence (`sharded_hint`: a stale summary bit's
//! extra kick attempt). Either way a test of the policy's own pins the divergence down
//! (`tests/sharded.rs`, `tests/paced.rs`, `tests/posted.rs`). Khan's scaled deadline adds a
//! jiffy per 64 registered CPUs: nothing on the model's machines of at most 16, where it is
//! `Patched`.
//!
//! # More cases
//!
//! Case counts are sized for CI: 2000 state-machine runs per policy (500 per posted fix). The
//! binary took 90 s of CPU in a debug `cargo test` on a two-core machine shared with other
//! builds (55 s before `Paced` and the posted fixes joined). Set
//! `NOHZ_PROPTEST_MULTIPLIER` to run that many times more cases of every property test, for
//! example 100 times more (in release mode, several minutes):
//!
//! ```text
//! NOHZ_PROPTEST_MULTIPLIER=100 cargo test --release --test model
//! ```
//!
//! `PROPTEST_CASES` is ignored here (each test sets its own count); a failure's seed is saved
//! beside the test's source file (`tests/model/*.proptest-regressions`) and replayed first on
//! the next run.

mod compile_fail;
mod hostile;
mod machine;
mod primitives;
mod reference;
mod sharded_hint;
mod state_machine;
mod strategy;

/// A proptest configuration of `base` cases (times `NOHZ_PROPTEST_MULTIPLIER`) whose failure
/// seeds are saved beside the test's source file (`tests/model/*.proptest-regressions`).
pub fn config(base: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: cases(base),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..proptest::test_runner::Config::default()
    }
}

/// `base` cases, times `NOHZ_PROPTEST_MULTIPLIER` (default 1; unparsable or 0 counts as 1).
pub fn cases(base: u32) -> u32 {
    let multiplier = std::env::var("NOHZ_PROPTEST_MULTIPLIER")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&m| m > 0)
        .unwrap_or(1);
    base.saturating_mul(multiplier)
}
