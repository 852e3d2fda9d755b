//! `nohz_csd_func` behind the crate's csd entry point, and the softirq hand-off.

use nohz::{NohzFlags, Policy, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, World};

const SB: NohzFlags = NohzFlags::STATS.union(NohzFlags::BALANCE);

fn idle_target_hands_the_flags_to_its_softirq<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    w.m.kick_ilb(w.cpu(0), SB, &*w.p);
    w.p.take_events();
    w.m.nohz_csd_ipi(w.cpu(3), &*w.p);
    let rq = w.m.rq(w.cpu(3));
    assert!(!rq.csd_busy());
    assert_eq!(rq.nohz_flags().load(), NohzFlags::empty());
    assert!(rq.idle_balance());
    assert_eq!(rq.nohz_idle_balance(), SB);
    assert_eq!(w.events(), [Event::Softirq { cpu: w.cpu(3) }]);
}

fn busy_target_drops_the_request<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    w.m.kick_ilb(w.cpu(0), SB, &*w.p);
    w.busy(3, 1);
    w.p.take_events();
    w.m.nohz_csd_ipi(w.cpu(3), &*w.p);
    let rq = w.m.rq(w.cpu(3));
    assert_eq!(
        rq.nohz_flags().load(),
        NohzFlags::empty(),
        "consumed all the same"
    );
    assert!(!rq.idle_balance());
    assert_eq!(rq.nohz_idle_balance(), NohzFlags::empty());
    assert!(w.events().is_empty(), "no softirq");
}

fn newilb_is_consumed_too<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    w.m.rq(w.cpu(3)).set_avg_idle(u64::MAX);
    w.advance(1);
    w.m.sched_balance_newidle(w.cpu(3), &*w.p);
    w.m.kick_ilb(w.cpu(0), NohzFlags::STATS, &*w.p);
    w.m.nohz_csd_ipi(w.cpu(3), &*w.p);
    let rq = w.m.rq(w.cpu(3));
    assert_eq!(rq.nohz_flags().load(), NohzFlags::empty());
    assert_eq!(rq.nohz_idle_balance(), NohzFlags::STATS | NohzFlags::NEWILB);
}

fn a_kick_without_kick_bits_warns<P: Policy>() {
    let w = World::<P>::new(4);
    w.m.nohz_csd_ipi(w.cpu(2), &*w.p);
    assert_eq!(w.m.warnings().of_kind(Warning::CsdWithoutKick), 1);
    assert_eq!(w.m.warnings().on_cpu(w.cpu(2)), 1);
    // And it still does what the kernel does: CPU 2 is idle, so the (empty) flags go to the
    // softirq, which then finds nothing to do for others and balances itself.
    assert!(w.m.rq(w.cpu(2)).idle_balance());
}

fn softirq_runs_the_ilb_pass_or_balances_itself<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(2);
    w.enter(3);
    w.m.kick_ilb(w.cpu(0), SB, &*w.p);
    w.m.nohz_csd_ipi(w.cpu(2), &*w.p);
    w.p.take_events();
    w.m.sched_balance_softirq(w.cpu(2), &*w.p);
    assert_eq!(w.m.rq(w.cpu(2)).nohz_idle_balance(), NohzFlags::empty());
    // The ILB pass balanced CPUs 3 then 2 (wrap from 3); no self-balance after it.
    let balanced: Vec<_> = w
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::BalanceDomains { by, cpu, .. } => Some((by.index(), cpu.index())),
            _ => None,
        })
        .collect();
    assert_eq!(balanced, [(2, 3), (2, 2)]);
    // Without handed-over flags, the softirq balances its own CPU.
    w.p.take_events();
    w.m.sched_balance_softirq(w.cpu(2), &*w.p);
    assert!(matches!(
        w.events()[..],
        [Event::BlockedAverages { .. }, Event::BalanceDomains { .. }]
    ));
    assert_eq!(w.m.rq(w.cpu(2)).next_balance(), w.now().add(4));
}

fn flags_handed_to_a_cpu_that_is_busy_by_softirq_time_are_dropped<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(3);
    w.m.kick_ilb(w.cpu(0), SB, &*w.p);
    w.m.nohz_csd_ipi(w.cpu(3), &*w.p);
    // A tick between the IPI and the softirq found the CPU busy.
    w.busy(3, 1);
    w.tick(3);
    w.p.take_events();
    w.m.sched_balance_softirq(w.cpu(3), &*w.p);
    assert_eq!(w.m.rq(w.cpu(3)).nohz_idle_balance(), NohzFlags::empty());
    assert!(matches!(
        w.events()[..],
        [
            Event::BlockedAverages { .. },
            Event::BalanceDomains {
                idle: nohz::platform::CpuIdleType::NotIdle,
                ..
            }
        ]
    ));
}

for_each_policy!(
    idle_target_hands_the_flags_to_its_softirq,
    busy_target_drops_the_request,
    newilb_is_consumed_too,
    a_kick_without_kick_bits_warns,
    softirq_runs_the_ilb_pass_or_balances_itself,
    flags_handed_to_a_cpu_that_is_busy_by_softirq_time_are_dropped,
);
