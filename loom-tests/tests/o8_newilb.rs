//! O8 (spec §6, §5.7): NEWILB set by `newidle_balance` and consumed by `nohz_run_idle_balance` on
//! CPU 2, against two remote kicks to CPU 2 and its csd handler. No kick bit lost, NEWILB
//! never owns the csd, the STATS pass runs only as the spec says. Model body:
//! `loom_tests::models::o8`.
#![cfg(nohz_loom)]

use loom_tests::models::o8::newilb_against_kicks;
use nohz::{Legacy, Patched};

#[test]
fn patched_newilb_never_owns_the_csd_nor_loses_a_kick() {
    newilb_against_kicks::<Patched>().assert_all_reached();
}

#[test]
fn legacy_newilb_never_owns_the_csd_nor_loses_a_kick() {
    newilb_against_kicks::<Legacy>().assert_all_reached();
}
