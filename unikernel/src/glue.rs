//! The embedding's own helpers: a CPU index as the crate's id, the run-queue facts, and the
//! interrupt dispatch through the crate's driver layer (`timer_interrupt`, `kick_interrupt`,
//! `interrupt`). The kernel makes its other calls (boot in `main.rs`; `cpu_starting`, newidle,
//! `do_idle` and hotplug in `kernel.rs`) inline, where it does what each is about; the reads
//! the scenario's checks make are in [`crate::checks`]. `ci/unikernel-glue.sh` counts all of
//! it: this file, `platform.rs`, and every line elsewhere that calls the machine or this file.

use crate::hw::{self, idt};
use crate::kernel::{self, Kernel, NR, Queue};
use nohz::{CpuId, Policy, RqFacts};

/// CPU `i` as the crate's id.
pub fn cpu<P: Policy>(k: &Kernel<P>, i: usize) -> CpuId<NR> {
    k.0.cpu(i)
        .unwrap_or_else(|_| hw::fatal("CPU index out of range"))
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
        _ => m.interrupt(c, k, || {}),
    }
}

/// CPU `i`'s run queue changed (a task queued, picked or moved; a switch to or from idle),
/// under its lock.
pub fn publish<P: Policy>(k: &Kernel<P>, i: usize, q: &Queue) {
    let n = (q.len() + usize::from(!q.curr_idle)) as u32;
    k.0.update_rq(cpu(k, i), RqFacts::one_class(n, q.curr_idle), k);
}
