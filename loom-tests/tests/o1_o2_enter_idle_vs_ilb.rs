//! O1/O2 (spec §6): `nohz_balance_enter_idle` on an idle CPU against `_nohz_idle_balance`
//! with STATS|NEXT on the ILB, driving the crate's real `Machine`. The model body is
//! `loom_tests::models::o1_o2`; the weakenings of both fences are tried by `tests/mutants.rs`.
#![cfg(nohz_loom)]

use loom_tests::models::o1_o2::enter_idle_against_ilb;
use nohz::sync::mutation::with_weakened;
use nohz::sync::{NOHZ_ENTER_IDLE_FENCE, NOHZ_ILB_FENCE, Weakening};
use nohz::{Legacy, Patched};

#[test]
fn patched_forbids_the_lost_flag() {
    enter_idle_against_ilb::<Patched>().assert_all_reached();
}

#[test]
fn legacy_forbids_the_lost_flag() {
    enter_idle_against_ilb::<Legacy>().assert_all_reached();
}

/// The model can fail: without the nohz_balance_enter_idle fence the lost flag is reachable.
#[test]
#[should_panic(expected = "O1: scan missed CPU 1")]
fn without_the_enter_idle_fence_the_flag_is_lost() {
    with_weakened(&NOHZ_ENTER_IDLE_FENCE, Weakening::Removed, || {
        enter_idle_against_ilb::<Patched>()
    })
    .unwrap();
}

/// Nor is the ILB side's fence optional.
#[test]
#[should_panic(expected = "O1: scan missed CPU 1")]
fn without_the_ilb_fence_the_flag_is_lost() {
    with_weakened(&NOHZ_ILB_FENCE, Weakening::Removed, || {
        enter_idle_against_ilb::<Patched>()
    })
    .unwrap();
}
