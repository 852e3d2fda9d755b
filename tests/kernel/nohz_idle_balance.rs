//! `_nohz_idle_balance` and `update_nohz_stats`: the scan, STATS / BALANCE / NEXT, the abort.

use nohz::IlbPass;
use nohz::{NohzFlags, Policy, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, World};

const S: NohzFlags = NohzFlags::STATS;
const B: NohzFlags = NohzFlags::BALANCE;
const X: NohzFlags = NohzFlags::NEXT;

fn stats_pass_scans_from_the_next_cpu_and_rearms<P: Policy>() {
    let w = World::<P>::new(6);
    for i in [0, 1, 3, 4] {
        w.enter(i);
    }
    w.advance(1);
    w.p.set_blocked_load_remains(w.cpu(4), true);
    w.p.take_events();
    assert_eq!(
        w.m.nohz_idle_balance_pass(w.cpu(3), S, &*w.p),
        IlbPass::Completed
    );
    assert_eq!(w.decayed(), [4, 0, 1, 3], "after 3, wrapping, itself last");
    assert!(w.m.rq(w.cpu(4)).has_blocked_load());
    assert!(!w.m.rq(w.cpu(1)).has_blocked_load());
    assert_eq!(w.m.rq(w.cpu(1)).last_blocked_load_update_tick(), w.now());
    assert!(w.m.nohz().has_blocked_load(), "CPU 4 still has some");
    assert_eq!(w.m.nohz().next_blocked(), w.now().add(32));
    // Nothing left anywhere: the flag stays clear.
    w.p.set_blocked_load_remains(w.cpu(4), false);
    w.advance(1);
    w.m.nohz_idle_balance_pass(w.cpu(3), S, &*w.p);
    assert!(!w.m.nohz().has_blocked_load());
}

fn stats_skips_fresh_unregistered_and_unloaded_cpus<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.enter(2);
    w.enter(3);
    // Same jiffy as init's stamp: "updated this jiffy", retry later.
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(3), S, &*w.p);
    assert!(w.decayed().is_empty());
    assert!(w.m.nohz().has_blocked_load(), "retry later");
    w.advance(1);
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(3), S, &*w.p);
    assert_eq!(w.decayed(), [1, 2, 3]);
    w.advance(1);
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(3), S, &*w.p);
    assert!(w.decayed().is_empty(), "nothing blocked any more");
    assert!(!w.m.nohz().has_blocked_load());
}

fn busy_cpus_in_the_mask_are_skipped<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.enter(2);
    w.advance(1);
    w.busy(1, 1); // woke, tick not yet run: still in the mask
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(2), S | B | X, &*w.p);
    assert_eq!(w.decayed(), [2]);
    assert!(
        !w.events()
            .iter()
            .any(|e| matches!(e, Event::BalanceDomains { cpu, .. } if cpu.index() == 1))
    );
}

fn balance_runs_where_due_and_next_takes_the_earliest<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.enter(2);
    w.enter(3);
    w.m.rq(w.cpu(3)).set_next_balance(w.now().add(7));
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(1), S | B, &*w.p);
    let balanced: Vec<usize> = w
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::BalanceDomains { cpu, .. } => Some(cpu.index()),
            _ => None,
        })
        .collect();
    assert_eq!(balanced, [2, 1], "CPU 3 is not due");
    assert_eq!(w.m.rq(w.cpu(2)).next_balance(), w.now().add(4));
    assert_eq!(
        w.m.nohz().next_balance(),
        w.now().add(4),
        "earliest after balancing"
    );
}

fn next_alone_recomputes_next_balance<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(2);
    w.m.rq(w.cpu(2)).set_next_balance(w.now().add(9));
    assert!(w.m.nohz().needs_update());
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(2), X, &*w.p);
    assert!(!w.m.nohz().needs_update());
    assert_eq!(w.m.nohz().next_balance(), w.now().add(9));
    assert!(w.decayed().is_empty());
    assert!(
        !w.events()
            .iter()
            .any(|e| matches!(e, Event::BalanceDomains { .. }))
    );
    // A deadline more than 60 s away is not taken.
    w.m.rq(w.cpu(2))
        .set_next_balance(w.now().add(60 * 1000 + 1));
    w.m.nohz_idle_balance_pass(w.cpu(2), X, &*w.p);
    assert_eq!(w.m.nohz().next_balance(), w.now().add(9));
}

fn abort_rearms_and_keeps_the_deadlines<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.enter(2);
    w.advance(1);
    let (nb, nbl) = (w.m.nohz().next_balance(), w.m.nohz().next_blocked());
    // The ILB (CPU 3) got work: it is not idle and needs to reschedule.
    w.busy(3, 1);
    w.p.set_need_resched(w.cpu(3), true);
    w.p.take_events();
    assert_eq!(
        w.m.nohz_idle_balance_pass(w.cpu(3), S | X, &*w.p),
        IlbPass::Aborted
    );
    assert!(w.decayed().is_empty());
    assert!(
        w.m.nohz().has_blocked_load() && w.m.nohz().needs_update(),
        "re-armed"
    );
    assert_eq!(
        (w.m.nohz().next_balance(), w.m.nohz().next_blocked()),
        (nb, nbl)
    );
    // need_resched while this CPU is still idle does not abort.
    w.idle(3);
    assert_eq!(
        w.m.nohz_idle_balance_pass(w.cpu(3), S | X, &*w.p),
        IlbPass::Completed
    );
}

fn balance_without_stats_warns_then_runs<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(2);
    w.p.take_events();
    w.m.nohz_idle_balance_pass(w.cpu(2), B, &*w.p);
    assert_eq!(w.m.warnings().of_kind(Warning::BalanceWithoutStats), 1);
    assert!(
        w.events()
            .iter()
            .any(|e| matches!(e, Event::BalanceDomains { .. }))
    );
}

/// `_nohz_idle_balance` starts its next deadline a minute out (`jiffies + 60 * HZ`), so a
/// visited CPU balancing 30 s out is earlier and NEXT moves `nohz.next_balance` to it.
fn next_takes_a_deadline_within_the_minute<P: Policy>() {
    let w = World::<P>::new(4);
    for i in [1, 2] {
        w.enter(i);
        w.m.rq(w.cpu(i)).set_next_balance(w.now().add(600_000));
    }
    w.m.rq(w.cpu(1)).set_next_balance(w.now().add(30_000));
    w.advance(1);
    w.m.nohz_idle_balance_pass(w.cpu(2), X, &*w.p);
    assert_eq!(w.m.nohz().next_balance(), w.now().add(30_000 - 1));
}

for_each_policy!(
    stats_pass_scans_from_the_next_cpu_and_rearms,
    stats_skips_fresh_unregistered_and_unloaded_cpus,
    busy_cpus_in_the_mask_are_skipped,
    balance_runs_where_due_and_next_takes_the_earliest,
    next_alone_recomputes_next_balance,
    abort_rearms_and_keeps_the_deadlines,
    next_takes_a_deadline_within_the_minute,
);

/// The kernel's `WARN_ON` for a pass with BALANCE and no STATS. Not `Paced`, whose balance
/// kick asks BALANCE alone by design and so counts no warning for it (its documented
/// divergence, pinned by `tests/paced.rs`'s
/// `a_balance_pass_without_stats_balances_the_due_cpus_and_leaves_blocked_load_alone`).
mod balance_without_stats {
    use super::balance_without_stats_warns_then_runs;

    nohz_testing::for_each_policy!(except Paced: balance_without_stats_warns_then_runs);
}
