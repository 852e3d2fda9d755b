//! The engine's scenarios: the seeds' machines and loads, and the 768-CPU frontier.
//!
//! Each is a machine shape and a workload at a default size; `--cpus` scales the machine
//! (keeping its shape where it divides, see [`VirtualScenario::shape`]).

use super::Outcome;
use super::cost::KERNEL_FNS;
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
    /// Seed 001: an 80-core machine (Ampere Altra: one socket, no SMT) booted with most of
    /// its CPUs NO_HZ_FULL (the last 72; 8 housekeeping CPUs), under closed-loop batches of
    /// parallel work (a batched-inference bench): each batch, two tasks per CPU of 2 ms each,
    /// is forked from CPU 0, fork placement spreading it. A NO_HZ_FULL CPU running one task
    /// stops its tick, so it goes idle with the tick already stopped: under Legacy it stays
    /// out of the idle mask, and the idle balancer never pulls work to it.
    Visibility,
    /// Seed 003: a 2-socket server (224 CPUs: 2 x 56 SMT2 cores, one cache per socket) with
    /// irq-time accounting on, a SPECjbb-like load (one task per CPU, 200 us runs, 100 us
    /// blocked) and 5,000 device interrupts a second on every CPU.
    Irqtime,
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
            VirtualScenario::Irqtime => "v-irqtime",
            VirtualScenario::Frontier => "frontier",
        }
    }

    /// The machine size the scenario models.
    pub fn default_cpus(self) -> usize {
        match self {
            VirtualScenario::Churn => 480,
            VirtualScenario::Visibility => 80,
            VirtualScenario::Irqtime => 224,
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
                nohz_full: cpus * 9 / 10,
                ..Shape::flat(cpus)
            },
            VirtualScenario::Irqtime => Shape {
                cpus,
                smt: 2,
                llc: cpus / 2,
                socket: cpus / 2,
                cpusets: 1,
                nohz_full: 0,
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

    /// Where the cost model puts the plain irq-time flag by default. Its place is the kernel
    /// build's link order, which the seeds record for seed 003's x86 build only (the flag in
    /// the `nohz` line). Seed 000 names no irq-time cost on its 480-CPU machine, so `churn`
    /// keeps the flag apart: its two kernels then differ by seed 000 alone, not by seed
    /// 003's false sharing too. The others keep the crate's layout, seed 003's.
    pub fn flag_line(self) -> super::cost::FlagLine {
        match self {
            VirtualScenario::Churn => super::cost::FlagLine::Own,
            _ => super::cost::FlagLine::Nohz,
        }
    }

    /// Whether irq-time accounting is on.
    pub fn irqtime(self) -> bool {
        self == VirtualScenario::Irqtime
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
            // Two tasks per CPU, 2 ms each: a batch ends sooner the more CPUs take part.
            VirtualScenario::Visibility => Workload {
                sources: vec![Source::Batches {
                    on: 0,
                    n: 2 * n,
                    gap_ns: 500_000,
                    kind: TaskKind {
                        run_ns: 2_000_000,
                        sleep_ns: 0,
                        runs: 1,
                        bound: false,
                    },
                }],
            },
            VirtualScenario::Irqtime => Workload {
                sources: vec![
                    Source::Initial {
                        cpus: 0..n,
                        n,
                        kind: TaskKind {
                            run_ns: 200_000,
                            sleep_ns: 100_000,
                            runs: 0,
                            bound: false,
                        },
                    },
                    Source::Interrupts {
                        cpus: 0..n,
                        per_sec: 5_000,
                    },
                ],
            },
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
    let plant = o.plant;
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
        hotplug_cycles: o.hotplug_cycles,
        hotplug_refused: o.hotplug_refused,
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
        plant,
        ..cost_stats(o, RunStats::empty(scenario.name(), o.policy))
    }
}

/// The cost model's columns: each kernel function's share of all CPU time.
fn cost_stats(o: &Outcome, r: RunStats) -> RunStats {
    let Some(c) = &o.cost else { return r };
    let one = c.measured_ns as f64;
    let all = o.cpus as f64 * one;
    let share = |name: &str| {
        KERNEL_FNS
            .iter()
            .position(|&f| f == name)
            .map(|i| 100.0 * c.fn_ns[i] as f64 / all)
    };
    let mut rows: Vec<(usize, u64)> = c
        .fn_ns
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, ns)| ns > 0)
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let fn_pct = rows
        .iter()
        .map(|&(i, ns)| {
            format!(
                "{}={:.4}/{:.3}",
                KERNEL_FNS[i],
                100.0 * ns as f64 / all,
                100.0 * c.fn_max_cpu_ns[i] as f64 / one
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    RunStats {
        t_x: Some(format!("{}/{}", c.params.t_local, c.params.t_remote)),
        kernel_pct: Some(100.0 * o.kernel_ns as f64 / all),
        exit_idle_pct: share("nohz_balance_exit_idle"),
        kick_pct: share("nohz_balancer_kick"),
        enter_idle_pct: share("nohz_balance_enter_idle"),
        irqtime_pct: share("irqtime_account_irq"),
        fn_pct: Some(fn_pct),
        ..r
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
            VirtualScenario::Irqtime,
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
        assert_eq!((0..80).filter(|&c| v.is_nohz_full(c)).count(), 72);
        let i = VirtualScenario::Irqtime.shape(224);
        assert_eq!((i.socket, i.llc, i.smt), (112, 112, 2));
    }
}
