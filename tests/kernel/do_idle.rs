//! `do_idle` and `cpuidle_idle_call`: the order of the idle loop.

use nohz::IdleExit;
use nohz::platform::{KTIME_MAX, SleepLength};
use nohz::{NohzFlags, Policy, TsFlags, Warning};
use nohz_testing::for_each_policy;
use nohz_testing::{Event, Governor, START_NS, World};

const TICK: u64 = 1_000_000;

fn kinds<P: Policy>(w: &World<P>) -> Vec<&'static str> {
    w.events()
        .into_iter()
        .map(|e| match e {
            Event::BlockedAverages { .. } => "decay",
            Event::ProgramTick { .. } => "program",
            Event::CancelTick { .. } => "cancel",
            Event::IdleState { .. } => "idle",
            Event::PollIdle { .. } => "poll",
            Event::IdleDead { .. } => "dead",
            Event::IdleTicks { .. } => "idle-ticks",
            Event::RqClock { .. } => "rq-clock",
            _ => "other",
        })
        .collect()
}

fn newilb_pass_first_then_stop_idle_and_exit<P: Policy>() {
    let w = World::<P>::new(4);
    w.enter(1);
    w.advance(1);
    let c3 = w.cpu(3);
    w.m.rq(c3).set_avg_idle(u64::MAX);
    w.m.sched_balance_newidle(c3, &*w.p);
    w.idle(3);
    w.p.set_next_timer(c3, START_NS + 20 * TICK);
    w.p.take_events();
    assert_eq!(w.m.do_idle(c3, &*w.p), IdleExit::Resched);
    assert_eq!(
        kinds(&w),
        ["decay", "rq-clock", "program", "idle", "program"],
        "STATS pass over the mask (CPU 1: decay, rq clock), stop, idle, restart at exit"
    );
    assert_eq!(w.m.rq(c3).nohz_flags().load(), NohzFlags::empty());
    assert_eq!(w.mask(), [1, 3]);
    assert!(
        !w.ts(3)
            .flags()
            .intersects(TsFlags::INIDLE | TsFlags::STOPPED)
    );
}

fn a_governor_that_keeps_the_tick_retains_it<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_governor(Governor::RetainTick);
    w.idle(2);
    w.p.set_next_timer(w.cpu(2), START_NS + 20 * TICK);
    w.m.do_idle(w.cpu(2), &*w.p);
    assert_eq!(
        w.ts(2).idle_calls(),
        0,
        "retain never reaches the stop path"
    );
    assert!(w.mask().is_empty());
}

fn an_already_stopped_tick_always_goes_through_the_stop_path<P: Policy>() {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    w.busy(3, 1);
    w.p.set_next_timer(w.cpu(3), START_NS + 20 * TICK);
    w.m.tick_nohz_irq_exit(w.cpu(3), &*w.p);
    assert!(w.ts(3).tick_stopped());
    w.idle(3);
    w.p.set_governor(Governor::RetainTick);
    w.m.do_idle(w.cpu(3), &*w.p);
    assert_eq!(w.ts(3).idle_calls(), 1);
    assert_eq!(w.mask().contains(&3), P::ENTER_IDLE_WHENEVER_STOPPED);
}

fn the_poll_path_restarts_a_stopped_tick<P: Policy>() {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    w.busy(3, 1);
    w.p.set_next_timer(w.cpu(3), START_NS + 20 * TICK);
    w.m.tick_nohz_irq_exit(w.cpu(3), &*w.p);
    w.idle(3);
    w.p.set_idle_poll(true);
    w.p.take_events();
    w.m.do_idle(w.cpu(3), &*w.p);
    assert!(kinds(&w).contains(&"poll"));
    assert!(!kinds(&w).contains(&"idle"));
    assert!(w.mask().is_empty(), "polling never registers");
}

fn interrupts_inside_idle_keep_the_loop_going_until_a_reschedule<P: Policy>() {
    let w = std::sync::Arc::new(World::<P>::new(4));
    let c2 = w.cpu(2);
    w.idle(2);
    w.p.set_next_timer(c2, START_NS + 20 * TICK);
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    {
        let (w2, seen) = (std::sync::Arc::downgrade(&w), seen.clone());
        w.p.on_idle(move |cpu| {
            let Some(w) = w2.upgrade() else { return };
            // A device interrupt that wakes nothing, twice; the third wakes a task.
            let n = seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            w.m.tick_nohz_irq_enter(cpu, &*w.p);
            if n == 2 {
                w.p.set_need_resched(cpu, true);
            }
            w.m.tick_nohz_irq_exit(cpu, &*w.p);
        });
    }
    w.m.do_idle(c2, &*w.p);
    assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), 3);
    let ts = w.ts(2);
    assert_eq!((ts.idle_calls(), ts.idle_sleeps()), (3, 3));
    assert_eq!(w.mask(), [2]);
}

fn an_offline_cpu_is_reported_dead_without_stopping_the_tick<P: Policy>() {
    let w = World::<P>::new(4);
    w.idle(2);
    w.m.set_cpu_online(w.cpu(2), false);
    w.p.take_events();
    assert_eq!(w.m.do_idle(w.cpu(2), &*w.p), IdleExit::CpuDead);
    assert_eq!(kinds(&w), ["dead"]);
    assert!(!w.ts(2).tick_stopped());
    assert!(w.ts(2).flags().contains(TsFlags::INIDLE));
}

/// A cpuidle governor asks `tick_nohz_get_sleep_length` from `cpuidle_select`, as menu and
/// teo do: how long from the idle entry to the CPU's next timer if the tick stops, and to its
/// next tick if it is kept. Asking caches the next event, which the stop path then uses.
fn a_governor_gets_the_sleep_length_in_cpuidle_select<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_governor(Governor::SleepLength { stop_from_ns: TICK });
    w.idle(2);
    w.p.set_next_timer(w.cpu(2), START_NS + 20 * TICK);
    w.p.take_events();
    assert_eq!(w.m.do_idle(w.cpu(2), &*w.p), IdleExit::Resched);
    let sleep = SleepLength {
        sleep_length: 20 * TICK,
        delta_next: TICK,
    };
    let events = w.events();
    assert_eq!(
        events[..2],
        [
            Event::SleepLength {
                cpu: w.cpu(2),
                sleep
            },
            Event::ProgramTick {
                cpu: w.cpu(2),
                expires: START_NS + 20 * TICK
            }
        ],
        "the governor's answer, then the stop at the cached event"
    );
    assert_eq!(w.ts(2).idle_calls(), 1);
    assert_eq!(w.mask(), [2]);
    assert_eq!(w.warnings(), 0);
}

/// A timer due within the tick: the tick cannot stop, so the sleep length is the time to the
/// next tick; a governor that keeps the tick drops the cached event (retain), and the idle
/// exit finds none.
fn a_short_sleep_keeps_the_tick<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_governor(Governor::SleepLength {
        stop_from_ns: 2 * TICK,
    });
    w.idle(2);
    w.p.set_next_timer(w.cpu(2), START_NS + TICK / 2);
    w.p.take_events();
    w.m.do_idle(w.cpu(2), &*w.p);
    assert_eq!(
        w.events()[0],
        Event::SleepLength {
            cpu: w.cpu(2),
            sleep: SleepLength {
                sleep_length: TICK,
                delta_next: TICK
            }
        }
    );
    assert_eq!(w.ts(2).idle_calls(), 0, "retained: no stop attempt");
    assert_eq!(w.ts(2).timer_expires_base(), 0);
    assert!(!w.ts(2).tick_stopped() && w.mask().is_empty());
    assert_eq!(w.warnings(), 0);
}

/// The entry point outside the idle section is the kernel's `WARN_ON_ONCE`: counted, and the
/// answer given anyway (the idle entry time is then stale). Run for another CPU, it counts a
/// `WrongCpu` too.
fn the_sleep_length_outside_idle_warns<P: Policy>() {
    let w = World::<P>::new(4);
    w.p.set_next_timer(w.cpu(1), START_NS + 50 * TICK);
    let sleep = w.m.tick_nohz_get_sleep_length(w.cpu(1), &*w.p);
    assert_eq!(
        sleep.sleep_length,
        START_NS + 50 * TICK,
        "from idle entry time 0"
    );
    assert_eq!(w.m.warnings().of_kind(Warning::SleepLengthOutsideIdle), 1);
    w.m.tick_nohz_idle_retain_tick(w.cpu(1));
    w.p.set_this_cpu(Some(w.cpu(0)));
    w.m.tick_nohz_get_sleep_length(w.cpu(1), &*w.p);
    assert_eq!(w.m.warnings().of_kind(Warning::WrongCpu), 1);
}

/// A governor asking again with the tick already stopped (an interrupt that woke nothing):
/// `delta_next` is to the stopped tick's programmed expiry, the next event; with nothing to
/// wake for (the tick cancelled) it is "never".
fn the_sleep_length_with_the_tick_stopped<P: Policy>() {
    let never = KTIME_MAX - START_NS;
    for (next_timer, delta_next) in [(START_NS + 20 * TICK, 20 * TICK), (KTIME_MAX, never)] {
        let w = std::sync::Arc::new(World::<P>::new(4));
        w.p.set_governor(Governor::SleepLength { stop_from_ns: TICK });
        w.idle(2);
        w.p.set_next_timer(w.cpu(2), next_timer);
        {
            let w2 = std::sync::Arc::downgrade(&w);
            w.p.on_idle(move |cpu| {
                let Some(w) = w2.upgrade() else { return };
                // The first idle state: an interrupt that wakes nothing; the second ends it.
                if w.ts(2).idle_calls() > 1 {
                    w.p.set_need_resched(cpu, true);
                }
                w.m.tick_nohz_irq_enter(cpu, &*w.p);
                w.m.tick_nohz_irq_exit(cpu, &*w.p);
            });
        }
        w.p.take_events();
        w.m.do_idle(w.cpu(2), &*w.p);
        let asked: Vec<SleepLength> = w
            .events()
            .into_iter()
            .filter_map(|e| match e {
                Event::SleepLength { sleep, .. } => Some(sleep),
                _ => None,
            })
            .collect();
        assert_eq!(asked.len(), 2, "{next_timer}");
        assert_eq!(
            asked[1].delta_next, delta_next,
            "{next_timer}: the stopped tick"
        );
        assert!(w.ts(2).tick_stopped() || !w.ts(2).flags().contains(TsFlags::INIDLE));
        assert_eq!(w.warnings(), 0);
    }
    // The handle prints as what it is.
    let none = || SleepLength {
        sleep_length: 0,
        delta_next: 0,
    };
    assert_eq!(
        format!("{:?}", nohz::platform::SleepLengthQuery::new(&none)),
        "SleepLengthQuery"
    );
}

for_each_policy!(
    the_sleep_length_with_the_tick_stopped,
    a_governor_gets_the_sleep_length_in_cpuidle_select,
    a_short_sleep_keeps_the_tick,
    the_sleep_length_outside_idle_warns,
    newilb_pass_first_then_stop_idle_and_exit,
    a_governor_that_keeps_the_tick_retains_it,
    an_already_stopped_tick_always_goes_through_the_stop_path,
    the_poll_path_restarts_a_stopped_tick,
    interrupts_inside_idle_keep_the_loop_going_until_a_reschedule,
    an_offline_cpu_is_reported_dead_without_stopping_the_tick,
);
