//! `tick_nohz_irq_enter` and `tick_nohz_irq_exit`.

use nohz::{Policy, TsFlags};
use nohz_testing::for_each_policy;
use nohz_testing::{START_NS, World};

const TICK: u64 = 1_000_000;

fn an_interrupt_pauses_idle_accounting_and_catches_jiffies_up<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.idle(1);
    w.m.tick_nohz_idle_enter(c, &*w.p);
    w.p.set_next_timer(c, START_NS + 50 * TICK);
    w.m.tick_nohz_idle_stop_tick(c, &*w.p);
    let j0 = w.now();
    // Time passes with nobody keeping jiffies.
    w.p.set_time_ns(START_NS + 4 * TICK);
    w.m.tick_nohz_irq_enter(c, &*w.p);
    assert!(!w.ts(1).flags().contains(TsFlags::IDLE_ACTIVE));
    assert_eq!(w.ts(1).idle_sleeptime(), 4 * TICK);
    assert_eq!(w.ts(1).idle_waketime(), START_NS + 4 * TICK);
    assert_eq!(w.now().since(j0), 4, "jiffies caught up");
    w.m.tick_nohz_irq_exit(c, &*w.p);
    assert!(
        w.ts(1).flags().contains(TsFlags::IDLE_ACTIVE),
        "resumed in the idle section"
    );
    assert_eq!(w.ts(1).idle_entrytime(), START_NS + 4 * TICK);
}

fn nothing_to_do_on_a_busy_ticking_cpu<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(1);
    w.busy(1, 1);
    w.p.set_time_ns(START_NS + 4 * TICK);
    w.m.tick_nohz_irq_enter(c, &*w.p);
    w.m.tick_nohz_irq_exit(c, &*w.p);
    assert_eq!(
        w.ts(1).flags() & !TsFlags::NOHZ & !TsFlags::HIGHRES,
        TsFlags::empty()
    );
    assert_eq!(w.ts(1).idle_waketime(), 0);
}

/// An idle CPU whose governor kept the tick (idle time running, tick not stopped): the
/// interrupt still pauses idle-time accounting.
fn an_interrupt_pauses_idle_accounting_with_the_tick_kept<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(2);
    w.idle(2);
    w.m.tick_nohz_idle_enter(c, &*w.p);
    assert!(w.ts(2).flags().contains(TsFlags::IDLE_ACTIVE));
    assert!(!w.ts(2).tick_stopped());
    w.p.advance_time_ns(3 * TICK);
    w.m.tick_nohz_irq_enter(c, &*w.p);
    assert!(!w.ts(2).flags().contains(TsFlags::IDLE_ACTIVE));
    assert_eq!(w.ts(2).idle_sleeptime(), 3 * TICK);
}

/// A busy NO_HZ_FULL CPU running tickless (tick stopped, no idle time running): the
/// interrupt catches jiffies up before its handler reads them.
fn an_interrupt_on_a_tickless_busy_cpu_catches_jiffies_up<P: Policy>() {
    let w = World::<P>::new(4);
    let c = w.cpu(3);
    w.nohz_full(3);
    w.busy(3, 1);
    w.p.set_next_timer(c, START_NS + 40 * TICK);
    w.m.tick_nohz_full_update_tick(c, &*w.p);
    assert!(w.ts(3).tick_stopped());
    assert!(!w.ts(3).flags().contains(TsFlags::IDLE_ACTIVE));
    let before = w.now();
    w.p.set_time_ns(START_NS + 6 * TICK + 5);
    w.m.tick_nohz_irq_enter(c, &*w.p);
    assert_eq!(w.now(), before.add(6), "caught up");
    assert_eq!(w.ts(3).idle_waketime(), START_NS + 6 * TICK + 5);
}

for_each_policy!(
    an_interrupt_pauses_idle_accounting_and_catches_jiffies_up,
    nothing_to_do_on_a_busy_ticking_cpu,
    an_interrupt_pauses_idle_accounting_with_the_tick_kept,
    an_interrupt_on_a_tickless_busy_cpu_catches_jiffies_up,
);
