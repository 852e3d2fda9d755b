//! The load: one file per kind of workload source (a benchmark's way of making work), each
//! with how it starts at boot and what its timers do when they fire.
//!
//! A workload is described by [`Source`]s (`engine/work.rs`, public: the scenarios build
//! them); this room is the engine's side of each: [`initial`] (tasks present at boot),
//! [`arrivals`] (new tasks arriving at random), [`batches`] (closed-loop batches forked from
//! one CPU, a batched-inference bench), [`interrupts`] (device interrupts), and the seeds'
//! benchmarks, whose tasks synchronize: [`llama`] (`llama-batched-bench`: a thread team
//! meeting at a barrier after every graph node) and [`hackbench`] (senders and receivers
//! over buffers that fill and empty). A new benchmark load adds a `Source` variant and a file
//! here. A task of the first four behaves as its [`TaskKind`](super::work::TaskKind) says: the
//! engine's core runs it, blocks it on a timer and wakes it (`engine/mod.rs`); a task of a
//! synchronizing load asks its load, at the end of each stretch of work, whether to run on,
//! block on the load's object or exit (`engine/block.rs`), and is woken by another task.
//!
//! Each source acts through wakeup timers ([`Act`]) armed on a CPU, fired as that CPU's timer
//! interrupt; every draw comes from the run's generator, in the order the events come.

mod arrivals;
mod batches;
mod hackbench;
mod initial;
mod interrupts;
mod llama;

pub(super) use batches::BatchSt;

use super::block::Step;
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
                Source::Llama(l) => self.start_llama(k, *l),
                Source::Hackbench(h) => self.start_hackbench(k, *h),
            }
        }
    }

    /// A task of synchronizing load `src` ended a stretch of its work on `c`: what it does next.
    pub(super) fn load_step(&self, c: usize, t: usize, src: usize) -> Step {
        match &self.workload.sources[src] {
            Source::Llama(l) => self.llama_step(c, t, src, *l),
            Source::Hackbench(h) => self.hackbench_step(c, t, src, *h),
            _ => Step::Exit,
        }
    }

    /// The time of the next event of a stream of `per_sec` a second on average.
    fn next_of(&self, per_sec: u64) -> u64 {
        let mean = (1_000_000_000 / per_sec.max(1)).max(1);
        self.now() + self.draw(|r| gap(r, mean))
    }
}

/// A synchronizing load's state, per source (none for the others).
#[derive(Debug)]
pub(in crate::engine) enum SyncSt {
    /// Not a synchronizing load.
    None,
    /// A llama team.
    Llama(llama::Team),
    /// hackbench's groups.
    Hackbench(hackbench::Groups),
}
