//! Closed-loop batches: `n` tasks forked at once from one CPU (placed by fork placement, then
//! spread further by the balancer), the next batch a gap after the last task of the previous
//! one ends ([`Source::Batches`]); a
//! batched-inference bench, seed 001's load. How fast batches finish is the measure
//! (`batches_done`, `batch_ms`).

use crate::engine::work::Source;
use crate::engine::{Act, Engine};
use nohz::Policy;

/// A batch source's state: tasks of the current batch still running, and when it came.
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::engine) struct BatchSt {
    left: usize,
    at: u64,
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// A batch of source `src` comes on `c`: its tasks, all forked from there.
    pub(in crate::engine) fn batch_arrives(&self, c: usize, src: usize) {
        let Source::Batches { n, kind, .. } = &self.workload.sources[src] else {
            return;
        };
        self.batches.borrow_mut()[src] = BatchSt {
            left: *n,
            at: self.now(),
        };
        for _ in 0..*n {
            let t = self.new_task(*kind, c, Some(src), None);
            self.fork(c, t);
        }
    }

    /// A task of batch source `src` ended: the batch is done with its last task, and
    /// the next one comes after the gap.
    pub(in crate::engine) fn batch_task_done(&self, src: usize) {
        let Source::Batches { on, gap_ns, .. } = &self.workload.sources[src] else {
            return;
        };
        let done = {
            let mut b = self.batches.borrow_mut();
            b[src].left -= 1;
            (b[src].left == 0).then_some(b[src].at)
        };
        if let Some(at) = done {
            let took = self.now() - at;
            self.count(|n| {
                n.batches_done += 1;
                n.batch_ns.push(took);
            });
            self.arm_timer(*on, self.now() + gap_ns, Act::Batch(src));
        }
    }
}
