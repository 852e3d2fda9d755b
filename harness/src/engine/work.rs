//! Workloads: where tasks come from and how each one alternates running and sleeping.
//!
//! Every draw comes from a generator seeded from the run's seed (the run's own, or an arrival
//! stream's or task's derived from it: `load/`), with integer arithmetic only (uniform around
//! the mean, never a logarithm): the same seed gives the same tasks on any host.

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
    /// `llama-batched-bench`'s decode loop on ggml's CPU backend with OpenMP: a team of
    /// threads meeting at a barrier after every graph node (`load/llama.rs`).
    Llama(Llama),
    /// hackbench: groups of senders and receivers over sockets or pipes (`load/hackbench.rs`).
    Hackbench(Hackbench),
}

/// `llama-batched-bench` generating tokens: `threads` threads (the main thread, thread 0 of the
/// OpenMP team, and `threads - 1` workers it forks at start), each decode `nodes` barrier
/// rounds in which every thread runs its equal slice of the node, then the main thread's own
/// work between decodes while the workers wait at the team's dock.
///
/// A waiting thread spins (running, its CPU busy) for `spin_ns` and then sleeps until the
/// round's last thread wakes it (libgomp's `do_wait`: `GOMP_SPINCOUNT` spins, then a futex);
/// `throttled_spin_ns` instead when the team outnumbers the CPUs it may run on (libgomp's
/// `gomp_throttled_spin_count_var`). Every parameter and its source: harness/README.md, "The
/// seeds' benchmarks as loads".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Llama {
    /// The CPU the benchmark starts on (its main thread).
    pub on: usize,
    /// Threads in the team, the main thread included (`-t`).
    pub threads: usize,
    /// Barrier rounds per decode: one per graph node.
    pub nodes: u32,
    /// Each thread's slice of a node, in nanoseconds.
    pub slice_ns: u64,
    /// The main thread's own work between two decodes, in nanoseconds.
    pub main_ns: u64,
    /// How long a waiting thread spins before it sleeps, in nanoseconds.
    pub spin_ns: u64,
    /// The same when the team outnumbers the CPUs it may run on.
    pub throttled_spin_ns: u64,
}

/// hackbench (`hackbench [-pipe] <groups> process|thread <loops>`): per group, `fds` receivers
/// and `fds` senders; each sender writes, `loops` times, one message to each receiver of its
/// group in turn, blocking while that receiver's buffer is full; each receiver reads its
/// messages one at a time, blocking while its buffer is empty. Every wakeup is a sync wakeup
/// from the writer's or reader's CPU.
///
/// Process and thread mode differ in the kernel's scheduler by nothing the engine models (the
/// same tasks, the same wakeups); they differ here by their per-message costs, which come
/// from measurements of each mode (harness/README.md, "The seeds' benchmarks as loads").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hackbench {
    /// The CPU the benchmark starts on (it forks every task from there).
    pub on: usize,
    /// Groups.
    pub groups: usize,
    /// Senders and receivers per group (hackbench's `num_fds`, 20).
    pub fds: usize,
    /// Rounds each sender writes (0: continuous, a sender starts over forever).
    pub loops: u32,
    /// CPU time of one write, in nanoseconds.
    pub write_ns: u64,
    /// CPU time of one read, in nanoseconds.
    pub read_ns: u64,
    /// Each receiver's buffer.
    pub buffer: Buffer,
}

/// A receiver's buffer (its socket's send side, or its pipe), in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    /// Messages it holds at most (those being written or read included).
    pub capacity: usize,
    /// Blocked writers are woken once a read leaves at most this many.
    pub wake_writers_at: usize,
    /// All blocked writers are woken at once (a socket's wait queue), or one, which wakes the
    /// next if room is left after its write (a pipe's exclusive wait).
    pub wake_all_writers: bool,
}

impl Buffer {
    /// An `AF_UNIX` stream socket with the default send buffer: room for 256 messages of up
    /// to 256 bytes (`SK_WMEM_MAX` is defined as 256 such buffers' true size), writers woken
    /// all at once when at most a quarter is in use (`unix_writable`, `unix_write_space`).
    pub const SOCKET: Buffer = Buffer {
        capacity: 256,
        wake_writers_at: 64,
        wake_all_writers: true,
    };

    /// A pipe of 16 pages of 4 KiB (`PIPE_DEF_BUFFERS`), 100-byte writes merged into the last
    /// page while they fit (40 a page): 640 messages; a reader freeing a page of a full pipe
    /// wakes one writer (`pipe_read`, an exclusive wait), which wakes the next while room is
    /// left (`pipe_write`).
    pub const PIPE: Buffer = Buffer {
        capacity: 640,
        wake_writers_at: 600,
        wake_all_writers: false,
    };
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

    /// What the workload's own throughput counts (`Outcome::work_done`): decodes for a llama
    /// load, messages read for hackbench, none for the others.
    pub fn work_unit(&self) -> &'static str {
        self.sources
            .iter()
            .find_map(|s| match s {
                Source::Llama(_) => Some("decodes"),
                Source::Hackbench(_) => Some("messages"),
                _ => None,
            })
            .unwrap_or("")
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
