//! Every call a kernel makes into `nohz`, besides the trait impls of [`crate::platform`]:
//! boot, each CPU starting, the interrupt path through the driver layer (`timer_interrupt`,
//! `kick_interrupt`, `irq_enter`/`irq_exit`), the run-queue counts, newidle and `do_idle`,
//! hotplug. The reads the scenario's checks make are in [`crate::checks`]; this file and
//! `platform.rs` are the glue whose lines `ci/unikernel.sh` counts.

use crate::hw::{self, idt};
use crate::kernel::{self, Kernel, NR, Queue};
use nohz::{CpuId, IdleExit, Policy, RqFacts};

fn cpu<P: Policy>(k: &Kernel<P>, i: usize) -> CpuId<NR> {
    k.0.cpu(i)
        .unwrap_or_else(|_| hw::fatal("CPU index out of range"))
}

/// Boot, on CPU 0: `nr_cpu_ids`, the NO_HZ_FULL CPUs out of housekeeping, irqtime.
pub fn boot<P: Policy>(k: &Kernel<P>, n: usize, full: &[usize]) {
    k.0.init(n, 0, k)
        .unwrap_or_else(|_| hw::fatal("Machine::init"));
    k.0.tick_nohz_full_setup(full.iter().copied())
        .unwrap_or_else(|_| hw::fatal("nohz_full"));
    k.0.enable_sched_clock_irqtime();
}

/// CPU `i` starts (boot, or back from hotplug), on itself: online, NO_HZ, the first tick.
pub fn cpu_starting<P: Policy>(k: &Kernel<P>, i: usize) {
    k.0.cpu_starting(cpu(k, i), k);
}

/// One interrupt, through the crate's driver layer. A CPU the crate has taken offline (parked
/// after `cpu_dying`) takes wakeups only.
pub fn interrupt<P: Policy>(k: &Kernel<P>, vector: u8) {
    let (i, m) = (hw::cpu_index(), k.0);
    kernel::irq_enter(i);
    let c = cpu(k, i);
    match vector {
        _ if !m.cpu_online(c) => {}
        idt::TIMER_VECTOR if m.timer_interrupt(c, k).ran() => kernel::on_tick(k, i),
        idt::TIMER_VECTOR => {}
        idt::KICK_VECTOR => kernel::kick_handled(i, m.kick_interrupt(c, k).is_some()),
        _ => {
            m.irq_enter(c, k);
            m.irq_exit(c, k);
        }
    }
}

/// CPU `i`'s run queue changed (a task queued, picked or moved; a switch to or from idle),
/// under its lock.
pub fn publish<P: Policy>(k: &Kernel<P>, i: usize, q: &Queue) {
    let n = (q.len() + usize::from(!q.curr_idle)) as u32;
    k.0.update_rq(cpu(k, i), RqFacts::one_class(n, q.curr_idle), k);
}

/// `sched_balance_newidle` on CPU `i`: whether a task was pulled.
pub fn newidle<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.sched_balance_newidle(cpu(k, i), k)
}

/// The idle task's loop on CPU `i`, until a reschedule: whether it ended with one.
pub fn idle<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.do_idle(cpu(k, i), k) == IdleExit::Resched
}

/// CPU `i` goes down, on itself (its hotplug thread): `sched_cpu_deactivate` (process context,
/// interrupts on). Whether it was taken.
pub fn deactivate<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    hw::with_interrupts(|| k.0.sched_cpu_deactivate(cpu(k, i), k)).is_ok()
}

/// Then, still on itself with interrupts off: `cpu_dying`, which takes it offline.
pub fn die<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    k.0.cpu_dying(cpu(k, i), k).is_ok()
}

/// CPU `i` comes back, on itself: online with its tick set up, then activated.
pub fn cpu_up<P: Policy>(k: &Kernel<P>, i: usize) -> bool {
    let c = cpu(k, i);
    k.0.cpu_starting(c, k);
    hw::with_interrupts(|| k.0.sched_cpu_activate(c, k)).is_ok()
}
