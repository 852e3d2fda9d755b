//! `can_stop_idle_tick`.

use nohz::for_each_policy;
use nohz::platform::softirq;
use nohz::testing::World;
use nohz::{Policy, Warning};

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
    let m = <nohz::machine!(P, nohz::testing::CPUS)>::new();
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
/// time (the kernel stops printing after 10, and still keeps the tick).
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
    nohz_full_keeps_the_timekeeper_ticking,
    an_offline_cpu_warns_and_carries_on,
);
