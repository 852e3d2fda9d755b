//! The elided kick IPI against the idle exit's flush: a kick to a polling CPU whose IPI the
//! platform replaced by `need_resched` is run by `do_idle`'s `flush_smp_call_function_queue`,
//! and no kick is left behind a busy csd. Model body: `loom_tests::models::idle_flush`. The
//! crate's half, the flush itself, is the kernel-step mutant `IdleExitNoFlush`
//! (`ci/patch-mutants.py`: the flush removed from a copy of `src/idle.rs`), which makes
//! `an_elided_kick_is_run_by_the_idle_exit` fail.
#![cfg(nohz_loom)]

use loom_tests::models::idle_flush::{Contract, STRANDED, elided_ipi_against_idle_exit};

#[test]
fn an_elided_kick_is_run_by_the_idle_exit() {
    elided_ipi_against_idle_exit(Contract::Kept).assert_all_reached();
}

/// The platform's half (`Ipi::send_nohz_ipi`): a poll loop that clears its polling state
/// without a full barrier may miss the csd the elided kick queued.
#[test]
#[should_panic(expected = "a kick stranded")]
fn a_poll_loop_that_clears_polling_relaxed_strands_a_kick() {
    elided_ipi_against_idle_exit(Contract::ClearRelaxed);
}

/// ... and an elision that does not order the kicker's csd lock before its `need_resched`.
#[test]
#[should_panic(expected = "a kick stranded")]
fn a_relaxed_elision_strands_a_kick() {
    elided_ipi_against_idle_exit(Contract::ElideRelaxed);
}

/// The expected message above is the model's own.
#[test]
fn the_expected_message_is_the_models() {
    assert_eq!(STRANDED, "a kick stranded");
}
