//! The load: one file per kind of workload source (a benchmark's way of making work), each
//! with how it starts at boot and what its timers do when they fire.
//!
//! A workload is described by [`Source`]s (`engine/work.rs`, public: the scenarios build
//! them); this room is the engine's side of each: [`initial`] (tasks present at boot),
//! [`arrivals`] (new tasks arriving at random), [`batches`] (closed-loop batches forked from
//! one CPU, a batched-inference bench) and [`interrupts`] (device interrupts). A new
//! benchmark load adds a `Source` variant and a file here. Every task, whatever its source,
//! then behaves as its [`TaskKind`](super::work::TaskKind) says: the engine's core runs it,
//! blocks it on a timer and wakes it (`engine/mod.rs`).
//!
//! Each source acts through wakeup timers ([`Act`]) armed on a CPU, fired as that CPU's timer
//! interrupt; every draw comes from the run's generator, in the order the events come.

mod arrivals;
mod batches;
mod initial;
mod interrupts;

pub(super) use batches::BatchSt;

use super::work::{Source, gap};
use super::{Act, Engine};
use nohz::Policy;

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// Starts every source at boot, in the workload's order: the initial tasks queued, the
    /// first timer of each other source armed.
    pub(super) fn start_load(&self) {
        for (k, src) in self.workload.sources.iter().enumerate() {
            match src {
                Source::Initial { cpus, n, kind } => self.start_initial(cpus.clone(), *n, *kind),
                Source::Arrivals { cpus, per_sec, .. } => {
                    self.arm_arrival(k, cpus.clone(), *per_sec)
                }
                Source::Batches { on, gap_ns, .. } => self.arm_timer(*on, *gap_ns, Act::Batch(k)),
                Source::Interrupts { cpus, per_sec } => {
                    for c in cpus.clone() {
                        self.arm_device(c, k, *per_sec);
                    }
                }
            }
        }
    }

    /// The time of the next event of a stream of `per_sec` a second on average.
    fn next_of(&self, per_sec: u64) -> u64 {
        let mean = (1_000_000_000 / per_sec.max(1)).max(1);
        self.now() + self.draw(|r| gap(r, mean))
    }
}
