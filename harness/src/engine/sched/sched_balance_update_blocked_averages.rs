//! Blocked load: what a CPU keeps after its tasks block, decaying until it is gone.
//!
//! C source: kernel/sched/fair.c (`sched_balance_update_blocked_averages`, named
//! `update_blocked_averages` before Linux 6.10).
//!
//! Simplified to a counter: a task's run ending on a CPU (it blocks or exits) leaves
//! [`BLOCKED`] there, and each decay halves it: the platform's `update_blocked_averages`,
//! which the crate calls from the balance softirq, an ILB pass and a newidle balance. The
//! crate's bookkeeping of who has blocked load (`rq->has_blocked_load`,
//! `nohz.has_blocked_load`) reads only whether any is left.

use crate::engine::Engine;
use nohz::Policy;

/// Blocked load a CPU is left with when a task blocks there: decay passes until it is gone
/// (each halves it).
pub(in crate::engine) const BLOCKED: u32 = 8;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// The decay of `c`'s blocked load: halves it; whether any is left.
    pub(in crate::engine) fn decay(&self, c: usize) -> bool {
        let b = &self.cpus[c].blocked;
        b.set(b.get() / 2);
        b.get() > 0
    }
}
