//! The engine's scenarios: the seeds' machines and loads, and the 768-CPU frontier.
//!
//! Each is a machine shape and a workload at a default size; `--cpus` scales the machine
//! (keeping its shape where it divides, see [`VirtualScenario::shape`]).

use super::Outcome;
use super::topo::Shape;
use super::work::{Source, TaskKind, Workload};
use crate::scenario::{RunStats, pick_spread};

/// A scenario the engine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VirtualScenario {
    /// Seed 000: a 480-CPU, 4-socket SMT2 machine under a hackbench-like load: many short
    /// tasks that run briefly and block (`hackbench 40 process`: 1,600 tasks), so CPUs enter
    /// and leave idle all the time.
    Churn,
    /// Seed 001: an 80-core machine (Ampere Altra: one socket, no SMT) whose last 16 CPUs are
    /// NO_HZ_FULL, each running a bound task that computes for milliseconds and blocks
    /// briefly, while batches of parallel work (closed loop, as a batched-inference bench)
    /// arrive on CPU 0 for the balancer to spread over every CPU that is idle.
    Visibility,
    /// The frontier: 768 CPUs (2 sockets of 192 SMT2 cores, 32-CPU caches) in two cpusets of
    /// 384, mostly idle, with tasks arriving all the time and each running a few short bursts.
    Frontier,
}

impl VirtualScenario {
    /// The scenario's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            VirtualScenario::Churn => "v-churn",
            VirtualScenario::Visibility => "v-visibility",
            VirtualScenario::Frontier => "frontier",
        }
    }

    /// The machine size the scenario models.
    pub fn default_cpus(self) -> usize {
        match self {
            VirtualScenario::Churn => 480,
            VirtualScenario::Visibility => 80,
            VirtualScenario::Frontier => 768,
        }
    }

    /// The machine at `cpus` CPUs: the scenario's shape where `cpus` divides into it, else
    /// the nearest simpler one (no SMT, caches and sockets of the whole machine).
    pub fn shape(self, cpus: usize) -> Shape {
        let want = match self {
            VirtualScenario::Churn => Shape {
                cpus,
                smt: 2,
                llc: cpus / 4,
                socket: cpus / 4,
                cpusets: 1,
                nohz_full: 0,
            },
            VirtualScenario::Visibility => Shape {
                nohz_full: (cpus / 5).max(1),
                ..Shape::flat(cpus)
            },
            VirtualScenario::Frontier => Shape {
                cpus,
                smt: 2,
                llc: 32,
                socket: cpus / 2,
                cpusets: 2,
                nohz_full: 0,
            },
        };
        if want.check().is_ok() {
            return want;
        }
        let simple = Shape {
            cpusets: want.cpusets,
            nohz_full: want.nohz_full,
            ..Shape::flat(cpus)
        };
        if simple.check().is_ok() {
            simple
        } else {
            Shape {
                nohz_full: want.nohz_full.min(cpus.saturating_sub(1)),
                ..Shape::flat(cpus)
            }
        }
    }

    /// The load on `shape`.
    pub fn workload(self, shape: &Shape) -> Workload {
        let n = shape.cpus;
        match self {
            // hackbench's groups: ten times as many tasks as a third of the CPUs, each
            // running about 10 us per message and blocking about 40 us for the next.
            VirtualScenario::Churn => Workload {
                sources: vec![Source::Initial {
                    cpus: 0..n,
                    n: n * 10 / 3,
                    kind: TaskKind {
                        run_ns: 10_000,
                        sleep_ns: 40_000,
                        runs: 0,
                        bound: false,
                    },
                }],
            },
            VirtualScenario::Visibility => {
                let full: Vec<usize> = (0..n).filter(|&c| shape.is_nohz_full(c)).collect();
                let mut sources: Vec<Source> = full
                    .iter()
                    .map(|&c| Source::Initial {
                        cpus: c..c + 1,
                        n: 1,
                        kind: TaskKind {
                            run_ns: 4_000_000,
                            sleep_ns: 2_000_000,
                            runs: 0,
                            bound: true,
                        },
                    })
                    .collect();
                // A batch of one task per CPU, 2 ms each: it ends sooner the more CPUs take
                // part.
                sources.push(Source::Batches {
                    on: 0,
                    n,
                    gap_ns: 500_000,
                    kind: TaskKind {
                        run_ns: 2_000_000,
                        sleep_ns: 0,
                        runs: 1,
                        bound: false,
                    },
                });
                Workload { sources }
            }
            // Per cpuset, a task arriving every 125 us on average (8,000 a second), each
            // running 8 bursts of about 0.5 ms with 2 ms asleep between them: about 8 % busy.
            VirtualScenario::Frontier => Workload {
                sources: (0..shape.cpusets)
                    .map(|k| {
                        let size = n / shape.cpusets;
                        Source::Arrivals {
                            cpus: k * size..(k + 1) * size,
                            per_sec: 8_000 * size as u64 / 384,
                            kind: TaskKind {
                                run_ns: 500_000,
                                sleep_ns: 2_000_000,
                                runs: 8,
                                bound: false,
                            },
                        }
                    })
                    .collect(),
            },
        }
    }
}

/// One engine run as a row of the harness's report.
pub fn run_stats(scenario: VirtualScenario, seed: u64, o: &Outcome) -> RunStats {
    let secs = o.sim_seconds;
    let per_sec = |n: u64| (secs > 0.0).then(|| n as f64 / secs);
    let pct = |part: u64, whole: u64| (whole > 0).then(|| 100.0 * part as f64 / whole as f64);
    RunStats {
        logical_cpus: o.cpus,
        pinned: false,
        gated: true,
        seconds: secs,
        idle_transitions: o.idle_entries,
        kicks_sent: o.kicks_sent,
        ipis_delivered: o.kicks_sent,
        ilb_passes: o.ilb_passes,
        ilb_picks: o.ilb_duty.clone(),
        ilb_pick_spread: pick_spread(o.ilb_duty.iter().copied()),
        tasks_completed: o.tasks_completed,
        invariant_violations: o.violations,
        warnings: o.warnings,
        checks: o.checks,
        first_violation: o.first_violation.clone(),
        tasks_per_sec: (scenario == VirtualScenario::Visibility)
            .then(|| per_sec(o.tasks_completed))
            .flatten(),
        burst_ms: o.batch_ms,
        idle_transitions_per_sec: per_sec(o.idle_entries),
        virtual_seconds: Some(secs),
        engine: "virtual",
        seed: Some(seed),
        events: Some(o.events),
        busy_pct: pct(o.busy_ns, o.busy_ns + o.idle_ns),
        due_tick_pct: pct(o.due_ticks, o.busy_ticks),
        ilb_passes_per_sec: per_sec(o.ilb_passes),
        ilb_top_share_pct: pct(o.ilb_duty.iter().copied().max().unwrap_or(0), o.ilb_passes),
        invisible_idle_pct: pct(o.invisible_idle_ns, o.idle_ns),
        ..RunStats::empty(scenario.name(), o.policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_hold_at_their_sizes_and_scale_down() {
        for s in [
            VirtualScenario::Churn,
            VirtualScenario::Visibility,
            VirtualScenario::Frontier,
        ] {
            let shape = s.shape(s.default_cpus());
            assert!(shape.check().is_ok(), "{s:?}");
            for cpus in [2, 3, 8, 17, 64] {
                let shape = s.shape(cpus);
                assert!(shape.check().is_ok(), "{s:?} at {cpus}: {shape:?}");
                assert_eq!(shape.cpus, cpus);
            }
        }
        let f = VirtualScenario::Frontier.shape(768);
        assert_eq!((f.cpusets, f.llc, f.smt), (2, 32, 2));
        let v = VirtualScenario::Visibility.shape(80);
        assert_eq!((0..80).filter(|&c| v.is_nohz_full(c)).count(), 16);
    }
}
