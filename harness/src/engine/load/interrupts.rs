//! Device interrupts: a stream on each CPU of a range, as a network card's queues
//! ([`Source::Interrupts`]); each runs through the crate's interrupt entry and exit (`irq_enter`,
//! irq-time accounting, `irq_exit`) with an empty handler. Seed 003's load.

use crate::engine::work::Source;
use crate::engine::{Act, Engine};
use nohz::Policy;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// An interrupt of source `src` on `c` (its handler: nothing but arming the next).
    pub(in crate::engine) fn device_interrupt(&self, c: usize, src: usize) {
        if let Source::Interrupts { per_sec, .. } = &self.workload.sources[src] {
            self.count(|n| n.device_interrupts += 1);
            self.arm_device(c, src, *per_sec);
        }
    }

    /// Arms the next interrupt of source `src` on `cpu`.
    pub(super) fn arm_device(&self, cpu: usize, src: usize, per_sec: u64) {
        let at = self.next_of(per_sec);
        self.arm_timer(cpu, at, Act::Device(src));
    }
}
