//! The kernel's scheduler parts the crate does not mirror: the engine's own, one room per
//! mechanism, each file named after its C function and opening with its C source.
//!
//! The crate mirrors the NOHZ bookkeeping around them (the idle mask, the kick, the ILB pass,
//! `nohz.next_balance`, blocked-load flags) and calls into them through the platform's
//! [`Balance`](nohz::platform::Balance) trait, whose impl is in `engine/mod.rs`:
//!
//! - [`topology`]: the scheduling domains and their balancing state (`build_sched_domains`).
//! - [`update_load_avg`]: PELT, each CPU's and each task's utilization and load.
//! - [`select_task_rq_fair`]: where a waking task runs, and the wakeup entry point
//!   (`wake_up`): the waker's record of its wakees (`wake_wide`), then
//!   [`wake_affine`] between the waker's CPU and where the task slept, then
//!   [`select_idle_sibling`], an idle CPU of that cache, its scan limited by
//!   [`update_idle_cpu_scan`] (SIS_UTIL).
//! - [`find_idlest_group`]: where a new task runs, and the fork entry point (`fork`).
//! - [`sched_balance_rq`]: pulling tasks from the busiest CPU of a span (`load_balance`).
//! - [`sched_balance_domains`]: the periodic balance over a CPU's domains, at their
//!   intervals.
//! - [`sched_balance_newidle`]: a CPU about to idle pulls one task.
//! - [`sched_balance_update_blocked_averages`]: blocked load and its decay.
//! - [`costs`]: what each piece of balancing work costs in time, with its source.
//!
//! Placement's state: [`CpuPlace`] per CPU, in one array beside the engine's per-CPU state
//! (a fork reads every CPU of a domain), and [`TaskPlace`] in each task.

mod costs;
mod find_idlest_group;
mod sched_balance_domains;
mod sched_balance_newidle;
mod sched_balance_rq;
mod sched_balance_update_blocked_averages;
mod select_idle_sibling;
mod select_task_rq_fair;
mod topology;
mod update_idle_cpu_scan;
mod update_load_avg;
mod wake_affine;

#[cfg(test)]
mod tests;

pub use costs::BalanceCosts;
pub(super) use sched_balance_newidle::NewidleSt;
pub(super) use topology::Domain;

use select_idle_sibling::LlcShared;
use select_task_rq_fair::Wakee;
use std::cell::Cell;
use update_load_avg::{CpuPelt, TaskPelt};

/// A CPU's placement state.
#[derive(Debug)]
pub(super) struct CpuPlace {
    /// Its run queue's PELT signals.
    pelt: CpuPelt,
    /// `rq->idle_stamp`: when it last began going idle (its newidle balance's start;
    /// `None`: spent by a pull or a wakeup queued here, the kernel's 0). At boot every CPU
    /// counts as gone idle at 0, as a running kernel's idle CPUs all have a stamp by the time
    /// a load forks.
    pub(super) idle_stamp: Cell<Option<u64>>,
    /// The wakee record of its idle task, the waker of an interrupt's wakeup from idle.
    idle_wakee: Cell<Wakee>,
    /// Its cache's shared state, if it is the cache's first CPU.
    llc: LlcShared,
}

impl Default for CpuPlace {
    fn default() -> CpuPlace {
        CpuPlace {
            pelt: CpuPelt::default(),
            idle_stamp: Cell::new(Some(0)),
            idle_wakee: Cell::new(Wakee::default()),
            llc: LlcShared::default(),
        }
    }
}

/// A task's placement state.
#[derive(Debug, Clone)]
pub(super) struct TaskPlace {
    /// Its PELT signals.
    pelt: TaskPelt,
    /// Its record of whom it wakes.
    wakee: Wakee,
    /// `p->recent_used_cpu`.
    recent_used_cpu: usize,
}

impl TaskPlace {
    /// A task made at `now` on `cpu` (its parent's CPU).
    pub(super) fn new(now: u64, cpu: usize) -> TaskPlace {
        TaskPlace {
            pelt: TaskPelt::new(now),
            wakee: Wakee::default(),
            recent_used_cpu: cpu,
        }
    }
}

impl<P: nohz::Policy, const HZ: u32> super::Engine<P, HZ> {
    /// `c` switches to its idle task (`set_next_task_idle`): its cache may have a whole
    /// idle core (`update_idle_core`); its idle stamp was set as its newidle balance began.
    pub(super) fn set_next_task_idle(&self, c: usize) {
        self.update_idle_core(c);
    }
}
