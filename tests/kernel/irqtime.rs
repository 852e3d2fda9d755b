//! irqtime and the `sched_clock_irqtime` key (seed 003).

use nohz::IrqContext;
use nohz::{Legacy, Patched, Policy};
use nohz_testing::for_each_policy;
use nohz_testing::{START_NS, TestSleepable, World};

fn accounting_charges_the_context_that_ended<P: Policy>() {
    let w = World::<P>::new(2);
    let c = w.cpu(1);
    w.m.enable_sched_clock_irqtime();
    assert!(w.m.irqtime_enabled());
    w.m.irqtime_account_irq(c, IrqContext::Task, 100); // hardirq entry: task time ends
    w.m.irqtime_account_irq(c, IrqContext::Hardirq, 130); // exit: 30 ns of hardirq
    w.m.irqtime_account_irq(c, IrqContext::Task, 200);
    w.m.irqtime_account_irq(
        c,
        IrqContext::Softirq {
            in_ksoftirqd: false,
        },
        250,
    );
    w.m.irqtime_account_irq(c, IrqContext::Softirq { in_ksoftirqd: true }, 400);
    let t = w.m.irqtime(c);
    assert_eq!(
        (t.hardirq(), t.softirq(), t.total(), t.tick_delta()),
        (30, 50, 80, 80)
    );
    assert_eq!(t.irq_start_time(), 400);
    assert_eq!(w.m.irqtime(w.cpu(0)).total(), 0);
}

fn disabled_irqtime_accounts_nothing<P: Policy>() {
    let w = World::<P>::new(2);
    let c = w.cpu(1);
    assert!(!w.m.irqtime_enabled(), "off until a clock registers");
    w.m.irqtime_account_irq(c, IrqContext::Hardirq, 130);
    assert_eq!(w.m.irqtime(c).total(), 0);
    assert_eq!(w.m.irqtime(c).irq_start_time(), 0);
}

fn enable_and_disable_are_idempotent_and_silent<P: Policy>() {
    let w = World::<P>::new(2);
    w.m.enable_sched_clock_irqtime();
    w.m.enable_sched_clock_irqtime();
    assert!(w.m.irqtime_enabled());
    w.m.disable_sched_clock_irqtime(&TestSleepable);
    w.m.disable_sched_clock_irqtime(&TestSleepable);
    assert!(!w.m.irqtime_enabled());
    assert_eq!(w.warnings(), 0);
}

fn the_two_disable_paths<P: Policy>() {
    let w = World::<P>::new(2);
    w.m.enable_sched_clock_irqtime();
    w.m.sched_clock_init_late(true, &TestSleepable);
    assert!(w.m.irqtime_enabled(), "a stable clock keeps irqtime");
    w.m.sched_clock_init_late(false, &TestSleepable);
    assert!(
        !w.m.irqtime_enabled(),
        "unstable before late init: disabled there"
    );
    w.m.enable_sched_clock_irqtime();
    w.m.sched_clock_work(&TestSleepable);
    assert!(
        !w.m.irqtime_enabled(),
        "the unstable-clock work disables it"
    );
}

/// The key turns on while a CPU is inside a handler: the handler's exit is that CPU's first
/// accounting call, and charges everything since its `irq_start_time` to hardirq time: since 0
/// for a CPU that never accounted (here the whole uptime), or since its last call before a
/// disable. The kernel's `irqtime_account_irq` does the same (enabling the key leaves
/// `irq_start_time` alone), and the crate mirrors it; kernels enable the key at boot, before
/// interrupts run.
fn a_handler_running_as_the_key_turns_on_is_charged_since_irq_start_time<P: Policy>() {
    let w = World::<P>::new(2);
    let c = w.cpu(1);
    let t = w.m.irqtime(c);
    w.p.set_time_ns(START_NS + 5_000);
    w.m.irq_enter(c, &*w.p);
    w.m.enable_sched_clock_irqtime();
    w.p.set_time_ns(START_NS + 5_100);
    w.m.irq_exit(c, &*w.p);
    assert_eq!(
        t.hardirq(),
        START_NS + 5_100,
        "since time 0, not the 100 ns in the handler"
    );
    assert_eq!(t.irq_start_time(), START_NS + 5_100);
    // From then on, each handler its own time.
    w.p.set_time_ns(START_NS + 6_000);
    w.m.irq_enter(c, &*w.p);
    w.p.set_time_ns(START_NS + 6_030);
    w.m.irq_exit(c, &*w.p);
    assert_eq!(t.hardirq(), START_NS + 5_130);
    // Off and on again inside a handler: charged since the last call before the disable.
    w.m.disable_sched_clock_irqtime(&TestSleepable);
    w.p.set_time_ns(START_NS + 9_000);
    w.m.irq_enter(c, &*w.p);
    w.m.enable_sched_clock_irqtime();
    w.p.set_time_ns(START_NS + 9_010);
    w.m.irq_exit(c, &*w.p);
    assert_eq!(t.hardirq(), START_NS + 5_130 + 2_980);
    assert_eq!(t.softirq(), 0);
    assert_eq!(w.warnings(), 0);
}

for_each_policy!(
    a_handler_running_as_the_key_turns_on_is_charged_since_irq_start_time,
    accounting_charges_the_context_that_ended,
    disabled_irqtime_accounts_nothing,
    enable_and_disable_are_idempotent_and_silent,
    the_two_disable_paths,
);

/// `Patched` keeps the flag in a static key on its own line; `Legacy` in the `nohz` line.
#[test]
fn patched_uses_the_key_legacy_the_flag_in_the_nohz_line() {
    let p = World::<Patched>::new(2);
    p.m.enable_sched_clock_irqtime();
    assert_eq!(p.m.sched_clock_irqtime().count(), 1);
    let l = World::<Legacy>::new(2);
    l.m.enable_sched_clock_irqtime();
    assert_eq!(
        l.m.sched_clock_irqtime().count(),
        0,
        "Legacy never touches the key"
    );
    assert!(l.m.irqtime_enabled());
}
