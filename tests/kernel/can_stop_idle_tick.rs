//! `can_stop_idle_tick`.

use crate::{World, both};
use nohz::platform::softirq;
use nohz::{Policy, Warning};

fn yes_by_default<P: Policy>() {
    let w = World::<P>::new(4);
    assert!(w.m.can_stop_idle_tick(w.cpu(1), &w.p));
    assert!(
        w.m.can_stop_idle_tick(w.cpu(0), &w.p),
        "no NO_HZ_FULL CPU: the timekeeper may stop"
    );
    // Nor is a missing timekeeper anything to warn about then.
    w.m.set_tick_do_timer_cpu(None);
    assert!(w.m.can_stop_idle_tick(w.cpu(1), &w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::NoTimekeeper), 0);
}

fn not_before_nohz_mode_is_active<P: Policy>() {
    let w = World::<P>::new(4);
    let m = nohz::Machine::<P, { crate::N }, 1>::new();
    m.init(4, 0, &w.p).unwrap();
    assert!(!m.can_stop_idle_tick(w.cpu(1), &w.p));
    m.tick_nohz_activate(w.cpu(1), false);
    assert!(m.can_stop_idle_tick(w.cpu(1), &w.p));
}

fn not_with_a_reschedule_or_a_softirq_pending<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.p.set_need_resched(c, true);
    assert!(!w.m.can_stop_idle_tick(c, &w.p));
    w.p.set_need_resched(c, false);
    w.p.set_softirq_pending(c, softirq::RCU);
    assert!(!w.m.can_stop_idle_tick(c, &w.p));
    // A CPU going down ignores the hotplug-safe softirqs, but not the others.
    w.deactivate(1);
    assert!(w.m.can_stop_idle_tick(c, &w.p));
    w.p.set_softirq_pending(c, softirq::RCU | softirq::SCHED);
    assert!(!w.m.can_stop_idle_tick(c, &w.p));
}

fn nohz_full_keeps_the_timekeeper_ticking<P: Policy>() {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    assert!(!w.m.can_stop_idle_tick(w.cpu(0), &w.p));
    assert!(w.m.can_stop_idle_tick(w.cpu(1), &w.p));
    w.m.set_tick_do_timer_cpu(None);
    assert!(!w.m.can_stop_idle_tick(w.cpu(1), &w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::NoTimekeeper), 1);
}

fn an_offline_cpu_warns_and_carries_on<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_online(w.cpu(2), false);
    assert!(w.m.can_stop_idle_tick(w.cpu(2), &w.p));
    assert_eq!(w.m.warnings().of_kind(Warning::OfflineCpuIdle), 1);
}

both!(
    yes_by_default,
    not_before_nohz_mode_is_active,
    not_with_a_reschedule_or_a_softirq_pending,
    nohz_full_keeps_the_timekeeper_ticking,
    an_offline_cpu_warns_and_carries_on,
);
