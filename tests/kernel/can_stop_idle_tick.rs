//! `can_stop_idle_tick`.

use nohz::platform::{TickHardware, softirq};
use nohz::{Policy, Warning};
use nohz_testing::World;
use nohz_testing::for_each_policy;

fn yes_by_default<P: Policy>() {
    let w = World::<P>::new(4);
    assert!(w.m.can_stop_idle_tick(w.cpu(1), &*w.p));
    assert!(
        w.m.can_stop_idle_tick(w.cpu(0), &*w.p),
        "no NO_HZ_FULL CPU: the timekeeper may stop"
    );
    // Nor is a missing timekeeper anything to warn about then.
    w.m.set_tick_do_timer_cpu(None);
    assert!(w.m.can_stop_idle_tick(w.cpu(1), &*w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::NoTimekeeper), 0);
}

fn not_before_nohz_mode_is_active<P: Policy>() {
    let w = World::<P>::new(4);
    let m = <nohz::machine!(P, nohz_testing::CPUS)>::new();
    m.init(4, 0, &*w.p).unwrap();
    assert!(!m.can_stop_idle_tick(w.cpu(1), &*w.p));
    m.tick_nohz_activate(w.cpu(1), false);
    assert!(m.can_stop_idle_tick(w.cpu(1), &*w.p));
}

fn not_with_a_reschedule_or_a_softirq_pending<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.p.set_need_resched(c, true);
    assert!(!w.m.can_stop_idle_tick(c, &*w.p));
    w.p.set_need_resched(c, false);
    w.p.set_softirq_pending(c, softirq::RCU);
    assert!(!w.m.can_stop_idle_tick(c, &*w.p));
    // A CPU going down ignores the hotplug-safe softirqs, but not the others.
    w.deactivate(1);
    assert!(w.m.can_stop_idle_tick(c, &*w.p));
    w.p.set_softirq_pending(c, softirq::RCU | softirq::SCHED);
    assert!(!w.m.can_stop_idle_tick(c, &*w.p));
}

/// `report_idle_softirq`: a softirq left pending in idle keeps the tick, and is a warning each
/// time. Mainline since 807e0d187da4 (v6.18) stops printing after 10 reports and still keeps
/// the tick, which the crate mirrors (v5.18 to v6.17 let the tick stop from the 11th report
/// on: not mirrored); the crate counts every report.
fn a_pending_softirq_keeps_the_tick_and_warns_every_time<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.p.set_softirq_pending(c, softirq::SCHED);
    for n in 1..=12 {
        assert!(!w.m.can_stop_idle_tick(c, &*w.p));
        assert_eq!(
            w.warnings(),
            n,
            "every hit counts, past the kernel's 10 prints"
        );
    }
    // need_resched is tested first: no warning then.
    w.p.set_need_resched(c, true);
    assert!(!w.m.can_stop_idle_tick(c, &*w.p));
    assert_eq!(w.warnings(), 12);
    w.p.set_need_resched(c, false);
    // A CPU going down masks the hotplug-safe softirqs out first: with nothing left, no
    // warning, and the tick may stop; anything else left still warns.
    w.deactivate(c.index());
    w.p.set_softirq_pending(c, softirq::HOTPLUG_SAFE_MASK);
    assert!(w.m.can_stop_idle_tick(c, &*w.p));
    assert_eq!(w.warnings(), 12);
    w.p.set_softirq_pending(c, softirq::RCU | softirq::SCHED);
    assert!(!w.m.can_stop_idle_tick(c, &*w.p));
    assert_eq!(w.warnings(), 13);
    assert_eq!(w.m.warnings().on_cpu(c), 13, "counted against the idle CPU");
    assert_eq!(w.m.warnings().of_kind(Warning::IdleSoftirqPending), 13);
    // PREEMPT_RT with bottom halves blocked: the softirq waits on a lock, not on the tick.
    w.p.set_local_bh_blocked(c, true);
    assert!(w.m.can_stop_idle_tick(c, &*w.p));
    assert_eq!(w.warnings(), 13);
}

/// The crate keeps `SCHED_SOFTIRQ`'s pending bit itself, and the kernel's
/// `local_softirq_pending()` includes that bit: a CPU with the softirq raised and not yet run
/// keeps its idle tick and reports it, under the same exceptions as every other softirq.
fn the_crates_own_sched_softirq_keeps_the_tick<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.idle(1);
    // CPU 1's own balance is due: its tick raises SCHED_SOFTIRQ, which has not run yet.
    w.m.rq(c).set_next_balance(w.now());
    w.tick(1);
    assert!(w.m.sched_softirq_pending(c));
    assert_eq!(
        w.p.local_softirq_pending(c),
        0,
        "the platform's bits leave it out"
    );
    assert!(!w.m.can_stop_idle_tick(c, &*w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::IdleSoftirqPending), 1);
    // At idle entry: the tick stays, and the CPU does not register.
    w.m.tick_nohz_idle_enter(c, &*w.p);
    w.m.tick_nohz_idle_stop_tick(c, &*w.p);
    assert!(!w.ts(1).tick_stopped(), "kept by the pending softirq");
    assert!(!w.mask().contains(&1));
    assert_eq!(w.m.warnings().of_kind(Warning::IdleSoftirqPending), 2);
    // PREEMPT_RT with bottom halves blocked: it waits on that lock, silently.
    w.p.set_local_bh_blocked(c, true);
    assert!(w.m.can_stop_idle_tick(c, &*w.p));
    w.p.set_local_bh_blocked(c, false);
    // Not hotplug-safe: a CPU going down keeps its tick for it too.
    w.deactivate(1);
    assert!(!w.m.can_stop_idle_tick(c, &*w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::IdleSoftirqPending), 3);
    // Once the softirq ran, the tick may stop.
    w.m.sched_balance_softirq(c, &*w.p);
    assert!(!w.m.sched_softirq_pending(c));
    assert!(w.m.can_stop_idle_tick(c, &*w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::IdleSoftirqPending), 3);
}

fn nohz_full_keeps_the_timekeeper_ticking<P: Policy>() {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    assert!(!w.m.can_stop_idle_tick(w.cpu(0), &*w.p));
    assert!(w.m.can_stop_idle_tick(w.cpu(1), &*w.p));
    w.m.set_tick_do_timer_cpu(None);
    assert!(!w.m.can_stop_idle_tick(w.cpu(1), &*w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::NoTimekeeper), 1);
}

fn an_offline_cpu_warns_and_carries_on<P: Policy>() {
    let w = World::<P>::new(4);
    w.m.set_cpu_online(w.cpu(2), false);
    assert!(w.m.can_stop_idle_tick(w.cpu(2), &*w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::OfflineCpuIdle), 1);
}

for_each_policy!(
    yes_by_default,
    not_before_nohz_mode_is_active,
    not_with_a_reschedule_or_a_softirq_pending,
    a_pending_softirq_keeps_the_tick_and_warns_every_time,
    the_crates_own_sched_softirq_keeps_the_tick,
    nohz_full_keeps_the_timekeeper_ticking,
    an_offline_cpu_warns_and_carries_on,
);
