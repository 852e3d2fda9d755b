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
//! interrupt. The open-loop sources, [`arrivals`] and [`interrupts`], are [`Stream`]s: each
//! keeps its own schedule and draws from a generator of its own (and so does each task an
//! arrival makes), so the load they offer is the same under every policy and every balancing
//! cost for a seed, even where an event is handled late on a CPU busy balancing. The other
//! sources, and the engine itself (tick jitter, hotplug), draw from the run's generator in the
//! order the events come.

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
                    for (lane, c) in cpus.clone().enumerate() {
                        self.arm_device(c, k, lane, *per_sec);
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

    /// The next event of stream `lane` of source `src`, `per_sec` a second on average, with
    /// `more` drawn for it from the stream's generator: when to arm its timer, and `more`.
    ///
    /// The event is due a random gap after the previous one was *due*, not after it was
    /// handled: a timer held while its CPU balances (`Engine::spend`) makes that event late,
    /// not every later one. A due time already past is armed at once.
    fn next_of<T>(
        &self,
        src: usize,
        lane: usize,
        per_sec: u64,
        more: impl FnOnce(&mut fastrand::Rng) -> T,
    ) -> (u64, T) {
        let mean = (1_000_000_000 / per_sec.max(1)).max(1);
        let mut streams = self.streams.borrow_mut();
        let s = &mut streams[src][lane];
        s.due += gap(&mut s.rng, mean);
        let more = more(&mut s.rng);
        (s.due.max(self.now()), more)
    }
}

/// Which open-loop streams' events [`Engine::offered`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Offered {
    /// Tasks the arrival sources made.
    Arrivals,
    /// Device interrupts raised.
    Interrupts,
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// An event of stream `lane` of source `src` fired: returns how many it has made, this
    /// one included (its index from 1).
    fn fired(&self, src: usize, lane: usize) -> u64 {
        let mut streams = self.streams.borrow_mut();
        let s = &mut streams[src][lane];
        s.made += 1;
        s.made
    }

    /// The events the `which` streams made over the whole run: the offered load.
    pub(super) fn offered(&self, which: Offered) -> u64 {
        let streams = self.streams.borrow();
        self.workload
            .sources
            .iter()
            .zip(streams.iter())
            .filter(|(src, _)| match which {
                Offered::Arrivals => matches!(src, Source::Arrivals { .. }),
                Offered::Interrupts => matches!(src, Source::Interrupts { .. }),
            })
            .flat_map(|(_, lanes)| lanes.iter().map(|s| s.made))
            .sum()
    }
}

/// An open-loop stream of the load: an arrival source, or one CPU's device interrupts.
#[derive(Debug)]
pub(super) struct Stream {
    /// Its own generator.
    rng: fastrand::Rng,
    /// When its pending event is (or its last was) due.
    due: u64,
    /// Events it made so far (fired; an arrival's task is seeded from its index).
    made: u64,
}

/// The streams of `workload` under `seed`, per source: one for an arrival source, one per CPU
/// for device interrupts, none for the rest. Each generator is seeded from the run's seed and
/// the stream's place, so adding a stream leaves the others' draws alone.
pub(super) fn streams(workload: &super::work::Workload, seed: u64) -> Vec<Vec<Stream>> {
    workload
        .sources
        .iter()
        .enumerate()
        .map(|(k, src)| {
            let lanes = match src {
                Source::Arrivals { .. } => 1,
                Source::Interrupts { cpus, .. } => cpus.len(),
                _ => 0,
            };
            (0..lanes)
                .map(|lane| Stream {
                    rng: fastrand::Rng::with_seed(mix(seed, STREAM, k as u64, lane as u64)),
                    due: 0,
                    made: 0,
                })
                .collect()
        })
        .collect()
}

/// What a derived seed is for: a stream's generator, or an arrival's task's.
const STREAM: u64 = 1;
const TASK: u64 = 2;

/// A seed derived from the run's `seed` for purpose `what` and place `(a, b)`: each word
/// folded in through the SplitMix64 finalizer (Steele, Lea and Flood, "Fast splittable
/// pseudorandom number generators", OOPSLA 2014), so nearby places get unrelated seeds.
fn mix(seed: u64, what: u64, a: u64, b: u64) -> u64 {
    [what, a, b].into_iter().fold(seed, |h, w| {
        let mut z = (h ^ w).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
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
