//! `tick_nohz_idle_stop_tick`: stop or retain in the idle loop, and register for idle balancing.

use nohz::{NohzFlags, Policy};
use nohz_testing::for_each_policy;
use nohz_testing::{START_NS, World};

const TICK: u64 = 1_000_000;

fn idle_section<P: Policy>(w: &World<P>, i: usize) {
    w.idle(i);
    w.m.tick_nohz_idle_enter(w.cpu(i), &*w.p);
}

fn a_cpu_that_cannot_stop_does_nothing<P: Policy>() {
    let w = World::<P>::new(4);
    idle_section(&w, 1);
    w.p.set_need_resched(w.cpu(1), true);
    w.m.tick_nohz_idle_stop_tick(w.cpu(1), &*w.p);
    assert_eq!(w.ts(1).idle_calls(), 0);
    assert!(!w.ts(1).tick_stopped() && w.mask().is_empty());
}

fn a_near_timer_retains_the_tick<P: Policy>() {
    let w = World::<P>::new(4);
    idle_section(&w, 1);
    w.p.set_next_timer(w.cpu(1), START_NS + TICK / 2);
    w.m.tick_nohz_idle_stop_tick(w.cpu(1), &*w.p);
    let ts = w.ts(1);
    assert_eq!((ts.idle_calls(), ts.idle_sleeps()), (1, 0));
    assert_eq!(ts.timer_expires_base(), 0);
    assert!(!ts.tick_stopped() && w.mask().is_empty());
}

fn stopping_registers_the_cpu_and_starts_idle_accounting<P: Policy>() {
    let w = World::<P>::new(4);
    idle_section(&w, 2);
    w.p.set_next_timer(w.cpu(2), START_NS + 30 * TICK);
    w.m.tick_nohz_idle_stop_tick(w.cpu(2), &*w.p);
    let ts = w.ts(2);
    assert!(ts.tick_stopped());
    assert_eq!((ts.idle_calls(), ts.idle_sleeps()), (1, 1));
    assert_eq!(ts.idle_expires(), START_NS + 30 * TICK);
    assert_eq!(ts.idle_jiffies(), w.now());
    assert_eq!(w.mask(), [2]);
}

fn a_refused_stop_still_counts_a_sleep_but_does_not_register<P: Policy>() {
    let w = World::<P>::new(4);
    idle_section(&w, 2);
    w.p.set_next_timer(w.cpu(2), START_NS + 30 * TICK);
    w.p.set_timer_base_refuses_idle(w.cpu(2), true);
    w.m.tick_nohz_idle_stop_tick(w.cpu(2), &*w.p);
    let ts = w.ts(2);
    assert_eq!((ts.idle_calls(), ts.idle_sleeps()), (1, 1));
    assert!(!ts.tick_stopped() && w.mask().is_empty());
}

fn a_governor_cached_event_is_reused<P: Policy>() {
    let w = World::<P>::new(4);
    idle_section(&w, 3);
    w.p.set_next_timer(w.cpu(3), START_NS + 30 * TICK);
    let sleep = w.m.tick_nohz_get_sleep_length(w.cpu(3), &*w.p);
    let entry = w.ts(3).idle_entrytime();
    assert_eq!(sleep.sleep_length, START_NS + 30 * TICK - entry);
    let planned = w.ts(3).timer_expires();
    assert_eq!(planned, START_NS + 30 * TICK);
    // The wheel changes after the governor looked: the cached value is used.
    w.p.set_next_timer(w.cpu(3), START_NS + 60 * TICK);
    w.m.tick_nohz_idle_stop_tick(w.cpu(3), &*w.p);
    assert_eq!(w.ts(3).idle_expires(), planned);
    assert_eq!(w.ts(3).next_tick(), planned);
}

fn every_stopped_pass_registers_under_patched_only_the_first_under_legacy<P: Policy>() {
    let w = World::<P>::new(4);
    idle_section(&w, 2);
    w.p.set_next_timer(w.cpu(2), START_NS + 30 * TICK);
    w.m.tick_nohz_idle_stop_tick(w.cpu(2), &*w.p);
    let first_idle_jiffies = w.ts(2).idle_jiffies();
    // An ILB pass decays CPU 2's blocked load; an interrupt wakes it without work.
    w.advance(1);
    w.m.nohz_idle_balance_pass(w.cpu(1), NohzFlags::STATS, &*w.p);
    let rq = w.m.rq(w.cpu(2));
    assert!(!rq.has_blocked_load() && !w.m.nohz().has_blocked_load());
    w.m.tick_nohz_irq_enter(w.cpu(2), &*w.p);
    w.m.tick_nohz_irq_exit(w.cpu(2), &*w.p);
    w.m.tick_nohz_idle_stop_tick(w.cpu(2), &*w.p);
    assert_eq!(
        w.ts(2).idle_jiffies(),
        first_idle_jiffies,
        "transition only"
    );
    assert_eq!(w.ts(2).idle_sleeps(), 2);
    // Patched: nohz_balance_enter_idle's idempotent path re-flagged the blocked load. Legacy: nothing.
    assert_eq!(rq.has_blocked_load(), P::ENTER_IDLE_WHENEVER_STOPPED);
    assert_eq!(
        w.m.nohz().has_blocked_load(),
        P::ENTER_IDLE_WHENEVER_STOPPED
    );
    assert_eq!(w.mask(), [2], "registered once either way");
    assert_eq!(w.busy_count(0), 3);
}

for_each_policy!(
    a_cpu_that_cannot_stop_does_nothing,
    a_near_timer_retains_the_tick,
    stopping_registers_the_cpu_and_starts_idle_accounting,
    a_refused_stop_still_counts_a_sleep_but_does_not_register,
    a_governor_cached_event_is_reused,
    every_stopped_pass_registers_under_patched_only_the_first_under_legacy,
);
