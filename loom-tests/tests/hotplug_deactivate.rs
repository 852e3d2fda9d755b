//! Hotplug (spec §5.3, §5.6): `sched_cpu_deactivate` on CPU 2 against CPU 2's own idle entry during
//! the grace period and busy CPU 0's kicks. Once it returned, CPU 2 is never in the idle mask
//! and never kicked; a kick sent before is flushed by `cpu_dying`. Model body:
//! `loom_tests::models::hotplug`.
#![cfg(nohz_loom)]

use loom_tests::models::hotplug::{GracePeriod, deactivate_against_idle_entry_and_kicks};
use nohz::{Legacy, Patched, Scalable};

#[test]
fn patched_deactivated_cpu_is_never_registered_nor_kicked() {
    deactivate_against_idle_entry_and_kicks::<Patched>(GracePeriod::WaitsForReaders)
        .assert_all_reached();
}

#[test]
fn legacy_deactivated_cpu_is_never_registered_nor_kicked() {
    deactivate_against_idle_entry_and_kicks::<Legacy>(GracePeriod::WaitsForReaders)
        .assert_all_reached();
}

#[test]
fn scalable_deactivated_cpu_is_never_registered_nor_kicked() {
    deactivate_against_idle_entry_and_kicks::<Scalable>(GracePeriod::WaitsForReaders)
        .assert_all_reached();
}

/// The model can fail: with a grace period that does not wait for the kicker's read-side
/// section, a kicker that saw CPU 2 in the mask sends it a kick after the deactivation
/// returned.
#[test]
#[should_panic(expected = "hotplug: a kick sent to CPU 2 after its deactivation returned")]
fn a_grace_period_that_does_not_wait_fails() {
    deactivate_against_idle_entry_and_kicks::<Patched>(GracePeriod::ReturnsAtOnce);
}
