//! The sched timer firing: timekeeping takeover, `idle_jiffies`, re-arming, `sched_tick`.

use nohz::platform::TickHardware;
use nohz::{KickDecision, TimerTick};
use nohz::{Policy, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, START_NS, World};

const TICK: u64 = 1_000_000;

fn a_periodic_tick_rearms_and_runs_the_scheduler_tick<P: Policy>() {
    let w = World::<P>::new(4);
    w.busy(1, 1);
    w.p.set_time_ns(START_NS + TICK);
    w.p.take_events();
    let d = w.m.tick_sched_timer(w.cpu(1), &*w.p);
    assert!(d.is_some() && d != Some(KickDecision::IdleTick));
    assert!(w.events().contains(&Event::ProgramTick {
        cpu: w.cpu(1),
        expires: START_NS + 2 * TICK
    }));
}

fn the_timekeeper_updates_jiffies_and_a_free_duty_is_taken<P: Policy>() {
    let w = World::<P>::new(4);
    let j0 = w.now();
    w.p.set_time_ns(START_NS + 3 * TICK);
    w.m.tick_sched_timer(w.cpu(2), &*w.p);
    assert_eq!(w.now(), j0, "CPU 2 is not the timekeeper");
    w.m.tick_sched_timer(w.cpu(0), &*w.p);
    assert_eq!(w.now().since(j0), 3);
    w.m.set_tick_do_timer_cpu(None);
    w.m.tick_sched_timer(w.cpu(2), &*w.p);
    assert_eq!(w.m.tick_do_timer_cpu(), Some(w.cpu(2)));
    assert_eq!(
        w.warnings(),
        0,
        "without NO_HZ_FULL an orphaned duty is normal"
    );
}

/// `tick_sched_do_timer`: whoever ticks first takes an orphaned duty, a NO_HZ_FULL CPU too;
/// with NO_HZ_FULL running the duty should never have been dropped, so it is a warning.
fn an_orphaned_duty_is_taken_by_anyone_and_warned_about_under_nohz_full<P: Policy>() {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    w.m.set_tick_do_timer_cpu(None);
    let j0 = w.now();
    w.p.set_time_ns(START_NS + 2 * TICK);
    w.m.tick_sched_timer(w.cpu(3), &*w.p);
    assert_eq!(
        w.m.tick_do_timer_cpu(),
        Some(w.cpu(3)),
        "a NO_HZ_FULL CPU takes it"
    );
    assert_eq!(w.now().since(j0), 2, "and keeps time on this very tick");
    assert_eq!(w.warnings(), 1);
    // The owner's next tick is no takeover: silent.
    w.p.set_time_ns(START_NS + 3 * TICK);
    w.m.tick_sched_timer(w.cpu(3), &*w.p);
    assert_eq!(w.now().since(j0), 3);
    assert_eq!(w.warnings(), 1);
    // A housekeeping CPU taking an orphaned duty is warned about too: NO_HZ_FULL is running.
    w.m.set_tick_do_timer_cpu(None);
    w.m.tick_sched_timer(w.cpu(1), &*w.p);
    assert_eq!(w.m.tick_do_timer_cpu(), Some(w.cpu(1)));
    assert_eq!(w.warnings(), 2);
    assert_eq!(w.m.warnings().of_kind(Warning::DoTimerOrphaned), 2);
    assert_eq!(
        w.m.warnings().on_cpu(w.cpu(1)),
        1,
        "counted on the CPU that took it"
    );
}

fn a_stopped_tick_firing_on_idle_counts_an_idle_jiffy_and_is_not_rearmed<P: Policy>() {
    let w = World::<P>::new(4);
    w.idle(2);
    w.m.tick_nohz_idle_enter(w.cpu(2), &*w.p);
    w.p.set_next_timer(w.cpu(2), START_NS + 5 * TICK);
    w.m.tick_nohz_idle_stop_tick(w.cpu(2), &*w.p);
    let before = w.ts(2).idle_jiffies();
    w.p.set_time_ns(START_NS + 5 * TICK);
    w.p.take_events();
    let d = w.m.tick_sched_timer(w.cpu(2), &*w.p);
    assert_eq!(
        d,
        Some(KickDecision::IdleTick),
        "idle_balance set: no exit, no kick"
    );
    assert_eq!(w.ts(2).idle_jiffies(), before.add(1));
    assert_eq!(w.ts(2).next_tick(), 0);
    assert!(
        !w.events()
            .iter()
            .any(|e| matches!(e, Event::ProgramTick { .. }))
    );
    assert_eq!(w.mask(), [2]);
}

/// `timer_interrupt` runs the tick only once the sched timer expired: an early interrupt (a
/// clock-event device on another clock) re-arms the timer for the same expiry and runs no
/// tick, and so does the interrupt of a timer the crate cancelled; the interrupt's entry and
/// exit run all the same.
fn a_timer_interrupt_runs_the_tick_only_once_the_timer_expired<P: Policy>() {
    let w = World::<P>::new(4);
    let c1 = w.cpu(1);
    w.busy(1, 1);
    w.m.cpu_starting(c1, &*w.p);
    let expiry = START_NS + TICK;
    assert_eq!(w.p.tick_expiry(c1), expiry);
    // 1 ns early: re-armed for the same expiry, nothing else.
    w.p.set_time_ns(expiry - 1);
    w.p.take_events();
    let early = w.m.timer_interrupt(c1, &*w.p);
    assert_eq!(early, TimerTick::NotDue);
    assert!(!early.ran() && early.kick().is_none());
    assert_eq!(
        w.events(),
        [Event::ProgramTick {
            cpu: c1,
            expires: expiry
        }]
    );
    assert_eq!(w.p.tick_expiry(c1), expiry, "the same expiry");
    // At the expiry: the tick runs and re-arms one period on.
    w.p.set_time_ns(expiry);
    w.p.take_events();
    assert!(w.m.timer_interrupt(c1, &*w.p).ran());
    assert!(w.events().contains(&Event::ProgramTick {
        cpu: c1,
        expires: expiry + TICK
    }));
    // CPU 2 idles with nothing to wake for: its timer is cancelled. An interrupt of it that
    // slipped through runs no tick.
    let c2 = w.cpu(2);
    w.idle(2);
    w.m.cpu_starting(c2, &*w.p);
    w.m.tick_nohz_idle_enter(c2, &*w.p);
    w.m.tick_nohz_idle_stop_tick(c2, &*w.p);
    assert!(w.ts(2).tick_stopped());
    assert!(w.events().contains(&Event::CancelTick { cpu: c2 }));
    w.p.set_time_ns(expiry + 5 * TICK);
    w.p.take_events();
    let idle_jiffies = w.ts(2).idle_jiffies();
    let cancelled = w.m.timer_interrupt(c2, &*w.p);
    assert_eq!(cancelled, TimerTick::NotDue);
    assert!(!cancelled.ran());
    assert!(w.events().is_empty(), "no re-arm, no tick");
    assert_eq!(w.ts(2).idle_jiffies(), idle_jiffies, "no idle tick counted");
    assert_eq!(w.warnings(), 0);
}

/// A stopped idle tick that still has an event to wake for (its timer programmed, not
/// cancelled) runs the tick when that timer expires: the idle tick, counted as idle time.
fn a_stopped_tick_with_a_wakeup_runs_when_it_expires<P: Policy>() {
    let w = World::<P>::new(4);
    let c2 = w.cpu(2);
    w.idle(2);
    w.m.cpu_starting(c2, &*w.p);
    let wake = START_NS + 20 * TICK;
    w.p.set_next_timer(c2, wake);
    w.m.tick_nohz_idle_enter(c2, &*w.p);
    w.m.tick_nohz_idle_stop_tick(c2, &*w.p);
    assert!(w.ts(2).tick_stopped());
    assert_eq!(w.p.tick_expiry(c2), wake, "programmed for the wakeup");
    w.p.set_time_ns(wake);
    w.p.take_events();
    let idle_jiffies = w.ts(2).idle_jiffies();
    let tick = w.m.timer_interrupt(c2, &*w.p);
    assert!(tick.ran(), "the wakeup's tick ran");
    assert_eq!(
        w.ts(2).idle_jiffies(),
        idle_jiffies.add(1),
        "an idle tick counted"
    );
    assert_eq!(w.warnings(), 0);
}

/// `tick_sched_do_timer`'s stall fallback (`MAX_STALLED_JIFFIES`): the timekeeper is held (in
/// stop-machine, say, or a long VM exit) and its tick does not run, so nobody updates jiffies;
/// a CPU whose tick has seen the same jiffies `MAX_STALLED_JIFFIES` (5) times since it last
/// saw them move updates them itself, and counts again from there.
fn a_held_timekeeper_is_covered_by_a_ticking_cpu<P: Policy>() {
    let w = World::<P>::new(4);
    w.busy(1, 1);
    let j0 = w.now();
    let tick = |k: u64, cpus: &[usize]| {
        w.p.set_time_ns(START_NS + k * TICK);
        for &c in cpus {
            w.m.tick_sched_timer(w.cpu(c), &*w.p);
        }
        w.now().since(j0)
    };
    // CPU 0 keeps time, each period before CPU 1's tick: CPU 1 sees jiffies move every time.
    for k in 1..=3 {
        assert_eq!(tick(k, &[0, 1]), k as usize);
    }
    // CPU 0 is held from here. CPU 1's next four ticks see the jiffies of period 3 again.
    for k in 4..=7 {
        assert_eq!(tick(k, &[1]), 3, "tick {k}: jiffies stalled");
    }
    // The fifth sees them again: CPU 1 updates jiffies, a whole stall's worth at once.
    assert_eq!(
        tick(8, &[1]),
        8,
        "the fifth tick on the same jiffies forces an update"
    );
    assert_eq!(
        w.m.tick_do_timer_cpu(),
        Some(w.cpu(0)),
        "the duty stays where it was"
    );
    // And counts again from there: four more ticks on the new value, then the next update.
    for k in 9..=12 {
        assert_eq!(tick(k, &[1]), 8, "tick {k}");
    }
    assert_eq!(tick(13, &[1]), 13);
    assert_eq!(w.warnings(), 0);
}

/// The stall count is per CPU and starts over with the CPU's life: `cpu_dying` resets it with
/// the rest of `tick_sched` (its `last_tick_jiffies` and `stalled_jiffies` are zeroed).
fn the_stall_count_restarts_with_the_cpu<P: Policy>() {
    let w = World::<P>::new(4);
    w.busy(1, 1);
    w.busy(2, 1);
    let j0 = w.now();
    // CPU 0 held from the start; CPU 1 ticks four times on the boot jiffies, CPU 2 once.
    for k in 1..=4 {
        w.p.set_time_ns(START_NS + k * TICK);
        w.m.tick_sched_timer(w.cpu(1), &*w.p);
    }
    w.m.tick_sched_timer(w.cpu(2), &*w.p);
    assert_eq!(w.now(), j0);
    assert_eq!(w.ts(1).stalled_jiffies(), 3);
    assert_eq!(w.ts(2).stalled_jiffies(), 0, "CPU 2 only began counting");
    assert_eq!(w.ts(1).last_tick_jiffies(), j0);
    // CPU 1 goes down and comes back: it starts counting again.
    w.deactivate(1);
    w.m.cpu_dying(w.cpu(1), &*w.p).unwrap();
    assert_eq!(
        (w.ts(1).stalled_jiffies(), w.ts(1).last_tick_jiffies()),
        (0, nohz::Jiffies::new(0))
    );
}

for_each_policy!(
    a_held_timekeeper_is_covered_by_a_ticking_cpu,
    the_stall_count_restarts_with_the_cpu,
    a_timer_interrupt_runs_the_tick_only_once_the_timer_expired,
    a_periodic_tick_rearms_and_runs_the_scheduler_tick,
    the_timekeeper_updates_jiffies_and_a_free_duty_is_taken,
    an_orphaned_duty_is_taken_by_anyone_and_warned_about_under_nohz_full,
    a_stopped_tick_firing_on_idle_counts_an_idle_jiffy_and_is_not_rearmed,
    a_stopped_tick_with_a_wakeup_runs_when_it_expires,
);
