//! New tasks arriving at random: a stream (uniform gaps, a mean rate) over a range of CPUs
//! ([`Source::Arrivals`]), each forked from the CPU a timer interrupt comes on and placed from
//! there as a new task (`find_idlest_group`): the frontier's load.

use super::{TASK, mix};
use crate::engine::work::Source;
use crate::engine::{Act, Engine};
use nohz::Policy;
use std::ops::Range;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// An arrival of source `src` on `c`: a new task forked from `c`, and the next arrival
    /// armed.
    pub(in crate::engine) fn arrive(&self, c: usize, src: usize) {
        let Source::Arrivals {
            cpus,
            per_sec,
            kind,
        } = &self.workload.sources[src]
        else {
            return;
        };
        let made = self.fired(src, 0);
        // The task's lengths come from its own generator: the same task under every policy.
        let own = fastrand::Rng::with_seed(mix(self.seed, TASK, src as u64, made));
        let t = self.new_task(*kind, c, None, Some(own));
        self.fork(c, t);
        self.arm_arrival(src, cpus.clone(), *per_sec);
    }

    /// Arms the next arrival of source `src`, on a random CPU of `cpus` (both drawn from the
    /// source's stream).
    pub(super) fn arm_arrival(&self, src: usize, cpus: Range<usize>, per_sec: u64) {
        let (at, cpu) = self.next_of(src, 0, per_sec, |r| r.usize(cpus.start..cpus.end));
        self.arm_timer(cpu, at, Act::Arrive(src));
    }
}
