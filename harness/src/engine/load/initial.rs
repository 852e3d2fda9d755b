//! Tasks present at boot: `n` tasks forked before the first event by parents on a range of
//! CPUs in turn ([`Source::Initial`](crate::engine::work::Source::Initial)), each placed by fork
//! placement from its parent's CPU: a standing population (seed 000's hackbench-like churn,
//! seed 003's SPECjbb-like tasks).

use crate::engine::Engine;
use crate::engine::work::TaskKind;
use nohz::Policy;
use std::ops::Range;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Forks the initial tasks, each from its CPU (that CPU current, as its parent's).
    pub(super) fn start_initial(&self, cpus: Range<usize>, n: usize, kind: TaskKind) {
        for j in 0..n {
            let c = cpus.start + j % cpus.len().max(1);
            self.current.set(Some(c));
            let t = self.new_task(kind, c, None, None);
            self.fork(c, t);
        }
    }
}
