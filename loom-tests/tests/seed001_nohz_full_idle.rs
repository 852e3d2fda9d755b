//! Seed 001 under concurrency: a NO_HZ_FULL CPU whose tick stopped while it ran a task goes
//! idle while a housekeeping CPU runs an ILB pass. `Patched` registers it (and O1/O2 hold on
//! this path); `Legacy` leaves it invisible, kept as an expected failure. Model body:
//! `loom_tests::models::seed001`.
#![cfg(nohz_loom)]

use loom_tests::models::seed001::{INVISIBLE, IdlePass, nohz_full_cpu_goes_idle};
use nohz::sync::mutation::with_weakened;
use nohz::sync::{NOHZ_ENTER_IDLE_FENCE, Weakening};
use nohz::{Legacy, Patched};

#[test]
fn patched_stop_tick_pass_makes_the_cpu_visible() {
    nohz_full_cpu_goes_idle::<Patched>(IdlePass::StopTick).assert_all_reached();
}

#[test]
fn patched_do_idle_makes_the_cpu_visible() {
    nohz_full_cpu_goes_idle::<Patched>(IdlePass::DoIdle).assert_all_reached();
}

/// The pre-seed kernel: the idle pass finds the tick already stopped and never registers.
#[test]
#[should_panic(expected = "seed 001: NO_HZ_FULL CPU 2 went idle with its tick stopped")]
fn legacy_stop_tick_pass_leaves_the_cpu_invisible() {
    nohz_full_cpu_goes_idle::<Legacy>(IdlePass::StopTick);
}

#[test]
#[should_panic(expected = "seed 001: NO_HZ_FULL CPU 2 went idle with its tick stopped")]
fn legacy_do_idle_leaves_the_cpu_invisible() {
    nohz_full_cpu_goes_idle::<Legacy>(IdlePass::DoIdle);
}

/// The expected message above is the model's own.
#[test]
fn the_expected_message_is_the_models() {
    assert!(INVISIBLE.starts_with("seed 001: NO_HZ_FULL CPU 2 went idle"));
}

/// The O1/O2 half of the model can fail too: registering on this path still needs the fence.
#[test]
#[should_panic(expected = "(seed 001 path): the ILB pass missed CPU 2")]
fn without_the_enter_idle_fence_the_pass_can_miss_it() {
    with_weakened(&NOHZ_ENTER_IDLE_FENCE, Weakening::Removed, || {
        nohz_full_cpu_goes_idle::<Patched>(IdlePass::StopTick)
    })
    .unwrap();
}
