//! The `Sharded` idle set (spec `sharded-idle.md` §2.7): L1-L8, the NEXT variant of L3, and
//! the rejected designs killed. Model bodies: `loom_tests::models::sharded`; every weakening
//! of every site and every code mutant is also tried against all of them by
//! `tests/mutants.rs`.
#![cfg(nohz_loom)]

use loom_tests::models::sharded::*;
use nohz::internals::{CodeMutant, NOHZ_SHARD_GC_FENCE, with_code_mutant};
use nohz::sync::mutation::with_weakened;
use nohz::sync::{NOHZ_ENTER_IDLE_FENCE, NOHZ_ILB_FENCE, Weakening};

fn report(name: &str, e: &loom_tests::Explored) {
    e.assert_all_reached();
    println!("{name}: {} executions", e.executions);
}

#[test]
fn l1_s1_sticky_summary() {
    report("L1", &s1_sticky_summary());
}

#[test]
fn l2_s1_summary_rmw() {
    report("L2", &s1_summary_rmw());
}

#[test]
fn l3_o1_sharded_walk() {
    report("L3", &o1_sharded_walk(Clears::Stats));
}

#[test]
fn l3n_o2_sharded_walk_next() {
    report("L3n", &o1_sharded_walk(Clears::Next));
}

#[test]
fn l4_enter_gc_ilb() {
    report("L4", &enter_gc_ilb());
}

#[test]
fn l5_two_enter_gc_ilb() {
    report("L5", &two_enter_gc_ilb());
}

#[test]
fn l6_churn_sticky() {
    report("L6", &churn_sticky());
}

#[test]
fn l8_owner_bits() {
    report("L8", &owner_bits());
}

#[test]
fn l7_exact_summary_with_fences_on_both_sides_holds() {
    report("L7[both fences]", &exact_aba(Exact::BothFences));
}

#[test]
fn l7_exact_summary_with_release_set_acquire_clear_holds() {
    report("L7[release/acquire]", &exact_aba(Exact::ReleaseAcquire));
}

#[test]
#[should_panic(expected = "exact summary")]
fn l7_exact_summary_without_recheck_loses_a_set() {
    exact_aba(Exact::NoRecheck);
}

#[test]
#[should_panic(expected = "exact summary")]
fn l7_exact_summary_with_the_exit_fence_only_loses_a_set() {
    exact_aba(Exact::ExitFenceOnly);
}

#[test]
#[should_panic(expected = "S1")]
fn without_the_gc_fence_a_registered_shard_ends_unflagged() {
    with_weakened(&NOHZ_SHARD_GC_FENCE, Weakening::Removed, s1_sticky_summary).unwrap();
}

/// L5 is not in the mutation runner's list (L4 kills all it kills): its kills of the two S1
/// fences are checked here.
#[test]
#[should_panic(expected = "S1")]
fn l5_without_the_gc_fence_a_registered_shard_ends_unflagged() {
    with_weakened(&NOHZ_SHARD_GC_FENCE, Weakening::Removed, two_enter_gc_ilb).unwrap();
}

#[test]
#[should_panic(expected = "O1 (sharded)")]
fn l5_without_the_ilb_fence_an_enterer_is_missed() {
    with_weakened(&NOHZ_ILB_FENCE, Weakening::Removed, two_enter_gc_ilb).unwrap();
}

#[test]
#[should_panic(expected = "S1")]
fn without_the_enter_fence_a_registered_shard_ends_unflagged() {
    with_weakened(
        &NOHZ_ENTER_IDLE_FENCE,
        Weakening::Removed,
        s1_sticky_summary,
    )
    .unwrap();
}

#[test]
#[should_panic(expected = "O2 (sharded)")]
fn without_the_ilb_fence_the_next_variant_loses_needs_update() {
    with_weakened(&NOHZ_ILB_FENCE, Weakening::Removed, || {
        o1_sharded_walk(Clears::Next)
    })
    .unwrap();
}

#[test]
#[should_panic(expected = "S1")]
fn a_summary_read_before_the_fence_ends_unflagged() {
    with_code_mutant(CodeMutant::SummaryBeforeFence, s1_sticky_summary).unwrap();
}

#[test]
#[should_panic(expected = "S1")]
fn a_gc_without_recheck_ends_unflagged() {
    with_code_mutant(CodeMutant::GcNoRecheck, s1_sticky_summary).unwrap();
}

/// Killed through S1 (the other shard's bit clobbered) or S2 (the stale bit stored back).
#[test]
#[should_panic(expected = "S")]
fn a_gc_clearing_with_load_and_store_clobbers_the_other_shard() {
    with_code_mutant(CodeMutant::GcLoadStore, s1_summary_rmw).unwrap();
}

/// The spec's "still to add": the `has_idle_cores` 2021 analogue dies in L2's two shards.
#[test]
#[should_panic(expected = "S")]
fn a_gc_clearing_the_wrong_shard_is_caught() {
    with_code_mutant(CodeMutant::GcWrongShard, s1_summary_rmw).unwrap();
}

#[test]
#[should_panic(expected = "O1 (sharded)")]
fn a_walk_gated_by_the_summary_misses_a_new_cpu() {
    with_code_mutant(CodeMutant::WalkGatedBySummary, || {
        o1_sharded_walk(Clears::Stats)
    })
    .unwrap();
}

#[test]
#[should_panic(expected = "owner bits")]
fn a_shard_word_updated_with_load_and_store_loses_a_bit() {
    with_code_mutant(CodeMutant::ShardLoadStore, owner_bits).unwrap();
}
