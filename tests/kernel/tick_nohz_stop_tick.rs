//! `tick_nohz_stop_tick`: the only place the tick stops.

use nohz::platform::{KTIME_MAX, TickHardware};
use nohz::{Policy, TsFlags, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, START_NS, World};

const TICK: u64 = 1_000_000;

fn prepare<P: Policy>(w: &World<P>, i: usize, at: u64) {
    w.p.set_next_timer(w.cpu(i), at);
    assert_ne!(w.m.tick_nohz_next_event(w.cpu(i), &*w.p), 0);
    w.p.take_events();
}

fn a_busy_timer_base_keeps_the_tick<P: Policy>() {
    let w = World::<P>::new(4);
    prepare(&w, 1, START_NS + 9 * TICK);
    w.p.set_timer_base_refuses_idle(w.cpu(1), true);
    w.m.tick_nohz_stop_tick(w.cpu(1), &*w.p);
    assert!(!w.ts(1).tick_stopped());
    assert_eq!(
        w.ts(1).timer_expires_base(),
        0,
        "the cache is consumed anyway"
    );
    assert!(w.events().is_empty());
}

fn the_first_stop_saves_the_phase_and_programs_the_timer<P: Policy>() {
    let w = World::<P>::new(4);
    prepare(&w, 1, START_NS + 9 * TICK);
    w.m.tick_nohz_stop_tick(w.cpu(1), &*w.p);
    let ts = w.ts(1);
    assert!(ts.tick_stopped());
    assert_eq!(
        ts.last_tick(),
        START_NS + TICK,
        "the periodic expiry it had"
    );
    assert_eq!(ts.next_tick(), START_NS + 9 * TICK);
    assert!(w.p.timer_base_idle(w.cpu(1)));
    assert_eq!(
        w.events(),
        [Event::ProgramTick {
            cpu: w.cpu(1),
            expires: START_NS + 9 * TICK
        }]
    );
    assert!(
        !ts.flags().contains(TsFlags::DO_TIMER_LAST),
        "CPU 0 keeps time"
    );
}

fn the_timekeeper_hands_off_its_duty<P: Policy>() {
    let w = World::<P>::new(4);
    prepare(&w, 0, START_NS + 9 * TICK);
    w.m.tick_nohz_stop_tick(w.cpu(0), &*w.p);
    assert_eq!(w.m.tick_do_timer_cpu(), None);
    assert!(w.ts(0).flags().contains(TsFlags::DO_TIMER_LAST));
    // CPU 1 takes over; when CPU 0 stops again it is no longer the last.
    w.m.set_tick_do_timer_cpu(Some(w.cpu(1)));
    prepare(&w, 0, START_NS + 9 * TICK);
    w.m.tick_nohz_stop_tick(w.cpu(0), &*w.p);
    assert!(!w.ts(0).flags().contains(TsFlags::DO_TIMER_LAST));
}

fn nothing_to_wake_for_cancels_the_timer<P: Policy>() {
    let w = World::<P>::new(4);
    prepare(&w, 2, KTIME_MAX);
    w.m.tick_nohz_stop_tick(w.cpu(2), &*w.p);
    assert_eq!(w.events(), [Event::CancelTick { cpu: w.cpu(2) }]);
    assert_eq!(w.ts(2).next_tick(), KTIME_MAX);
    // Stopping again at "never": nothing to do.
    prepare(&w, 2, KTIME_MAX);
    w.m.tick_nohz_stop_tick(w.cpu(2), &*w.p);
    assert!(w.events().is_empty());
}

fn restopping_at_the_same_expiry_skips_the_reprogram_unless_it_is_lost<P: Policy>() {
    let w = World::<P>::new(4);
    let at = START_NS + 9 * TICK;
    prepare(&w, 3, at);
    w.m.tick_nohz_stop_tick(w.cpu(3), &*w.p);
    prepare(&w, 3, at);
    w.m.tick_nohz_stop_tick(w.cpu(3), &*w.p);
    assert!(w.events().is_empty(), "already programmed there");
    // The timer was moved behind tick-sched's back: warn, then reprogram.
    TickHardware::program_tick(&*w.p, w.cpu(3), at + 1);
    prepare(&w, 3, at);
    w.m.tick_nohz_stop_tick(w.cpu(3), &*w.p);
    assert_eq!(w.m.warnings().of_kind(Warning::TickNotProgrammed), 1);
    assert_eq!(
        w.events(),
        [Event::ProgramTick {
            cpu: w.cpu(3),
            expires: at
        }]
    );
    assert_eq!(
        w.ts(3).last_tick(),
        START_NS + TICK,
        "last_tick only on the first stop"
    );
}

/// A stopped tick whose next event moves out to "never" is cancelled, not left programmed
/// at the old expiry.
fn a_stopped_tick_with_nothing_left_to_wake_for_is_cancelled<P: Policy>() {
    let w = World::<P>::new(4);
    prepare(&w, 2, START_NS + 9 * TICK);
    w.m.tick_nohz_stop_tick(w.cpu(2), &*w.p);
    assert_eq!(w.ts(2).next_tick(), START_NS + 9 * TICK);
    prepare(&w, 2, KTIME_MAX);
    w.m.tick_nohz_stop_tick(w.cpu(2), &*w.p);
    assert_eq!(w.events(), [Event::CancelTick { cpu: w.cpu(2) }]);
    assert_eq!(w.ts(2).next_tick(), KTIME_MAX);
}

for_each_policy!(
    a_busy_timer_base_keeps_the_tick,
    the_first_stop_saves_the_phase_and_programs_the_timer,
    the_timekeeper_hands_off_its_duty,
    nothing_to_wake_for_cancels_the_timer,
    restopping_at_the_same_expiry_skips_the_reprogram_unless_it_is_lost,
    a_stopped_tick_with_nothing_left_to_wake_for_is_cancelled,
);
