//! O5 on the kick path (spec §6): `nohz_balance_enter_idle` on CPU 1 and `nohz_balance_exit_idle` on CPU 2 against busy
//! CPU 0's tick and kick. A kicker that knows (Acquire) that CPU 1's `nohz_balance_enter_idle` returned
//! picks CPU 1; otherwise nothing worse than an extra kick to the leaving CPU, whose handler
//! then finds it busy. Model body: `loom_tests::models::o5`.
#![cfg(nohz_loom)]

use loom::sync::atomic::Ordering::{Acquire, Relaxed};
use loom_tests::models::o5::enter_exit_against_kick;
use nohz::{Legacy, Patched};

#[test]
fn patched_kick_finds_a_cpu_known_to_be_registered() {
    enter_exit_against_kick::<Patched>(Acquire).assert_all_reached();
}

#[test]
fn legacy_kick_finds_a_cpu_known_to_be_registered() {
    enter_exit_against_kick::<Legacy>(Acquire).assert_all_reached();
}

/// The model can fail: the crate's mask update is Relaxed, so a kicker whose knowledge of the
/// registration carries no happens-before (a Relaxed load of the model's flag) may still miss
/// the bit. The property needs the observation to synchronise, nothing more.
#[test]
#[should_panic(expected = "O5: the kicker saw CPU 1's nohz_balance_enter_idle return")]
fn an_unsynchronised_observation_proves_nothing() {
    enter_exit_against_kick::<Patched>(Relaxed);
}
