//! Device interrupts: a stream on each CPU of a range, as a network card's queues
//! ([`Source::Interrupts`]); each runs through the crate's interrupt entry and exit (`irq_enter`,
//! irq-time accounting, `irq_exit`) with an empty handler. Seed 003's load.

use crate::engine::work::Source;
use crate::engine::{Act, Engine};
use nohz::Policy;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// An interrupt of stream `lane` of source `src` (its handler: nothing but arming the
    /// next).
    pub(in crate::engine) fn device_interrupt(&self, src: usize, lane: usize) {
        if let Source::Interrupts { cpus, per_sec } = &self.workload.sources[src] {
            self.fired(src, lane);
            self.arm_device(cpus.start + lane, src, lane, *per_sec);
        }
    }

    /// Arms the next interrupt of stream `lane` of source `src`, on its CPU `cpu` (while that
    /// CPU is offline, the timer goes where its others go: `hotplug.rs`).
    pub(super) fn arm_device(&self, cpu: usize, src: usize, lane: usize, per_sec: u64) {
        let (at, ()) = self.next_of(src, lane, per_sec, |_| ());
        self.arm_timer(cpu, at, Act::Device(src, lane));
    }
}
