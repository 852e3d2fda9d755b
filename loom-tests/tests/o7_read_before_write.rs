//! O7 (spec §6) for `Scalable`: nohz_balance_enter_idle reads the nohz flags before storing 1, on both of
//! its paths, and loses nothing against an ILB pass. `Paced` runs `Scalable`'s line with other
//! kick flags (fewer STATS, fewer NEXT-only kicks), so the same models run under it too: its
//! kick never asks for more than `Patched`'s on the same scalars, so the deadline still hides
//! no kick `Patched` sends. The model bodies are
//! `loom_tests::models::o7`; every weakening of the fences involved is tried by
//! `tests/mutants.rs`.
#![cfg(nohz_loom)]

use loom_tests::models::o7::{
    LOST, deadline_against_ilb, register_with_flags_set, repeat_enter_idle_against_ilb,
};
use nohz::internals::{NOHZ_DEADLINE_BUMP, NOHZ_DEADLINE_REFRESH, NOHZ_ENTER_IDLE_REPEAT_FENCE};
use nohz::sync::mutation::with_weakened;
use nohz::sync::{NOHZ_ENTER_IDLE_FENCE, Ordering, Weakening};
use nohz::{Paced, Patched, Scalable};

#[test]
fn scalable_registration_reading_a_stale_flag_loses_nothing() {
    register_with_flags_set::<Scalable>().assert_all_reached();
}

#[test]
fn patched_registration_with_flags_set_loses_nothing() {
    register_with_flags_set::<Patched>().assert_all_reached();
}

#[test]
fn scalable_repeat_entry_loses_nothing() {
    repeat_enter_idle_against_ilb::<Scalable>().assert_all_reached();
}

/// The kernel's blind store on the idempotent path has no barrier: it can lose the flag this
/// way (the imprecision O6 accepts). Scalable's fence is what makes the same check pass.
#[test]
#[should_panic(expected = "O6/O7: CPU 1's blocked load was neither decayed nor flagged")]
fn patched_repeat_entry_shows_the_o6_imprecision() {
    let _ = LOST;
    repeat_enter_idle_against_ilb::<Patched>();
}

/// Without its fence, Scalable's read-before-write loses the flag on the idempotent path.
#[test]
#[should_panic(expected = "O6/O7: CPU 1's blocked load was neither decayed nor flagged")]
fn scalable_repeat_entry_needs_its_fence() {
    with_weakened(
        &NOHZ_ENTER_IDLE_REPEAT_FENCE,
        Weakening::Removed,
        repeat_enter_idle_against_ilb::<Scalable>,
    )
    .unwrap();
}

/// And on the registration path it needs the O1/O2 fence as before.
#[test]
#[should_panic(expected = "O7: scan missed CPU 1")]
fn scalable_registration_needs_the_o1_fence() {
    with_weakened(
        &NOHZ_ENTER_IDLE_FENCE,
        Weakening::Removed,
        register_with_flags_set::<Scalable>,
    )
    .unwrap();
}

#[test]
fn scalable_kick_deadline_never_hides_a_due_kick() {
    deadline_against_ilb::<Scalable>().assert_all_reached();
}

/// A bump without its Release half: the refresher can read the bumped word yet an old
/// needs_update, and make the word fresh with a deadline past the due NEXT kick.
#[test]
#[should_panic(expected = "kick deadline: the not-due test would skip a kick Patched sends")]
fn the_bump_must_release() {
    with_weakened(
        &NOHZ_DEADLINE_BUMP,
        Weakening::To(Ordering::Relaxed),
        deadline_against_ilb::<Scalable>,
    )
    .unwrap();
}

/// Nor may the refresher's load be Relaxed.
#[test]
#[should_panic(expected = "kick deadline: the not-due test would skip a kick Patched sends")]
fn the_refresh_must_acquire() {
    with_weakened(
        &NOHZ_DEADLINE_REFRESH,
        Weakening::To(Ordering::Relaxed),
        deadline_against_ilb::<Scalable>,
    )
    .unwrap();
}

#[test]
fn paced_registration_reading_a_stale_flag_loses_nothing() {
    register_with_flags_set::<Paced>().assert_all_reached();
}

#[test]
fn paced_repeat_entry_loses_nothing() {
    repeat_enter_idle_against_ilb::<Paced>().assert_all_reached();
}

#[test]
fn paced_kick_deadline_never_hides_a_due_kick() {
    deadline_against_ilb::<Paced>().assert_all_reached();
}

/// Under `Paced` too, the repeat entry's fence is what keeps the flag.
#[test]
#[should_panic(expected = "O6/O7: CPU 1's blocked load was neither decayed nor flagged")]
fn paced_repeat_entry_needs_its_fence() {
    with_weakened(
        &NOHZ_ENTER_IDLE_REPEAT_FENCE,
        Weakening::Removed,
        repeat_enter_idle_against_ilb::<Paced>,
    )
    .unwrap();
}

/// And the bump's Release.
#[test]
#[should_panic(expected = "kick deadline: the not-due test would skip a kick Patched sends")]
fn paced_bump_must_release() {
    with_weakened(
        &NOHZ_DEADLINE_BUMP,
        Weakening::To(Ordering::Relaxed),
        deadline_against_ilb::<Paced>,
    )
    .unwrap();
}
