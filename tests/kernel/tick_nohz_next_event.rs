//! `tick_nohz_next_event`: keep ticking or how long to sleep.

use nohz::platform::KTIME_MAX;
use nohz::{Policy, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{START_NS, World};

const TICK: u64 = 1_000_000;

fn a_timer_within_a_tick_keeps_ticking<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.p.set_next_timer(c, START_NS + TICK);
    assert_eq!(w.m.tick_nohz_next_event(c, &*w.p), 0);
    assert_eq!(w.ts(1).timer_expires(), 0);
    assert_eq!(
        w.ts(1).timer_expires_base(),
        START_NS,
        "the computation is cached"
    );
    assert_eq!(w.ts(1).last_jiffies(), w.now());
    assert_eq!(w.ts(1).next_timer(), START_NS + TICK);
}

fn a_cpu_that_needs_the_tick_keeps_it<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.p.set_needs_tick(c, true);
    assert_eq!(w.m.tick_nohz_next_event(c, &*w.p), 0);
}

fn others_sleep_until_their_timer_the_timekeeper_is_bounded<P: Policy>() {
    let w = World::<P>::new(4);
    let far = START_NS + 50 * TICK;
    for i in [0, 1] {
        w.p.set_next_timer(w.cpu(i), far);
    }
    assert_eq!(w.m.tick_nohz_next_event(w.cpu(1), &*w.p), far);
    w.p.set_max_deferment(5 * TICK);
    assert_eq!(
        w.m.tick_nohz_next_event(w.cpu(0), &*w.p),
        START_NS + 5 * TICK,
        "CPU 0 keeps time"
    );
    w.p.set_next_timer(w.cpu(1), KTIME_MAX);
    assert_eq!(w.m.tick_nohz_next_event(w.cpu(1), &*w.p), KTIME_MAX);
}

fn the_last_timekeeper_stays_bounded_while_nobody_keeps_time<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_max_deferment(5 * TICK);
    // CPU 0 stops its tick: it hands the duty off and remembers it was last.
    assert_eq!(
        w.m.tick_nohz_next_event(w.cpu(0), &*w.p),
        START_NS + 5 * TICK
    );
    w.m.tick_nohz_stop_tick(w.cpu(0), &*w.p);
    assert_eq!(w.m.tick_do_timer_cpu(), None);
    assert!(w.ts(0).flags().contains(nohz::TsFlags::DO_TIMER_LAST));
    assert_eq!(
        w.m.tick_nohz_next_event(w.cpu(0), &*w.p),
        START_NS + 5 * TICK
    );
    // Somebody else took the duty: no bound any more.
    w.m.set_tick_do_timer_cpu(Some(w.cpu(2)));
    assert_eq!(w.m.tick_nohz_next_event(w.cpu(0), &*w.p), KTIME_MAX);
}

fn once_stopped_it_never_returns_zero<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(2);
    w.p.set_next_timer(c, START_NS + 20 * TICK);
    w.m.tick_nohz_next_event(c, &*w.p);
    w.m.tick_nohz_stop_tick(c, &*w.p);
    assert!(w.ts(2).tick_stopped());
    w.p.set_next_timer(c, START_NS + TICK / 2);
    assert_eq!(w.m.tick_nohz_next_event(c, &*w.p), START_NS + TICK / 2);
    w.p.set_needs_tick(c, true);
    assert_eq!(w.m.tick_nohz_next_event(c, &*w.p), START_NS + TICK);
}

/// `WARN_ON_ONCE(basemono > next_tick)`: a next timer reported in the past is a platform bug;
/// it warns and counts as due now.
fn a_next_timer_in_the_past_warns_and_counts_as_now<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    // Jiffies were last updated 3 ticks on; the platform reports a timer from before that.
    w.p.advance_time_ns(3 * TICK);
    let base = START_NS + 3 * TICK;
    w.p.set_next_timer(c, START_NS + TICK);
    assert_eq!(
        w.m.tick_nohz_next_event(c, &*w.p),
        0,
        "due now: keep ticking"
    );
    assert_eq!(
        w.ts(1).next_timer(),
        START_NS + TICK,
        "recorded as reported"
    );
    assert_eq!(w.warnings(), 1);
    // Once stopped, the clamped time is the answer: the base itself.
    w.p.set_next_timer(c, base + 20 * TICK);
    w.m.tick_nohz_next_event(c, &*w.p);
    w.m.tick_nohz_stop_tick(c, &*w.p);
    assert!(w.ts(1).tick_stopped());
    assert_eq!(w.warnings(), 1);
    w.p.set_next_timer(c, base - 1);
    assert_eq!(w.m.tick_nohz_next_event(c, &*w.p), base);
    assert_eq!(w.warnings(), 2);
    // A timer exactly at the base is not in the past.
    w.p.set_next_timer(c, base);
    assert_eq!(w.m.tick_nohz_next_event(c, &*w.p), base);
    assert_eq!(w.warnings(), 2);
    assert_eq!(w.m.warnings().of_kind(Warning::NextTimerInPast), 2);
}

for_each_policy!(
    a_timer_within_a_tick_keeps_ticking,
    a_cpu_that_needs_the_tick_keeps_it,
    others_sleep_until_their_timer_the_timekeeper_is_bounded,
    the_last_timekeeper_stays_bounded_while_nobody_keeps_time,
    once_stopped_it_never_returns_zero,
    a_next_timer_in_the_past_warns_and_counts_as_now,
);
