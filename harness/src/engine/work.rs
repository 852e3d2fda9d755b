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
    /// `n` tasks at time 0, spread round-robin over `cpus`.
    Initial {
        /// The CPUs, in turn.
        cpus: Range<usize>,
        /// How many.
        n: usize,
        /// Their behaviour.
        kind: TaskKind,
    },
    /// New tasks arriving on random CPUs of `cpus`, `per_sec` a simulated second on average
    /// (each woken by a timer interrupt on its CPU and placed from there).
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
    /// Batches of `n` tasks queued at once on CPU `on` (a dispatcher forking a batch of
    /// parallel work there), left to the balancer to spread. Closed loop, as a batched
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

impl Workload {
    /// The same load with each source of arriving tasks (`Source::Arrivals` of tasks with a
    /// bounded number of runs) arriving at the rate that keeps `pct` per cent of its CPUs busy
    /// on average: a task's CPU time is its runs times its mean run. Errors if the load has no
    /// such source, which a utilization cannot be set for.
    pub fn at_utilization(&self, pct: u32) -> Result<Workload, String> {
        let mut sources = self.sources.clone();
        let mut set = 0;
        for src in &mut sources {
            if let Source::Arrivals {
                cpus,
                per_sec,
                kind,
            } = src
                && kind.runs > 0
            {
                let task_ns = u64::from(kind.runs) * kind.run_ns;
                *per_sec = u64::from(pct) * cpus.len() as u64 * 10_000_000 / task_ns.max(1);
                set += 1;
            }
        }
        if set == 0 {
            return Err("this load has no arriving tasks whose rate sets its utilization".into());
        }
        Ok(Workload { sources })
    }
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
    fn a_utilization_sets_the_arrival_rate() {
        let kind = TaskKind {
            run_ns: 500_000,
            sleep_ns: 2_000_000,
            runs: 8,
            bound: false,
        };
        let load = Workload {
            sources: vec![Source::Arrivals {
                cpus: 0..384,
                per_sec: 1,
                kind,
            }],
        };
        // 50 % of 384 CPUs is 192 CPU-seconds a second; a task takes 4 ms of them.
        let Source::Arrivals { per_sec, .. } = load.at_utilization(50).unwrap().sources[0] else {
            unreachable!()
        };
        assert_eq!(per_sec, 48_000);
        assert!(Workload::default().at_utilization(50).is_err());
    }

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
