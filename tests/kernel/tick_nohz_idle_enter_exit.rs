//! `tick_nohz_idle_enter`, `tick_nohz_idle_exit`, `tick_nohz_restart_sched_tick`,
//! `tick_nohz_idle_restart_tick`.

use nohz::{Policy, TsFlags, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, START_NS, World};

const TICK: u64 = 1_000_000;

fn stop<P: Policy>(w: &World<P>, i: usize) {
    w.idle(i);
    w.m.tick_nohz_idle_enter(w.cpu(i), &*w.p);
    w.p.set_next_timer(w.cpu(i), START_NS + 50 * TICK);
    w.m.tick_nohz_idle_stop_tick(w.cpu(i), &*w.p);
    assert!(w.ts(i).tick_stopped());
}

fn enter_starts_idle_accounting<P: Policy>() {
    let w = World::<P>::new(4);
    w.m.tick_nohz_idle_enter(w.cpu(1), &*w.p);
    let f = w.ts(1).flags();
    assert!(f.contains(TsFlags::INIDLE | TsFlags::IDLE_ACTIVE));
    assert_eq!(w.ts(1).idle_entrytime(), START_NS);
    assert_eq!(w.warnings(), 0);
}

fn enter_with_a_cached_event_warns<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_next_timer(w.cpu(1), START_NS + 50 * TICK);
    w.m.tick_nohz_get_sleep_length(w.cpu(1), &*w.p);
    w.m.tick_nohz_idle_enter(w.cpu(1), &*w.p);
    assert_eq!(w.m.warnings().of_kind(Warning::CachedNextEvent), 1);
    assert!(w.ts(1).flags().contains(TsFlags::INIDLE));
}

fn exit_restarts_the_tick_on_its_phase_and_accounts_idle<P: Policy>() {
    let w = World::<P>::new(4);
    stop(&w, 1);
    let entry = w.ts(1).idle_entrytime();
    w.p.advance_time_ns(7 * TICK + TICK / 2);
    w.p.take_events();
    w.m.tick_nohz_idle_exit(w.cpu(1), &*w.p);
    let ts = w.ts(1);
    assert!(
        !ts.flags()
            .intersects(TsFlags::INIDLE | TsFlags::IDLE_ACTIVE | TsFlags::STOPPED)
    );
    assert_eq!(ts.idle_sleeptime(), 7 * TICK + TICK / 2 + START_NS - entry);
    assert_eq!(ts.next_tick(), 0);
    assert!(!w.p.timer_base_idle(w.cpu(1)));
    assert_eq!(ts.idle_exittime(), w.p.time_ns());
    let now = w.p.time_ns();
    assert_eq!(
        w.events(),
        [
            Event::ProgramTick {
                cpu: w.cpu(1),
                expires: START_NS + 8 * TICK
            },
            Event::IdleTicks {
                cpu: w.cpu(1),
                ticks: 7
            },
        ],
        "re-armed at last_tick + k * TICK after {now}; 7 jiffies idle"
    );
    assert!(w.mask().contains(&1), "idle exit never leaves the mask");
}

fn exit_without_a_stopped_tick_only_stops_accounting<P: Policy>() {
    let w = World::<P>::new(4);
    w.m.tick_nohz_idle_enter(w.cpu(2), &*w.p);
    w.p.advance_time_ns(3 * TICK);
    w.p.take_events();
    w.m.tick_nohz_idle_exit(w.cpu(2), &*w.p);
    assert_eq!(w.ts(2).idle_sleeptime(), 3 * TICK);
    assert!(w.events().is_empty());
}

fn iowait_idle_is_accounted_apart<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_iowait(w.cpu(2), true);
    w.m.tick_nohz_idle_enter(w.cpu(2), &*w.p);
    w.p.advance_time_ns(3 * TICK);
    w.m.tick_nohz_idle_exit(w.cpu(2), &*w.p);
    assert_eq!(
        (w.ts(2).idle_sleeptime(), w.ts(2).iowait_sleeptime()),
        (0, 3 * TICK)
    );
}

fn vtime_cpus_skip_tick_based_idle_accounting<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_vtime_accounting(w.cpu(1), true);
    stop(&w, 1);
    w.p.advance_time_ns(5 * TICK);
    w.p.take_events();
    w.m.tick_nohz_idle_exit(w.cpu(1), &*w.p);
    assert!(
        !w.events()
            .iter()
            .any(|e| matches!(e, Event::IdleTicks { .. }))
    );
}

fn exit_outside_the_idle_section_warns<P: Policy>() {
    let w = World::<P>::new(4);
    w.m.tick_nohz_idle_exit(w.cpu(1), &*w.p);
    assert_eq!(w.m.warnings().of_kind(Warning::IdleExitOutsideIdle), 1);
}

fn the_poll_path_restarts_without_registering<P: Policy>() {
    let w = World::<P>::new(4);
    w.nohz_full(3); // so CPU 3's stop below comes from the full-dynticks path
    w.busy(3, 1);
    w.p.set_next_timer(w.cpu(3), START_NS + 50 * TICK);
    w.m.tick_nohz_irq_exit(w.cpu(3), &*w.p);
    assert!(w.ts(3).tick_stopped());
    w.idle(3);
    w.m.tick_nohz_idle_enter(w.cpu(3), &*w.p);
    w.p.advance_time_ns(2 * TICK);
    w.m.tick_nohz_idle_restart_tick(w.cpu(3), &*w.p);
    assert!(!w.ts(3).tick_stopped());
    assert!(w.mask().is_empty());
    // Nothing to do when the tick runs.
    w.p.take_events();
    w.m.tick_nohz_idle_restart_tick(w.cpu(3), &*w.p);
    assert!(w.events().is_empty());
}

/// `tick_nohz_restart_sched_tick` called directly (as `tick_nohz_idle_restart_tick` does):
/// the tick is running again, re-armed on its old phase, and the timer base is busy.
fn restart_sched_tick_rearms_on_the_old_phase<P: Policy>() {
    let w = World::<P>::new(4);
    stop(&w, 2);
    assert!(w.m.tick_nohz_tick_stopped(w.cpu(2)));
    w.p.advance_time_ns(5 * TICK + 10);
    w.p.take_events();
    w.m.tick_nohz_restart_sched_tick(w.cpu(2), w.p.time_ns(), &*w.p);
    assert!(!w.m.tick_nohz_tick_stopped(w.cpu(2)));
    assert!(!w.p.timer_base_idle(w.cpu(2)));
    assert_eq!(
        w.events(),
        [Event::ProgramTick {
            cpu: w.cpu(2),
            expires: START_NS + 6 * TICK
        }]
    );
}

/// `tick_nohz_idle_retain_tick`: the governor keeps the tick, so the next event computed for
/// the stop is dropped (the next stop attempt computes it again) and nothing is programmed.
fn retain_tick_drops_the_cached_next_event<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(3);
    w.idle(3);
    w.p.set_next_timer(c, START_NS + 30 * TICK);
    w.m.tick_nohz_idle_enter(c, &*w.p);
    assert_ne!(w.m.tick_nohz_next_event(c, &*w.p), 0);
    assert_ne!(w.ts(3).timer_expires_base(), 0, "cached");
    w.p.take_events();
    w.m.tick_nohz_idle_retain_tick(c);
    assert_eq!(w.ts(3).timer_expires_base(), 0, "dropped");
    assert!(!w.m.tick_nohz_tick_stopped(c));
    assert!(w.events().is_empty());
}

/// The switch to NO_HZ mode is idempotent: a CPU activated twice (its tick device set up
/// again) stays in NO_HZ high-resolution mode.
fn activating_nohz_twice_keeps_the_mode<P: Policy>() {
    let w = World::<P>::new(4);
    w.m.tick_nohz_activate(w.cpu(1), true);
    assert_eq!(w.ts(1).flags(), TsFlags::NOHZ | TsFlags::HIGHRES);
}

/// The usual wakeup: an interrupt ends the idle state (its entry paused idle accounting), its
/// exit sees the reschedule and leaves accounting paused, then the idle exit restarts the
/// stopped tick all the same.
fn a_woken_cpu_restarts_its_tick_though_the_interrupt_paused_accounting<P: Policy>() {
    let w = World::<P>::new(4);
    stop(&w, 1);
    let c = w.cpu(1);
    w.p.advance_time_ns(4 * TICK);
    w.m.irq_enter(c, &*w.p);
    w.p.set_need_resched(c, true);
    w.m.irq_exit(c, &*w.p);
    assert!(!w.ts(1).flags().contains(TsFlags::IDLE_ACTIVE));
    w.p.take_events();
    w.m.tick_nohz_idle_exit(c, &*w.p);
    assert!(!w.ts(1).tick_stopped(), "restarted");
    assert!(
        w.events()
            .iter()
            .any(|e| matches!(e, Event::ProgramTick { cpu, .. } if *cpu == c))
    );
}

/// `tick_nohz_account_idle_time` accounts `ticks < LONG_MAX` only: a jiffies distance of
/// `LONG_MAX` or more (a clock that jumped half its range) is not idle time.
fn an_idle_period_of_long_max_jiffies_is_not_accounted<P: Policy>() {
    for (jump, accounted) in [
        (isize::MAX as usize - 1, true),
        (isize::MAX as usize, false),
    ] {
        let w = World::<P>::new(4);
        stop(&w, 2);
        w.advance(jump);
        w.p.take_events();
        w.m.tick_nohz_idle_exit(w.cpu(2), &*w.p);
        let ticks = w
            .events()
            .iter()
            .any(|e| matches!(e, Event::IdleTicks { .. }));
        assert_eq!(ticks, accounted, "a jump of {jump} jiffies");
    }
}

for_each_policy!(
    enter_starts_idle_accounting,
    enter_with_a_cached_event_warns,
    exit_restarts_the_tick_on_its_phase_and_accounts_idle,
    exit_without_a_stopped_tick_only_stops_accounting,
    iowait_idle_is_accounted_apart,
    vtime_cpus_skip_tick_based_idle_accounting,
    exit_outside_the_idle_section_warns,
    the_poll_path_restarts_without_registering,
    restart_sched_tick_rearms_on_the_old_phase,
    retain_tick_drops_the_cached_next_event,
    activating_nohz_twice_keeps_the_mode,
    a_woken_cpu_restarts_its_tick_though_the_interrupt_paused_accounting,
    an_idle_period_of_long_max_jiffies_is_not_accounted,
);
