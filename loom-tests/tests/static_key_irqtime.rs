//! The `sched_clock_irqtime` static key flipped while CPU 1 runs `irqtime_account_irq`
//! (spec §8, seed 003). Each call accounts all or nothing; "nobody accounts after disable
//! returned" holds only with an explicit handshake. Model body:
//! `loom_tests::models::irqtime`.
#![cfg(nohz_loom)]

use loom_tests::models::irqtime::{
    ACCOUNTED_AFTER_DISABLE, Flip, Quiesce, disable_then_rely_on_quiescence,
    flip_against_accounting,
};
use nohz::{Legacy, Patched};

#[test]
fn patched_disable_racing_accounting_tears_no_call() {
    flip_against_accounting::<Patched>(Flip::Disable).assert_all_reached();
}

#[test]
fn patched_enable_racing_accounting_tears_no_call() {
    flip_against_accounting::<Patched>(Flip::Enable).assert_all_reached();
}

#[test]
fn legacy_flag_flips_tear_no_call_either() {
    flip_against_accounting::<Legacy>(Flip::Disable).assert_all_reached();
    flip_against_accounting::<Legacy>(Flip::Enable).assert_all_reached();
}

/// Relying on the key alone: a call that read it before the flip still writes afterwards.
#[test]
#[should_panic(expected = "irq time accounted after disable_sched_clock_irqtime returned")]
fn without_a_handshake_accounting_goes_on_after_disable() {
    disable_then_rely_on_quiescence::<Patched>(Quiesce::None);
}

#[test]
fn with_a_handshake_nobody_accounts_after_disable() {
    disable_then_rely_on_quiescence::<Patched>(Quiesce::Handshake).assert_all_reached();
}

/// The expected message above is the model's own.
#[test]
fn the_expected_message_is_the_models() {
    assert_eq!(
        ACCOUNTED_AFTER_DISABLE,
        "irq time accounted after disable_sched_clock_irqtime returned"
    );
}
