//! Wakeup placement: where a waking task runs.
//!
//! C source: kernel/sched/fair.c (`select_idle_sibling`, as `select_task_rq_fair` calls it for
//! a wakeup).
//!
//! Simplified: the CPU the task slept on if it is idle (or the task is bound to it), else the
//! first idle CPU of that CPU's cache the task may run on, scanning on from it, NO_HZ_FULL CPUs
//! skipped, else where it slept. No wake-affine choice between the waker's CPU and the
//! sleeper's, no idle-core scan, no `SIS_UTIL` limit. A CPU on its way offline is never
//! picked: when the scan finds no idle CPU and the one the task slept on is leaving, it goes
//! to the CPU that takes a leaving CPU's work ([`Engine::fallback`]).

use crate::engine::Engine;
use nohz::Policy;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Where a waking task goes: where it slept if idle, else an idle CPU of that cache
    /// (scanning on from it), else where it slept.
    pub(in crate::engine) fn select_idle_sibling(&self, t: usize) -> usize {
        let (prev, allowed) = {
            let task = &self.tasks.borrow()[t];
            (task.prev, task.allowed.clone())
        };
        let usable = |c: usize| !self.cpus[c].leaving.get();
        if usable(prev) && (allowed.len() == 1 || self.is_idle(prev)) {
            return prev;
        }
        let llc = self.shape.llc_of(prev);
        let n = llc.len();
        (1..n)
            .map(|k| llc.start + (prev - llc.start + k) % n)
            .find(|&c| {
                allowed.contains(&c) && self.is_idle(c) && !self.cpus[c].nohz_full && usable(c)
            })
            .unwrap_or(if usable(prev) {
                prev
            } else {
                self.fallback(prev)
            })
    }
}
