//! `update_blocked_load_status` (spec §5.5, §5.6): the ILB's clear of `rq(1).has_blocked_load`
//! after the platform's decay (a critical section under a loom mutex, the rq lock), against
//! CPU 1 running a task, adding its blocked load under that lock and re-entering idle (a new
//! set). A set made after the decay began is never lost. Model body:
//! `loom_tests::models::blocked_load`.
#![cfg(nohz_loom)]

use loom_tests::models::blocked_load::{Clear, Owner, Passes, set_against_clear};
use nohz::{Legacy, Patched, Scalable};

#[test]
fn patched_keeps_a_set_made_after_the_decay_began() {
    set_against_clear::<Patched>(Clear::Conditional, Passes::One, Owner::EntersIdle)
        .assert_all_reached();
}

#[test]
fn legacy_keeps_a_set_made_after_the_decay_began() {
    set_against_clear::<Legacy>(Clear::Conditional, Passes::One, Owner::EntersIdle)
        .assert_all_reached();
}

#[test]
fn scalable_keeps_a_set_made_after_the_decay_began() {
    set_against_clear::<Scalable>(Clear::Conditional, Passes::One, Owner::EntersIdle)
        .assert_all_reached();
}

/// Two passes decaying CPU 1 at once, each clearing from its own reading: still no set lost
/// (an older reading landing last only leaves the flag set one pass longer). Three threads,
/// about 81,000 executions (some 15 s): not in the mutation runner's `MODELS`, which has no
/// site this model could kill anyway.
#[test]
fn two_passes_keep_a_set_made_after_the_decay_began() {
    set_against_clear::<Patched>(Clear::Conditional, Passes::Two, Owner::EntersIdle)
        .assert_all_reached();
}

/// The model can fail: the clear the crate made before (unconditional, after the platform's
/// call returned) erases a set that landed in between.
#[test]
#[should_panic(expected = "blocked load: CPU 1's set after the decay began was erased")]
fn an_unconditional_clear_loses_the_set() {
    set_against_clear::<Patched>(Clear::Unconditional, Passes::One, Owner::EntersIdle);
}

/// The same under `Scalable`, whose idempotent path sets the flag with a swap.
#[test]
#[should_panic(expected = "blocked load: CPU 1's set after the decay began was erased")]
fn an_unconditional_clear_loses_the_set_under_scalable() {
    set_against_clear::<Scalable>(Clear::Unconditional, Passes::One, Owner::EntersIdle);
}

/// CPU 1 refreshes its own blocked load through newidle (the refresh before the domain walk:
/// stamp, decay, and a clear if nothing is left) before it re-enters idle, while the ILB's pass
/// decays and clears it from its own reading: still no set lost.
#[test]
fn patched_newidle_refresh_keeps_a_set_made_after_the_decay_began() {
    set_against_clear::<Patched>(Clear::Conditional, Passes::One, Owner::NewidleFirst)
        .assert_all_reached();
}

/// The same under `Scalable`, whose idempotent path sets the flag with a swap.
#[test]
fn scalable_newidle_refresh_keeps_a_set_made_after_the_decay_began() {
    set_against_clear::<Scalable>(Clear::Conditional, Passes::One, Owner::NewidleFirst)
        .assert_all_reached();
}

/// With the newidle refresh too, the unconditional clear loses the set.
#[test]
#[should_panic(expected = "blocked load: CPU 1's set after the decay began was erased")]
fn an_unconditional_clear_loses_the_set_with_a_newidle_refresh() {
    set_against_clear::<Patched>(Clear::Unconditional, Passes::One, Owner::NewidleFirst);
}
