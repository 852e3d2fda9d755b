//! `sched_tick` -> `sched_balance_trigger` glue.

use nohz::KickDecision;
use nohz::Policy;
use nohz_testing::for_each_policy;
use nohz_testing::{Event, World};

fn snapshot_of_idle_cpu_is_taken_each_tick<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    assert_eq!(w.tick(1), Some(KickDecision::IdleTick));
    assert!(w.m.rq(w.cpu(1)).idle_balance());
    assert_eq!(w.mask(), [1], "a tick on an idle CPU does not exit");
    w.busy(1, 1);
    assert!(matches!(w.tick(1), Some(d) if d != KickDecision::IdleTick));
    assert!(!w.m.rq(w.cpu(1)).idle_balance());
    assert!(w.mask().is_empty());
}

fn own_balance_due_raises_the_softirq<P: Policy>() {
    let w = World::<P>::new(4);
    w.busy(0, 1);
    w.m.rq(w.cpu(0)).set_next_balance(w.now().add(2));
    w.tick(0);
    assert!(!w.events().contains(&Event::Softirq { cpu: w.cpu(0) }));
    w.advance(2);
    w.tick(0);
    assert!(w.events().contains(&Event::Softirq { cpu: w.cpu(0) }));
}

fn no_domain_or_inactive_stops_the_trigger<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.busy(1, 1);
    w.p.set_sched_domain(w.cpu(1), false);
    w.rebuild();
    assert_eq!(w.tick(1), None);
    assert_eq!(w.mask(), [1], "no kick, so no exit either");
    assert!(w.events().is_empty());

    let w = World::<P>::new(4);
    w.busy(2, 1);
    w.deactivate(2);
    assert_eq!(w.tick(2), None);
    assert!(w.events().is_empty());
}

/// `sched_balance_trigger` on a busy CPU with a domain: its own balance is due, so it raises
/// the softirq, and the kick's decision comes back.
fn the_balance_trigger_decides_for_an_active_cpu_with_a_domain<P: Policy>() {
    let w = World::<P>::new(4);
    w.busy(0, 2);
    w.enter(1);
    let decision = w.m.sched_balance_trigger(w.cpu(0), &*w.p);
    assert!(decision.is_some(), "an active CPU with a domain decides");
    assert!(
        w.m.sched_softirq_pending(w.cpu(0)),
        "its own balance was due"
    );
    w.deactivate(2);
    assert_eq!(w.m.sched_balance_trigger(w.cpu(2), &*w.p), None);
}

/// `rq->curr == rq->idle` as the scheduler publishes it: a CPU running a task is not idle,
/// one switched to its idle task is.
fn curr_is_idle_follows_the_switches<P: Policy>() {
    let w = World::<P>::new(4);
    let rq = w.m.rq(w.cpu(1));
    w.busy(1, 1);
    assert!(!rq.curr_is_idle() && !rq.idle_cpu());
    w.idle(1);
    assert!(rq.curr_is_idle() && rq.idle_cpu());
}

for_each_policy!(
    snapshot_of_idle_cpu_is_taken_each_tick,
    own_balance_due_raises_the_softirq,
    no_domain_or_inactive_stops_the_trigger,
    the_balance_trigger_decides_for_an_active_cpu_with_a_domain,
    curr_is_idle_follows_the_switches,
);
