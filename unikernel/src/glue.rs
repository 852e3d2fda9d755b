//! Every call a kernel makes into `nohz`, besides the trait impls of [`crate::platform`]:
//! boot, each CPU starting, the interrupt path through the driver layer (`timer_interrupt`,
//! `kick_interrupt`, `irq_enter`/`irq_exit`), the run-queue counts, newidle and `do_idle`,
//! hotplug. The reads the scenario's checks make are in [`crate::checks`]; this file and
//! `platform.rs` are the glue whose lines `ci/unikernel.sh` counts.

use crate::hw::{self, idt};
use crate::kernel::{self, Kernel, NR};
use nohz::{CpuId, IdleExit, Policy};

fn cpu<P: Policy>(k: &Kernel<P>, i: usize) -> CpuId<NR> {
    k.0.cpu(i)
        .unwrap_or_else(|_| hw::fatal("CPU index out of range"))
}

/// Boot, on CPU 0: `nr_cpu_ids`, the NO_HZ_FULL CPUs out of housekeeping, irqtime.
pub fn boot<P: Policy>(k: &Kernel<P>, n: usize, full: &[usize]) {
    k.0.init(n, 0, k)
        .unwrap_or_else(|_| hw::fatal("Machine::init"));
    for &i in full {
        k.0.nohz_full().set(cpu(k, i));
        k.0.housekeeping().clear(cpu(k, i));
    }
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
        idt::TIMER_VECTOR if kernel::tick_due(i) => {
            m.timer_interrupt(c, k);
            kernel::on_tick(k, i);
        }
        idt::KICK_VECTOR => kernel::kick_handled(i, m.kick_interrupt(c, k).is_some()),
        _ => {
            m.irq_enter(c, k);
            m.irq_exit(c, k);
        }
    }
}

/// CPU `i` switches to its idle task (`idle`) or to a task.
pub fn switch_to<P: Policy>(k: &Kernel<P>, i: usize, idle: bool) {
    k.0.rq(cpu(k, i)).set_curr_is_idle(idle);
}

/// CPU `i`'s run queue holds `queued` tasks besides the one running (if any): the counts the
/// kick reads, and a NO_HZ_FULL CPU's tick dependency.
pub fn publish<P: Policy>(k: &Kernel<P>, i: usize, queued: usize) {
    let c = cpu(k, i);
    let n = (queued + usize::from(!k.0.rq(c).curr_is_idle())) as u32;
    k.0.update_nr_running(c, n, n, k);
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
