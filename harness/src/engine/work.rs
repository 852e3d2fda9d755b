//! Workloads: where tasks come from and how each one alternates running and sleeping.
//!
//! Every draw comes from the run's seeded generator, with integer arithmetic only (uniform
//! around the mean, never a logarithm): the same seed gives the same tasks on any host.

use std::ops::Range;

/// How a task behaves once it exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskKind {
    /// Mean CPU time of one run before the task blocks, in nanoseconds.
    pub run_ns: u64,
    /// Mean time asleep between runs (woken by a timer on the CPU it slept on); 0: the task
    /// exits after its runs.
    pub sleep_ns: u64,
    /// Runs before the task exits; 0: it never exits.
    pub runs: u32,
    /// Bound to the CPU it starts on (`taskset` to one CPU): never migrated.
    pub bound: bool,
}

/// Where tasks come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `n` tasks at time 0, forked by parents on `cpus` in turn (each placed from there as a
    /// new task).
    Initial {
        /// The CPUs, in turn.
        cpus: Range<usize>,
        /// How many.
        n: usize,
        /// Their behaviour.
        kind: TaskKind,
    },
    /// New tasks arriving on random CPUs of `cpus`, `per_sec` a simulated second on average
    /// (each forked from the CPU a timer interrupt comes on, and placed from there).
    Arrivals {
        /// The CPUs they arrive on.
        cpus: Range<usize>,
        /// Mean arrivals per simulated second.
        per_sec: u64,
        /// Their behaviour.
        kind: TaskKind,
    },
    /// Device interrupts on each CPU of `cpus`, `per_sec` a simulated second on average per
    /// CPU (a network card's queues): each runs through the crate's interrupt entry and exit
    /// (`irq_enter`, irq-time accounting, `irq_exit`) with an empty handler.
    Interrupts {
        /// The CPUs that take them.
        cpus: Range<usize>,
        /// Mean interrupts per simulated second per CPU.
        per_sec: u64,
    },
    /// Batches of `n` tasks forked at once from CPU `on` (a dispatcher forking a batch of
    /// parallel work), placed as new tasks, then balanced. Closed loop, as a batched
    /// benchmark runs: the next batch comes `gap_ns` after the last task of the previous one
    /// ends, so the work done in a run measures how fast batches finish.
    Batches {
        /// The dispatcher's CPU.
        on: usize,
        /// Tasks per batch.
        n: usize,
        /// Time from a batch's end to the next batch.
        gap_ns: u64,
        /// Their behaviour (each task runs once and exits; `sleep_ns` and `runs` are not used).
        kind: TaskKind,
    },
}

/// A whole workload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Workload {
    /// Its sources.
    pub sources: Vec<Source>,
}

/// A draw uniform in `[mean / 2, 3 * mean / 2]` (at least 1).
pub fn around(rng: &mut fastrand::Rng, mean: u64) -> u64 {
    (mean / 2 + rng.u64(0..=mean)).max(1)
}

/// A draw uniform in `[0, 2 * mean]`: an inter-arrival time of mean `mean` (at least 1).
pub fn gap(rng: &mut fastrand::Rng, mean: u64) -> u64 {
    rng.u64(0..=2 * mean).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_seeded_and_centred() {
        let mut a = fastrand::Rng::with_seed(7);
        let mut b = fastrand::Rng::with_seed(7);
        let xs: Vec<u64> = (0..1000).map(|_| around(&mut a, 1000)).collect();
        let ys: Vec<u64> = (0..1000).map(|_| around(&mut b, 1000)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|&x| (500..=1500).contains(&x)));
        let mean = xs.iter().sum::<u64>() / 1000;
        assert!((900..1100).contains(&mean), "mean {mean}");
        assert!((0..1000).all(|_| gap(&mut a, 10) <= 20));
    }
}
