//! O3 (spec §6): csd ownership through `nohz_flags`: two kickers against the target's csd
//! entry point, the IPI as park/unpark. The model body is `loom_tests::models::o3`; every
//! weakening of both RMWs is tried by `tests/mutants.rs`.
#![cfg(nohz_loom)]

use loom_tests::models::o3::kick_ownership;
use nohz::sync::mutation::with_weakened;
use nohz::sync::{NOHZ_KICK_FETCH_OR, Ordering, Weakening};

#[test]
fn one_ipi_in_flight_every_bit_delivered_with_its_data() {
    kick_ownership().assert_all_reached();
}

/// The model can fail: a Relaxed kicker RMW publishes nothing to the handler.
#[test]
#[should_panic(expected = "without its data")]
fn a_relaxed_kick_loses_the_kickers_data() {
    with_weakened(
        &NOHZ_KICK_FETCH_OR,
        Weakening::To(Ordering::Relaxed),
        kick_ownership,
    )
    .unwrap();
}
