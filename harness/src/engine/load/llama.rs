//! `llama-batched-bench` generating tokens on ggml's CPU backend built with OpenMP
//! ([`Source::Llama`](crate::engine::work::Source::Llama)): seed 001's llama load.
//!
//! Sources: llama.cpp `tools/batched-bench` (each generation step decodes one batch and
//! synchronizes), ggml-cpu's `ggml_graph_compute_thread` (every thread of the team runs its
//! slice of each graph node, then `ggml_barrier`, which with OpenMP is `#pragma omp
//! barrier`), libgomp's `do_wait`/`do_spin` (config/linux/wait.h: spin `gomp_spin_count_var`
//! times, or `gomp_throttled_spin_count_var` when more threads are managed than CPUs are
//! available, then `futex_wait`; the round's last arrival bumps the generation and
//! `futex_wake`s the sleepers).
//!
//! The model: a team of `threads` tasks, the main thread (the benchmark's own, thread 0 of the
//! team) on the benchmark's CPU and `threads - 1` workers it forks at start. The team moves
//! through barrier rounds: per decode, `nodes` rounds in which each thread runs `slice_ns`,
//! then one round (the team's dock between two parallel regions) in which the main thread
//! does its own work between decodes (`main_ns`) while the workers, with nothing to do, wait
//! for it. A thread that ends its round's work arrives at the barrier; the round's last
//! arrival releases it and goes straight on to its next round's work; the others spin
//! (running, [`Step::Run`] of the spin time) and then sleep ([`Step::Block`]). The release cuts
//! the spinners' spins short and wakes the sleepers (not a sync wakeup: `futex_wake`), each
//! with its next round's work. A decode ends when its last node's round is released.
//!
//! Simplified: every node's work is the same and split in equal slices (ggml's static split
//! of a decode's matrix-vector products; its dynamic chunking is not modelled); the
//! end-of-graph barrier and the parallel region's closing barrier are one round; waking takes
//! no time beyond the engine's IPI.

use super::SyncSt;
use crate::engine::Engine;
use crate::engine::block::Step;
use crate::engine::work::Llama;
use nohz::Policy;
use std::collections::BTreeMap;

/// A barrier of `parties` threads, in rounds: a round is released by its last arrival.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Barrier {
    parties: usize,
    arrived: usize,
    /// Rounds released so far (libgomp's generation).
    released: u64,
}

impl Barrier {
    /// A barrier of `parties` whose round `round` is the current one.
    pub(super) fn new(parties: usize, round: u64) -> Self {
        Barrier {
            parties: parties.max(1),
            arrived: 0,
            released: round,
        }
    }

    /// One thread arrives at the current round; true when it is the round's last, which
    /// releases the round (the next one becomes current).
    pub(super) fn arrive(&mut self) -> bool {
        self.arrived += 1;
        if self.arrived < self.parties {
            return false;
        }
        self.arrived = 0;
        self.released += 1;
        true
    }

    /// Round `round` has been released.
    pub(super) fn passed(&self, round: u64) -> bool {
        self.released > round
    }
}

/// Where a thread of the team is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Running its round's work (or about to).
    Working,
    /// Arrived, spinning on its CPU.
    Spinning,
    /// Arrived, asleep.
    Sleeping,
}

/// What a step of the team asks of the engine, done once the team's state is put down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    /// Wake this sleeping task, its next stretch this long.
    Wake(usize, u64),
    /// Cut this spinning task's spin short.
    Cut(usize),
}

/// A llama team's state.
#[derive(Debug)]
pub(in crate::engine) struct Team {
    /// Thread `i`'s task (0: the main thread).
    tasks: Vec<usize>,
    /// Each task's thread index.
    index: BTreeMap<usize, usize>,
    /// The round each thread is in (its work, or its wait at the round's barrier).
    round: Vec<u64>,
    wait: Vec<Wait>,
    barrier: Barrier,
    /// A waiting thread's spin (the throttled one when the team outnumbers its CPUs).
    spin_ns: u64,
    /// When the decode under way began (its first node's round).
    decode_at: Option<u64>,
}

/// Thread `thread`'s work in round `round`: a node's slice, or between decodes the main
/// thread's own work (the workers have none).
fn work(l: &Llama, thread: usize, round: u64) -> u64 {
    let nodes = u64::from(l.nodes.max(1));
    if round % (nodes + 1) < nodes {
        l.slice_ns.max(1)
    } else if thread == 0 {
        l.main_ns
    } else {
        0
    }
}

impl Team {
    /// Thread `i` starts its current round: its work, or, with none, its arrival.
    fn begin(&mut self, i: usize, l: &Llama, acts: &mut Vec<Act>, released: &mut u64) -> Step {
        let w = work(l, i, self.round[i]);
        self.wait[i] = Wait::Working;
        if w > 0 {
            return Step::Run(w);
        }
        self.arrive(i, l, acts, released)
    }

    /// Thread `i` arrives at its round's barrier: the last releases it and goes on; the
    /// others spin, or sleep at once with no spin.
    fn arrive(&mut self, i: usize, l: &Llama, acts: &mut Vec<Act>, released: &mut u64) -> Step {
        if !self.barrier.arrive() {
            if self.spin_ns > 0 {
                self.wait[i] = Wait::Spinning;
                return Step::Run(self.spin_ns);
            }
            self.wait[i] = Wait::Sleeping;
            return Step::Block;
        }
        *released += 1;
        for j in (0..self.tasks.len()).filter(|&j| j != i) {
            match self.wait[j] {
                Wait::Spinning => acts.push(Act::Cut(self.tasks[j])),
                Wait::Sleeping => {
                    self.round[j] += 1;
                    self.wait[j] = Wait::Working;
                    acts.push(Act::Wake(self.tasks[j], work(l, j, self.round[j])));
                }
                Wait::Working => {
                    unreachable!("a round is released with thread {j} still working")
                }
            }
        }
        self.round[i] += 1;
        self.begin(i, l, acts, released)
    }

    /// Thread `i` ended a stretch: its round's work (it arrives), or its spin (released, it
    /// goes on; not yet, it sleeps).
    fn step(&mut self, i: usize, l: &Llama, acts: &mut Vec<Act>, released: &mut u64) -> Step {
        match self.wait[i] {
            Wait::Working => self.arrive(i, l, acts, released),
            Wait::Spinning if self.barrier.passed(self.round[i]) => {
                self.round[i] += 1;
                self.begin(i, l, acts, released)
            }
            Wait::Spinning => {
                self.wait[i] = Wait::Sleeping;
                Step::Block
            }
            Wait::Sleeping => unreachable!("thread {i} ran while asleep at the barrier"),
        }
    }
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// The team at boot: the main thread on its CPU, about to do its work before the first
    /// decode; the workers forked from there, each arriving at the team's dock when it first
    /// runs.
    pub(super) fn start_llama(&self, src: usize, l: Llama) {
        let threads = l.threads.max(1);
        let cpus = self.shape.cpuset(l.on).len();
        let spin_ns = if threads > cpus {
            l.throttled_spin_ns
        } else {
            l.spin_ns
        };
        self.current.set(Some(l.on));
        let first = u64::from(l.nodes.max(1));
        let main = self.spawn(src, l.on, l.main_ns);
        self.enqueue(l.on, main);
        let mut tasks = vec![main];
        for _ in 1..threads {
            let w = self.spawn(src, l.on, 0);
            self.fork(l.on, w);
            tasks.push(w);
        }
        let index = tasks.iter().enumerate().map(|(i, &t)| (t, i)).collect();
        self.syncs.borrow_mut()[src] = SyncSt::Llama(Team {
            index,
            round: vec![first; threads],
            wait: vec![Wait::Working; threads],
            barrier: Barrier::new(threads, first),
            spin_ns,
            decode_at: None,
            tasks,
        });
    }

    /// Thread task `t` of the team of source `src` ended a stretch on `c`.
    pub(super) fn llama_step(&self, c: usize, t: usize, src: usize, l: Llama) -> Step {
        let mut acts = Vec::new();
        let mut released = 0;
        let nodes = u64::from(l.nodes.max(1));
        let mut decoded = Vec::new();
        let step = {
            let mut syncs = self.syncs.borrow_mut();
            let SyncSt::Llama(team) = &mut syncs[src] else {
                return Step::Exit;
            };
            let i = team.index[&t];
            let before = team.barrier.released;
            let step = team.step(i, &l, &mut acts, &mut released);
            // A decode begins when the dock's round is released, ends when its last node's is.
            for round in before..team.barrier.released {
                match round % (nodes + 1) {
                    r if r == nodes => team.decode_at = Some(self.now()),
                    r if r == nodes - 1 => decoded.extend(team.decode_at.take()),
                    _ => {}
                }
            }
            step
        };
        let now = self.now();
        self.count(|n| {
            n.work_done += released as f64 / (nodes + 1) as f64;
            for at in &decoded {
                n.batches_done += 1;
                n.batch_ns.push(now - at);
            }
        });
        for act in acts {
            match act {
                Act::Wake(w, left) => {
                    self.set_left(w, left);
                    self.wake_up(w, c, false);
                }
                Act::Cut(w) => self.cut_short(w),
            }
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_barrier_releases_exactly_at_its_last_arrival() {
        let mut b = Barrier::new(3, 10);
        assert!(!b.passed(10));
        assert!(!b.arrive());
        assert!(!b.arrive());
        assert!(!b.passed(10), "two of three arrived");
        assert!(b.arrive(), "the third is the last");
        assert!(b.passed(10) && !b.passed(11));
        // The next round starts empty.
        assert!(!b.arrive());
        assert!(!b.arrive());
        assert!(b.arrive());
        assert!(b.passed(11));
    }

    fn team(threads: usize, spin_ns: u64) -> Team {
        Team {
            tasks: (100..100 + threads).collect(),
            index: (0..threads).map(|i| (100 + i, i)).collect(),
            round: vec![0; threads],
            wait: vec![Wait::Working; threads],
            barrier: Barrier::new(threads, 0),
            spin_ns,
            decode_at: None,
        }
    }

    const L: Llama = Llama {
        on: 0,
        threads: 3,
        nodes: 2,
        slice_ns: 1_000,
        main_ns: 500,
        spin_ns: 0,
        throttled_spin_ns: 0,
    };

    #[test]
    fn the_last_arrival_wakes_the_sleepers_and_cuts_the_spins_short() {
        let mut t = team(3, 0);
        let (mut acts, mut released) = (Vec::new(), 0);
        // Threads 0 and 1 arrive and sleep (no spin); thread 2's arrival releases round 0.
        assert_eq!(t.step(0, &L, &mut acts, &mut released), Step::Block);
        assert_eq!(t.step(1, &L, &mut acts, &mut released), Step::Block);
        assert_eq!(released, 0);
        assert!(acts.is_empty());
        assert_eq!(t.step(2, &L, &mut acts, &mut released), Step::Run(1_000));
        assert_eq!(released, 1);
        assert_eq!(acts, [Act::Wake(100, 1_000), Act::Wake(101, 1_000)]);
        assert_eq!(t.round, [1, 1, 1]);
        // With a spin: the arrivals spin; the release cuts them short, and each goes on.
        let mut t = team(3, 7_000);
        let (mut acts, mut released) = (Vec::new(), 0);
        assert_eq!(t.step(0, &L, &mut acts, &mut released), Step::Run(7_000));
        assert_eq!(t.step(1, &L, &mut acts, &mut released), Step::Run(7_000));
        assert_eq!(t.step(2, &L, &mut acts, &mut released), Step::Run(1_000));
        assert_eq!(acts, [Act::Cut(100), Act::Cut(101)]);
        assert_eq!(t.step(0, &L, &mut acts, &mut released), Step::Run(1_000));
        assert_eq!(t.round[0], 1);
    }

    #[test]
    fn a_spin_that_ends_unreleased_sleeps() {
        let mut t = team(2, 7_000);
        let (mut acts, mut released) = (Vec::new(), 0);
        assert_eq!(t.step(0, &L, &mut acts, &mut released), Step::Run(7_000));
        // The spin ran out before thread 1 arrived.
        assert_eq!(t.step(0, &L, &mut acts, &mut released), Step::Block);
        assert_eq!(t.wait[0], Wait::Sleeping);
        assert_eq!(t.step(1, &L, &mut acts, &mut released), Step::Run(1_000));
        assert_eq!(acts, [Act::Wake(100, 1_000)]);
    }

    #[test]
    fn between_decodes_the_workers_wait_for_the_main_thread() {
        // Round 2 of nodes 2 is the dock: the main thread works, the workers arrive at once.
        let mut t = team(3, 0);
        t.round = vec![2; 3];
        t.barrier = Barrier::new(3, 2);
        let (mut acts, mut released) = (Vec::new(), 0);
        assert_eq!(t.begin(1, &L, &mut acts, &mut released), Step::Block);
        assert_eq!(t.begin(2, &L, &mut acts, &mut released), Step::Block);
        assert_eq!(t.begin(0, &L, &mut acts, &mut released), Step::Run(500));
        assert_eq!(t.step(0, &L, &mut acts, &mut released), Step::Run(1_000));
        assert_eq!(released, 1);
        assert_eq!(acts, [Act::Wake(101, 1_000), Act::Wake(102, 1_000)]);
    }
}
