//! Domain rebuild (spec §5.6): two `rebuild_sched_domains` against CPU 1 leaving idle and CPU 2
//! entering it. The LLC busy count of the current generation always matches its CPUs'
//! `nohz_idle`. Model body: `loom_tests::models::rebuild`.
#![cfg(nohz_loom)]

use loom_tests::models::hotplug::GracePeriod;
use loom_tests::models::rebuild::rebuild_against_enter_exit;
use nohz::{Legacy, Patched, Scalable};

#[test]
fn patched_rebuild_is_atomic_for_enter_and_exit() {
    rebuild_against_enter_exit::<Patched>(GracePeriod::WaitsForReaders).assert_all_reached();
}

#[test]
fn legacy_rebuild_is_atomic_for_enter_and_exit() {
    rebuild_against_enter_exit::<Legacy>(GracePeriod::WaitsForReaders).assert_all_reached();
}

#[test]
fn scalable_rebuild_is_atomic_for_enter_and_exit() {
    rebuild_against_enter_exit::<Scalable>(GracePeriod::WaitsForReaders).assert_all_reached();
}

/// The model can fail: without a grace period before the second rebuild reuses the first
/// generation's copy, CPU 1's RMW on that copy lands after it was rebuilt.
#[test]
#[should_panic(expected = "rebuild: the LLC busy count disagrees")]
fn a_rebuild_without_a_grace_period_miscounts() {
    rebuild_against_enter_exit::<Patched>(GracePeriod::ReturnsAtOnce);
}
