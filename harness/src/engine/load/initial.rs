//! Tasks present at boot: `n` tasks spread round-robin over a range of CPUs
//! ([`Source::Initial`](crate::engine::work::Source::Initial)), each queued on its CPU before
//! the first event: a standing population (seed 000's hackbench-like churn, seed 003's
//! SPECjbb-like tasks).

use crate::engine::Engine;
use crate::engine::work::TaskKind;
use nohz::Policy;
use std::ops::Range;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Queues the initial tasks, each on its CPU (that CPU current, as a fork there).
    pub(super) fn start_initial(&self, cpus: Range<usize>, n: usize, kind: TaskKind) {
        for j in 0..n {
            let c = cpus.start + j % cpus.len().max(1);
            self.current.set(Some(c));
            let t = self.new_task(kind, c, None);
            self.enqueue(c, t);
        }
    }
}
