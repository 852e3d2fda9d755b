//! The reads the scenario's checks make of the crate's state (the idle mask, tick-sched flags,
//! kick bits, warnings, irq time): observations, not part of the embedding.

use crate::hw;
use crate::kernel::{CPUS, KICKS_SENT, Kernel, NR, cpus};
use core::sync::atomic::Ordering::Relaxed;
use nohz::platform::Clock;
use nohz::{CpuId, NohzFlags, Policy, TsFlags, Warning};

fn cpu<P: Policy>(k: &Kernel<P>, i: usize) -> CpuId<NR> {
    k.0.cpu(i)
        .unwrap_or_else(|_| hw::fatal("CPU index out of range"))
}

/// Whether the idle task is current on CPU `i`.
pub fn curr_is_idle<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.rq(cpu(k, i)).curr_is_idle()
}

/// `idle_cpu(i)`: the idle task is current and nothing is runnable or waking there.
pub fn idle_cpu<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.rq(cpu(k, i)).idle_cpu()
}

/// Whether CPU `i`'s tick is stopped.
pub fn tick_stopped<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.tick_sched(cpu(k, i)).tick_stopped()
}

/// Whether CPU `i` is in `nohz.idle_cpus_mask`.
pub fn in_idle_mask<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.nohz_idle_test(cpu(k, i))
}

/// CPU `i` came back in a freshly booted CPU's state: out of the idle mask, no kick bits, a
/// free csd, tick-sched in NO_HZ high-resolution mode and nothing else.
pub fn fresh<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    let (c, m) = (cpu(k, i), k.0);
    let (rq, ts) = (m.rq(c), m.tick_sched(c));
    !in_idle_mask(k, i)
        && rq.nohz_flags().load().is_empty()
        && !rq.csd_busy()
        && ts.flags() == TsFlags::NOHZ | TsFlags::HIGHRES
}

/// CPU `i` is idle, tickless, past its stop attempt; and whether it is in the idle mask.
pub fn idle_tickless<P: Policy>(k: &Kernel<P>, i: usize) -> (bool, bool) {
    let (c, m) = (cpu(k, i), k.0);
    let flags = m.tick_sched(c).flags();
    let tickless = flags.contains(TsFlags::STOPPED | TsFlags::INIDLE)
        && CPUS[i].stop_attempt_ran.load(Relaxed)
        && m.rq(c).idle_cpu();
    (tickless, in_idle_mask(k, i))
}

/// Whether CPU `i`'s periodic balance is due (`time_after_eq(jiffies, rq->next_balance)`).
pub fn balance_due<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.jiffies().is_after_eq(k.0.rq(cpu(k, i)).next_balance())
}

/// Every nohz kick IPI sent has been taken, and with it the ILB pass its `irq_exit` ran.
pub fn no_kick_in_flight() -> bool {
    let handled: u64 = cpus().map(|i| CPUS[i].kicks_handled.load(Relaxed)).sum();
    KICKS_SENT.load(Relaxed) == handled
}

/// CPU `i`'s `tick_sched` idle-call count (the stop attempts so far).
pub fn idle_calls<P: Policy>(k: &Kernel<P>, i: usize) -> u64 {
    k.0.tick_sched(cpu(k, i)).idle_calls()
}

/// The end-of-run counters: (CPUs with kick bits or a busy csd left, all warnings,
/// `CsdWithoutKick` warnings, irq time accounted in ns).
pub fn final_counts<P: Policy>(k: &Kernel<P>) -> (u64, u64, u64, u64) {
    let m = k.0;
    let left = cpus()
        .map(|i| m.rq(cpu(k, i)))
        .filter(|rq| rq.nohz_flags().load().intersects(NohzFlags::KICK_MASK) || rq.csd_busy())
        .count() as u64;
    let w = m.warnings();
    let irq = cpus().map(|i| m.irqtime(cpu(k, i)).hardirq()).sum();
    (
        left,
        w.total(m.nr_cpu_ids()),
        w.of_kind(Warning::CsdWithoutKick),
        irq,
    )
}
