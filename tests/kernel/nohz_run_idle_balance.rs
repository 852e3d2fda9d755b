//! `nohz_run_idle_balance`: the STATS pass at idle entry that NEWILB asked for.

use nohz::IlbPass;
use nohz::{NohzFlags, Policy};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, World};

fn newilb_cpu<P: Policy>() -> World<P> {
    let w = World::<P>::new(4);
    w.enter(1);
    w.enter(2);
    w.advance(1);
    w.m.rq(w.cpu(3)).set_avg_idle(u64::MAX);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    assert_eq!(w.m.rq(w.cpu(3)).nohz_flags().load(), NohzFlags::NEWILB);
    w.p.take_events();
    w
}

fn newilb_alone_runs_a_stats_pass_from_a_cpu_not_in_the_mask<P: Policy>() {
    let w = newilb_cpu::<P>();
    assert_eq!(
        w.m.nohz_run_idle_balance(w.cpu(3), &*w.p),
        Some(IlbPass::Completed)
    );
    assert_eq!(w.m.rq(w.cpu(3)).nohz_flags().load(), NohzFlags::empty());
    let decayed: Vec<usize> = w
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::BlockedAverages { by, cpu } => {
                assert_eq!(by.index(), 3);
                Some(cpu.index())
            }
            _ => None,
        })
        .collect();
    assert_eq!(decayed, [1, 2]);
    assert!(
        !w.events()
            .iter()
            .any(|e| matches!(e, Event::BalanceDomains { .. })),
        "STATS only"
    );
    assert_eq!(w.m.nohz().next_blocked(), w.now().add(32));
}

fn a_pending_kick_leaves_the_work_to_the_softirq<P: Policy>() {
    // Make CPU 3 the only idle CPU, so the kick goes to it.
    let w = newilb_cpu::<P>();
    w.m.nohz_balance_exit_idle(w.cpu(1), &*w.p);
    w.m.nohz_balance_exit_idle(w.cpu(2), &*w.p);
    w.busy(1, 1);
    w.busy(2, 1);
    w.enter(3);
    w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &*w.p);
    w.p.take_events();
    assert_eq!(w.m.nohz_run_idle_balance(w.cpu(3), &*w.p), None);
    assert_eq!(
        w.m.rq(w.cpu(3)).nohz_flags().load(),
        NohzFlags::STATS,
        "NEWILB consumed, the kick left for its handler"
    );
    assert!(w.events().is_empty());
}

fn need_resched_skips_the_pass<P: Policy>() {
    let w = newilb_cpu::<P>();
    w.p.set_need_resched(w.cpu(3), true);
    assert_eq!(w.m.nohz_run_idle_balance(w.cpu(3), &*w.p), None);
    assert_eq!(w.m.rq(w.cpu(3)).nohz_flags().load(), NohzFlags::empty());
}

fn without_newilb_nothing_happens<P: Policy>() {
    let w = World::<P>::new(4);
    assert_eq!(w.m.nohz_run_idle_balance(w.cpu(3), &*w.p), None);
    assert!(w.events().is_empty());
}

for_each_policy!(
    newilb_alone_runs_a_stats_pass_from_a_cpu_not_in_the_mask,
    a_pending_kick_leaves_the_work_to_the_softirq,
    need_resched_skips_the_pass,
    without_newilb_nothing_happens,
);
