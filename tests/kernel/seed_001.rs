//! Seed 001 end to end: a NO_HZ_FULL CPU stops its tick while running one task, then goes
//! idle. `Patched` registers it in the idle mask (and a kicked ILB balances for it); `Legacy`
//! leaves it invisible.

use nohz::KickOutcome;
use nohz::platform::TickHardware;
use nohz::{Legacy, NohzFlags, Patched, Policy};
use nohz_testing::{Event, START_NS, World};

const TICK: u64 = 1_000_000;

/// CPUs 0-1 housekeeping, 2-3 NO_HZ_FULL; CPU 3 runs one task and its tick stops at irq exit;
/// then the task ends and CPU 3 goes idle through `do_idle`.
fn nohz_full_cpu_goes_idle<P: Policy>() -> World<P> {
    let w = World::<P>::new(4);
    w.nohz_full(2);
    w.nohz_full(3);
    let c3 = w.cpu(3);
    w.busy(3, 1);
    w.p.set_next_timer(c3, START_NS + 100 * TICK);
    // An interrupt on the busy NO_HZ_FULL CPU: on its way out the tick stops.
    w.m.tick_nohz_irq_enter(c3, &*w.p);
    w.m.tick_nohz_irq_exit(c3, &*w.p);
    assert!(w.ts(3).tick_stopped(), "full dynticks while running");
    assert!(
        w.mask().is_empty(),
        "busy: never registered by the full-dynticks stop"
    );
    // The task ends: the idle loop runs once and an interrupt ends it.
    w.idle(3);
    w.p.take_events();
    w.m.do_idle(c3, &*w.p);
    w
}

#[test]
fn patched_makes_the_idle_nohz_full_cpu_visible() {
    let w = nohz_full_cpu_goes_idle::<Patched>();
    assert_eq!(w.mask(), [3]);
    assert!(w.m.rq(w.cpu(3)).nohz_tick_stopped());
    // A busy housekeeping CPU's kick now reaches CPU 3 as ILB... unless it is not housekeeping:
    // find_new_ilb only picks housekeeping CPUs, so the ILB is another idle housekeeping CPU,
    // which balances on CPU 3's behalf.
    w.enter(1);
    w.busy(0, 2);
    let kicked =
        w.m.kick_ilb(w.cpu(0), NohzFlags::STATS | NohzFlags::BALANCE, &*w.p);
    assert_eq!(kicked, KickOutcome::Sent(w.cpu(1)));
    w.m.nohz_csd_ipi(w.cpu(1), &*w.p);
    w.p.take_events();
    w.m.sched_balance_softirq(w.cpu(1), &*w.p);
    assert!(w.events().contains(&Event::BalanceDomains {
        by: w.cpu(1),
        cpu: w.cpu(3),
        idle: nohz::platform::CpuIdleType::Idle
    }));
}

#[test]
fn legacy_leaves_it_invisible() {
    let w = nohz_full_cpu_goes_idle::<Legacy>();
    assert!(
        w.mask().is_empty(),
        "the pre-001 bug: stopped earlier, never registered"
    );
    assert!(w.ts(3).tick_stopped());
    w.enter(1);
    w.busy(0, 2);
    w.m.kick_ilb(w.cpu(0), NohzFlags::STATS | NohzFlags::BALANCE, &*w.p);
    w.m.nohz_csd_ipi(w.cpu(1), &*w.p);
    w.p.take_events();
    w.m.sched_balance_softirq(w.cpu(1), &*w.p);
    assert!(
        !w.events()
            .iter()
            .any(|e| matches!(e, Event::BalanceDomains { cpu, .. } if cpu.index() == 3))
    );
}

/// Where the stop attempt never runs (`can_stop_idle_tick` false) neither policy registers:
/// the exception the seed keeps.
fn blocked_stop_attempt<P: Policy>() -> Vec<usize> {
    let w = World::<P>::new(4);
    w.nohz_full(3);
    let c3 = w.cpu(3);
    w.busy(3, 1);
    w.p.set_next_timer(c3, START_NS + 100 * TICK);
    w.m.tick_nohz_irq_exit(c3, &*w.p);
    assert!(w.ts(3).tick_stopped());
    w.idle(3);
    w.p.set_softirq_pending(c3, nohz::platform::softirq::SCHED);
    w.m.do_idle(c3, &*w.p);
    assert_eq!(w.ts(3).idle_calls(), 0);
    w.mask()
}

#[test]
fn neither_registers_when_the_stop_attempt_never_runs() {
    assert!(blocked_stop_attempt::<Patched>().is_empty());
    assert!(blocked_stop_attempt::<Legacy>().is_empty());
}

/// The exit keeps a NO_HZ_FULL CPU's tick stopped when nothing depends on it, and the CPU stays
/// registered until a busy tick (which does not come): consumers filter with idle_cpu().
#[test]
fn the_full_dynticks_cpu_stays_registered_after_idle_exit() {
    let w = nohz_full_cpu_goes_idle::<Patched>();
    assert!(w.ts(3).tick_stopped(), "still tickless after idle exit");
    assert_eq!(w.mask(), [3]);
    w.busy(3, 1);
    assert!(!w.m.rq(w.cpu(3)).idle_cpu());
    assert_eq!(w.m.find_new_ilb(w.cpu(0)), None);
    assert_eq!(
        TickHardware::tick_expiry(&*w.p, w.cpu(3)),
        START_NS + 100 * TICK
    );
}
