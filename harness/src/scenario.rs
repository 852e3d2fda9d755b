//! The three scenarios, one per seed, each a function from a configuration to run statistics.
//!
//! - `visibility` (seed 001): NO_HZ_FULL CPUs stop their tick while running one task, then go
//!   idle; bursts of work land on housekeeping CPU 0. Whether the idle balancer can see the
//!   NO_HZ_FULL CPUs decides whether they get any of the work.
//! - `churn` (seed 000): every CPU sleeps and wakes on its own timer and runs short tasks, so
//!   CPUs register and leave the idle mask at a high rate; then every CPU runs back-to-back
//!   `nohz_balance_enter_idle` + `nohz_balance_exit_idle` pairs, timed, all at once.
//! - `irqtime` (seed 003): half the CPUs run an interrupt stream (`irqtime_account_irq`, timed)
//!   while the other half churn enter/exit pairs, writing the `nohz` line.
//! - `soak` (not part of `all`): the full kernel paths on a virtual clock as fast as the host
//!   runs them, faults and invariant checks on (see [`crate::soak`]).

use crate::measure::{ThreadUsage, median};
use crate::sim::{Faults, Plant, SelfWake, Sim, Task};
use crate::soak::SoakStop;
use nohz::IrqContext;
use nohz::Policy;
use serde::Serialize;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// A scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scenario {
    /// Seed 001: idle NO_HZ_FULL CPUs visible to the idle balancer.
    Visibility,
    /// Seed 000: idle enter/exit under churn.
    Churn,
    /// Seed 003: irq-time accounting beside the `nohz` line.
    Irqtime,
    /// The soak: every kernel path, a virtual clock, faults and invariant checks.
    Soak,
}

impl Scenario {
    /// The measuring scenarios (`--scenario all`), in report order; the soak runs alone.
    pub const ALL: [Scenario; 3] = [Scenario::Visibility, Scenario::Churn, Scenario::Irqtime];

    /// The scenario's name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Visibility => "visibility",
            Scenario::Churn => "churn",
            Scenario::Irqtime => "irqtime",
            Scenario::Soak => "soak",
        }
    }

    /// The default number of logical CPUs: 4 for `visibility` (two housekeeping, two
    /// NO_HZ_FULL), the number of cores (at least 2) otherwise.
    pub fn default_cpus(self, cores: usize) -> usize {
        match self {
            Scenario::Visibility => 4,
            _ => cores.max(2),
        }
    }

    /// The fewest logical CPUs the scenario works with.
    pub fn min_cpus(self) -> usize {
        match self {
            Scenario::Visibility => 3,
            _ => 2,
        }
    }
}

/// One run's configuration.
#[derive(Debug, Clone, Copy)]
pub struct RunConfig {
    /// The scenario.
    pub scenario: Scenario,
    /// Logical CPUs.
    pub cpus: usize,
    /// Seconds to run.
    pub seconds: f64,
    /// Fault injection.
    pub faults: Faults,
    /// Pin CPU threads to cores.
    pub pin: bool,
    /// `soak`: stop after this many transitions (else after `seconds`).
    pub transitions: Option<u64>,
    /// The bug planted for the run (the soak's checks must catch it).
    pub plant: Plant,
    /// `soak`: show progress on stderr when it is a terminal.
    pub progress: bool,
}

impl RunConfig {
    /// `scenario` on `cpus` logical CPUs for `seconds`, nothing planted, no transition target,
    /// no progress.
    pub fn new(scenario: Scenario, cpus: usize, seconds: f64, faults: Faults, pin: bool) -> Self {
        RunConfig {
            scenario,
            cpus,
            seconds,
            faults,
            pin,
            transitions: None,
            plant: Plant::None,
            progress: false,
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunStats {
    /// The scenario.
    pub scenario: &'static str,
    /// `patched` or `legacy`.
    pub policy: &'static str,
    /// Logical CPUs.
    pub logical_cpus: usize,
    /// Whether every CPU thread was pinned.
    pub pinned: bool,
    /// Whether the descheduling gate applied (not more logical CPUs than cores).
    pub gated: bool,
    /// Whether the gate found a thread descheduled (the run is then discarded in comparisons).
    pub descheduled: bool,
    /// Seconds the run lasted.
    pub seconds: f64,
    /// Idle-loop entries.
    pub idle_transitions: u64,
    /// Idle transitions: idle-loop passes that registered a CPU, each ended by that CPU's
    /// next busy tick.
    pub transitions: u64,
    /// nohz kick IPIs sent.
    pub kicks_sent: u64,
    /// nohz kick IPIs handled.
    pub ipis_delivered: u64,
    /// ILB passes handed to a softirq.
    pub ilb_passes: u64,
    /// Tasks completed.
    pub tasks_completed: u64,
    /// Ticks during which an idle, tickless CPU past its stop attempt was absent from the mask.
    pub invisible_idle_ticks: u64,
    /// Protocol violations (second IPI in flight, kick bits or csd left behind).
    pub invariant_violations: u64,
    /// Crate warnings.
    pub warnings: u64,
    /// CPUs taken offline and brought back (`--faults`).
    pub hotplug_cycles: u64,
    /// Deactivations the crate refused (the last active CPU, the NO_HZ_FULL timekeeper).
    pub hotplug_refused: u64,
    /// Hotplug invariant checks made (out of the mask once deactivated, no IPI while down,
    /// a fresh CPU's state on return); each failure is also an invariant violation.
    pub hotplug_checks: u64,
    /// `visibility`: tasks completed per second.
    pub tasks_per_sec: Option<f64>,
    /// `visibility`: median time from a burst's arrival to its last task's completion (ms).
    pub burst_ms: Option<f64>,
    /// `visibility`: tasks the balancer pulled onto NO_HZ_FULL CPUs.
    pub pulled_to_nohz_full: Option<u64>,
    /// `churn`: idle-loop entries per second.
    pub idle_transitions_per_sec: Option<f64>,
    /// `churn`: ns per enter+exit pair with every CPU doing pairs at once.
    pub pair_ns: Option<f64>,
    /// `irqtime`: ns per `irqtime_account_irq` call.
    pub irq_ns_per_call: Option<f64>,
    /// `soak`: transitions per second of wall time.
    pub transitions_per_sec: Option<f64>,
    /// Seconds of virtual time the soak simulated.
    pub virtual_seconds: Option<f64>,
    /// Faults injected (delayed IPIs, stalls, jiffies jumps, hotplug attempts).
    pub faults_injected: u64,
    /// Invariant checks made (each predicate on each CPU in a quiescent snapshot, each
    /// hotplug check).
    pub checks: u64,
    /// Quiescent snapshots taken, and given up (a CPU stayed in crate code).
    pub snapshots: u64,
    /// Snapshots given up.
    pub snapshots_skipped: u64,
    /// The bug planted (`none` for the crate as it is).
    pub plant: &'static str,
    /// The first violation seen, if any.
    pub first_violation: Option<String>,
    /// Transitions counted when the first violation was seen.
    pub violation_after_transitions: Option<u64>,
    /// The ILB-pick histogram: how many kick IPIs each CPU received (`find_new_ilb` picked it),
    /// CPU 0 first; written as one space-separated field, so that the CSV keeps one column.
    #[serde(serialize_with = "space_separated")]
    pub ilb_picks: Vec<u64>,
    /// The histogram's spread over the housekeeping CPUs that were picked at all: the most
    /// picks of one CPU over the mean (1.0 is perfectly even; `None` with fewer than 2 picked).
    pub ilb_pick_spread: Option<f64>,
    /// How the run was made: `threads` (a host thread per CPU) or `virtual` (the
    /// deterministic engine, [`crate::engine`]; `seconds` are then simulated).
    pub engine: &'static str,
    /// Virtual engine: the seed of the run's random draws.
    pub seed: Option<u64>,
    /// Virtual engine: events processed.
    pub events: Option<u64>,
    /// Virtual engine: tasks the load's arrival streams made, the whole run (the offered
    /// load: the same under every policy for a seed).
    pub arrivals: Option<u64>,
    /// Virtual engine: device interrupts the load raised, the whole run (likewise).
    pub device_interrupts: Option<u64>,
    /// Virtual engine: the share of CPU time spent running tasks, per cent.
    pub busy_pct: Option<f64>,
    /// Virtual engine: the share of busy ticks whose kick found balancing due (jiffies at or
    /// past `nohz.next_balance`), per cent.
    pub due_tick_pct: Option<f64>,
    /// Virtual engine: ILB passes per simulated second.
    pub ilb_passes_per_sec: Option<f64>,
    /// Virtual engine: the share of all ILB passes run by the CPU that ran the most, per cent.
    pub ilb_top_share_pct: Option<f64>,
    /// Virtual engine: idle time spent halted with the tick stopped but out of the idle
    /// mask (invisible to the idle balancer), per cent of all idle time.
    pub invisible_idle_pct: Option<f64>,
    /// Virtual engine, cost model: the transfer costs used, `local/remote` ns.
    pub t_x: Option<String>,
    /// Virtual engine, cost model: the crate's share of all CPU time, per cent.
    pub kernel_pct: Option<f64>,
    /// Virtual engine, cost model: `nohz_balance_exit_idle`'s share of all CPU time, per cent.
    pub exit_idle_pct: Option<f64>,
    /// Virtual engine, cost model: `nohz_balancer_kick`'s share of all CPU time, per cent.
    pub kick_pct: Option<f64>,
    /// Virtual engine, cost model: `nohz_balance_enter_idle`'s share of all CPU time, per cent.
    pub enter_idle_pct: Option<f64>,
    /// Virtual engine, cost model: `irqtime_account_irq`'s share of all CPU time, per cent.
    pub irqtime_pct: Option<f64>,
    /// Virtual engine, cost model: every kernel function's share of all CPU time (per cent,
    /// `function=share`, largest first) and, after a slash, the largest share of one CPU's
    /// time; one space-separated field.
    pub fn_pct: Option<String>,
    /// Virtual engine: the workload's own throughput after the warm-up, in
    /// `throughput_unit` (llama decodes, hackbench messages, batches, tasks, per simulated
    /// second).
    pub throughput: Option<f64>,
    /// Virtual engine: the unit of `throughput` (`decodes/s`, `messages/s`, `batches/s`,
    /// `tasks/s`).
    pub throughput_unit: Option<&'static str>,
    /// Virtual engine: CPU time idle while a task it may run waited on a run queue, ms per
    /// simulated second (the waste balancing exists to remove).
    pub idle_while_waiting_ms_per_s: Option<f64>,
    /// Virtual engine: the median wait from runnable to running, us.
    pub runnable_wait_us_p50: Option<f64>,
    /// Virtual engine: the 99th percentile of the same, us.
    pub runnable_wait_us_p99: Option<f64>,
    /// Virtual engine: CPU time in ILB passes, ms per simulated second.
    pub ilb_cpu_ms_per_s: Option<f64>,
    /// Virtual engine: the ILB time of the CPU that pays most, as a share of its own time.
    pub ilb_busiest_share: Option<f64>,
    /// Virtual engine: of the ILB time, the idle CPUs' domain balances, ms per simulated
    /// second.
    pub ilb_domains_ms_per_s: Option<f64>,
    /// Virtual engine: of the ILB time, the blocked-load decays, ms per simulated second.
    pub ilb_blocked_ms_per_s: Option<f64>,
    /// Virtual engine: of the ILB time, the remote run queues' locks, ms per simulated
    /// second (the three parts sum to `ilb_cpu_ms_per_s`).
    pub ilb_rq_lock_ms_per_s: Option<f64>,
    /// Virtual engine: CPU time in newidle walks, ms per simulated second.
    pub newidle_cpu_ms_per_s: Option<f64>,
    /// Virtual engine: CPU time in the CPUs' own periodic balances, ms per simulated second.
    pub periodic_cpu_ms_per_s: Option<f64>,
    /// Virtual engine: tasks pulled by newidle balancing, per simulated second (the whole run,
    /// as the other per-second counts).
    pub pulled_newidle_per_sec: Option<f64>,
    /// Virtual engine: tasks pulled by a CPU's own periodic balance (an ILB CPU's balance of
    /// itself included), per simulated second.
    pub pulled_periodic_per_sec: Option<f64>,
    /// Virtual engine: tasks pulled by ILB passes on other idle CPUs' behalf, per simulated
    /// second: what the NOHZ idle balancing itself moved.
    pub pulled_ilb_per_sec: Option<f64>,
    /// Virtual engine: busy ticks that found `nohz.next_balance` at or before `jiffies`, as a
    /// fraction of busy ticks.
    pub due_tick_fraction: Option<f64>,
    /// Virtual engine: kick passes aborted by a wakeup onto their CPU.
    pub ilb_passes_aborted: Option<u64>,
    /// Virtual engine: how far each completed kick pass moved `nohz.next_balance`, as
    /// `jiffies:passes` pairs; one space-separated field.
    pub next_balance_advance: Option<String>,
    /// Virtual engine: how far ahead of jiffies each completed kick pass left
    /// `nohz.next_balance`, as `jiffies:passes` pairs; one space-separated field.
    pub next_balance_ahead: Option<String>,
    /// Virtual engine: jiffies in which a busy tick found balancing due, as a fraction of the
    /// jiffies with a busy tick.
    pub due_jiffy_fraction: Option<f64>,
    /// Virtual engine: the balancing costs the run used.
    pub balance_costs: Option<String>,
}

/// Writes a list of counts as one field: the numbers, space-separated.
fn space_separated<S: serde::Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
    let text: Vec<String> = v.iter().map(u64::to_string).collect();
    s.serialize_str(&text.join(" "))
}

/// The ILB-pick histogram's spread: the most picks of one CPU over the mean of the CPUs picked
/// at all (`None` with fewer than two picked).
pub fn pick_spread(picks: impl Iterator<Item = u64>) -> Option<f64> {
    let picked: Vec<u64> = picks.filter(|&n| n > 0).collect();
    if picked.len() < 2 {
        return None;
    }
    let mean = picked.iter().sum::<u64>() as f64 / picked.len() as f64;
    picked.iter().max().map(|&m| m as f64 / mean)
}

impl RunStats {
    /// A run of `scenario` under `policy` that measured nothing (every count 0, no metric):
    /// what the report's tests build their runs from.
    pub fn empty(scenario: &'static str, policy: &'static str) -> Self {
        RunStats {
            scenario,
            policy,
            logical_cpus: 0,
            pinned: false,
            gated: true,
            descheduled: false,
            seconds: 0.0,
            idle_transitions: 0,
            transitions: 0,
            kicks_sent: 0,
            ilb_picks: Vec::new(),
            ilb_pick_spread: None,
            ipis_delivered: 0,
            ilb_passes: 0,
            tasks_completed: 0,
            invisible_idle_ticks: 0,
            invariant_violations: 0,
            warnings: 0,
            hotplug_cycles: 0,
            hotplug_refused: 0,
            hotplug_checks: 0,
            tasks_per_sec: None,
            burst_ms: None,
            pulled_to_nohz_full: None,
            idle_transitions_per_sec: None,
            pair_ns: None,
            irq_ns_per_call: None,
            transitions_per_sec: None,
            virtual_seconds: None,
            faults_injected: 0,
            checks: 0,
            snapshots: 0,
            snapshots_skipped: 0,
            plant: "none",
            first_violation: None,
            violation_after_transitions: None,
            engine: "threads",
            seed: None,
            events: None,
            arrivals: None,
            device_interrupts: None,
            busy_pct: None,
            due_tick_pct: None,
            ilb_passes_per_sec: None,
            ilb_top_share_pct: None,
            invisible_idle_pct: None,
            t_x: None,
            kernel_pct: None,
            exit_idle_pct: None,
            kick_pct: None,
            enter_idle_pct: None,
            irqtime_pct: None,
            fn_pct: None,
            throughput: None,
            throughput_unit: None,
            idle_while_waiting_ms_per_s: None,
            runnable_wait_us_p50: None,
            runnable_wait_us_p99: None,
            ilb_cpu_ms_per_s: None,
            ilb_busiest_share: None,
            ilb_domains_ms_per_s: None,
            ilb_blocked_ms_per_s: None,
            ilb_rq_lock_ms_per_s: None,
            newidle_cpu_ms_per_s: None,
            periodic_cpu_ms_per_s: None,
            pulled_newidle_per_sec: None,
            pulled_periodic_per_sec: None,
            pulled_ilb_per_sec: None,
            due_tick_fraction: None,
            ilb_passes_aborted: None,
            next_balance_advance: None,
            next_balance_ahead: None,
            due_jiffy_fraction: None,
            balance_costs: None,
        }
    }

    /// Under `Patched` these must all be zero.
    pub fn patched_failures(&self) -> u64 {
        self.invisible_idle_ticks + self.invariant_violations + self.warnings
    }
}

fn cores() -> Vec<core_affinity::CoreId> {
    core_affinity::get_core_ids().unwrap_or_default()
}

/// The host's core count (at least 1).
pub fn core_count() -> usize {
    cores().len().max(1)
}

/// Runs one scenario once under `P` at `HZ`.
pub fn run<P: Policy, const HZ: u32>(cfg: &RunConfig) -> Result<RunStats, String> {
    match cfg.scenario {
        Scenario::Visibility => visibility::<P, HZ>(cfg),
        Scenario::Churn => churn::<P, HZ>(cfg),
        Scenario::Irqtime => irqtime::<P, HZ>(cfg),
        Scenario::Soak => soak::<P, HZ>(cfg),
    }
}

/// The soak's NO_HZ_FULL CPUs: the last one from four CPUs up (so the housekeeping ones can
/// still take turns going offline).
pub fn soak_nohz_full(cpus: usize) -> Vec<usize> {
    if cpus >= 4 {
        vec![cpus - 1]
    } else {
        Vec::new()
    }
}

fn soak<P: Policy, const HZ: u32>(cfg: &RunConfig) -> Result<RunStats, String> {
    let wake = SelfWake {
        min_ticks: 1,
        max_ticks: 3,
        // A task is this many busy ticks.
        min_work_us: 1,
        max_work_us: 2,
    };
    let full = soak_nohz_full(cfg.cpus);
    let mut sim =
        Sim::<P, HZ>::with_clock(cfg.cpus, &full, cfg.faults, Some(wake), true, cfg.plant)?;
    // One decay takes an idle entry's blocked load away: an ILB pass ends without blocked
    // load left unless it missed someone's.
    sim.idle_load = 1;
    sim.oversubscribed = cfg.cpus > core_count();
    #[cfg(nohz_probe)]
    let _weakened = match cfg.plant {
        Plant::IlbFence => Some(
            nohz::sync::probe::weaken_globally(
                &nohz::sync::NOHZ_ILB_FENCE,
                nohz::sync::Weakening::Removed,
            )
            .map_err(|e| format!("cannot remove the ILB fence: {e:?}"))?,
        ),
        _ => None,
    };
    #[cfg(not(nohz_probe))]
    if cfg.plant == Plant::IlbFence {
        return Err("planting the missing ILB fence needs a probe build:                     RUSTFLAGS='--cfg nohz_probe' CARGO_TARGET_DIR=target/probe cargo run ..."
            .into());
    }
    let stop = SoakStop {
        transitions: cfg.transitions,
        seconds: if cfg.transitions.is_some() {
            24.0 * 3600.0
        } else {
            cfg.seconds
        },
        progress: cfg.progress,
    };
    let (pinned, usage, secs) = crate::soak::run_threads(&*sim, &cores(), cfg.pin, stop);
    let mut st = base_stats(&*sim, cfg, pinned, &usage, secs);
    // Yielding waits and the virtual clock: CPU time is no measure here.
    st.gated = false;
    st.descheduled = false;
    st.transitions_per_sec = Some(st.transitions as f64 / secs);
    st.virtual_seconds = Some(sim.now_ns() as f64 / 1e9);
    Ok(st)
}

/// Runs the CPU threads of `sim` until `body` (on this thread) returns; returns whether all were
/// pinned and each one's clocks.
fn with_cpus<P: Policy, const HZ: u32>(
    sim: &Sim<P, HZ>,
    cfg: &RunConfig,
    body: impl FnOnce(),
) -> (bool, Vec<ThreadUsage>) {
    let cores = cores();
    let n = sim.nr().get();
    let out = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let core = (cfg.pin && !cores.is_empty()).then(|| cores[i % cores.len()]);
                s.spawn(move || sim.cpu_main(i, core))
            })
            .collect();
        body();
        sim.request_stop();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or((false, ThreadUsage::default())))
            .collect::<Vec<_>>()
    });
    sim.final_checks();
    let pinned = cfg.pin && out.iter().all(|(p, _)| *p);
    (pinned, out.into_iter().map(|(_, u)| u).collect())
}

fn base_stats<P: Policy, const HZ: u32>(
    sim: &Sim<P, HZ>,
    cfg: &RunConfig,
    pinned: bool,
    usage: &[ThreadUsage],
    seconds: f64,
) -> RunStats {
    let gated = cfg.cpus <= core_count();
    let c = &sim.counters;
    let first = c
        .first_violation
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let sum = |f: fn(&crate::sim::SimCpu) -> u64| sim.cpus.iter().map(|c| f(c)).sum::<u64>();
    RunStats {
        scenario: cfg.scenario.name(),
        policy: P::NAME,
        logical_cpus: cfg.cpus,
        pinned,
        gated,
        descheduled: gated && usage.iter().any(ThreadUsage::descheduled),
        seconds,
        idle_transitions: sum(|c| c.idle_entries.load(Relaxed)),
        transitions: sum(|c| c.transitions.load(Relaxed)),
        kicks_sent: sum(|c| c.kicks_sent.load(Relaxed)),
        ilb_picks: sim.cpus.iter().map(|c| c.ilb_picks.load(Relaxed)).collect(),
        ilb_pick_spread: pick_spread(sim.cpus.iter().map(|c| c.ilb_picks.load(Relaxed))),
        ipis_delivered: sum(|c| c.ipis_delivered.load(Relaxed)),
        ilb_passes: sum(|c| c.ilb_passes.load(Relaxed)),
        tasks_completed: sum(|c| c.completed.load(Relaxed)),
        invisible_idle_ticks: c.invisible_idle_ticks.load(Relaxed),
        invariant_violations: c.invariant_violations.load(Relaxed),
        warnings: sim.m.warnings().total(sim.nr()),
        hotplug_cycles: c.hotplug_cycles.load(Relaxed),
        hotplug_refused: c.hotplug_refused.load(Relaxed),
        hotplug_checks: c.hotplug_checks.load(Relaxed),
        tasks_per_sec: None,
        burst_ms: None,
        pulled_to_nohz_full: None,
        idle_transitions_per_sec: None,
        pair_ns: None,
        irq_ns_per_call: None,
        transitions_per_sec: None,
        virtual_seconds: None,
        faults_injected: sum(|c| c.faults.load(Relaxed)) + c.hotplug_cycles.load(Relaxed),
        checks: sum(|c| c.checks.load(Relaxed)) + c.hotplug_checks.load(Relaxed),
        snapshots: c.snapshots.load(Relaxed),
        snapshots_skipped: c.snapshots_skipped.load(Relaxed),
        plant: cfg.plant.name(),
        first_violation: first.as_ref().map(|(w, _)| w.clone()),
        violation_after_transitions: first.as_ref().map(|(_, t)| *t),
        ..RunStats::empty(cfg.scenario.name(), P::NAME)
    }
}

/// Sleeps until `deadline`, doing `each_tick` once per `tick` of wall time.
fn tick_until(deadline: Instant, tick: Duration, mut each_tick: impl FnMut(Instant)) {
    let mut next = Instant::now() + tick;
    while Instant::now() < deadline {
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(deadline.saturating_duration_since(now)));
            continue;
        }
        next += tick;
        each_tick(now);
    }
}

fn visibility<P: Policy, const HZ: u32>(cfg: &RunConfig) -> Result<RunStats, String> {
    let n = cfg.cpus;
    let full: Vec<usize> = (n / 2..n).collect();
    let sim = Sim::<P, HZ>::new(n, &full, cfg.faults, None)?;
    // Each NO_HZ_FULL CPU starts with one task bound to it, long enough for its tick to stop
    // under it (the first tick's irq exit stops it), then idles until the first burst.
    for &i in &full {
        sim.enqueue(
            i,
            [Task {
                work_us: 5_000,
                burst: None,
                pinned: true,
            }],
        );
    }
    let tick = Duration::from_nanos(nohz::platform::tick_nsec(HZ));
    // Offered load: 75 % of the logical CPUs (more than the housekeeping half can carry), but
    // at most 90 % of the host's cores, so the host itself is never the bottleneck.
    let burst_every = Duration::from_millis(25);
    let load_cores = (0.75 * n as f64).min(0.9 * core_count() as f64);
    let burst_tasks = (load_cores * 25.0).round().max(1.0) as usize;
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(cfg.seconds);
    let mut next_burst = start + Duration::from_millis(50);
    let mut next_jump = start + Duration::from_millis(cfg.faults.jump_every_ms.max(1));
    let (pinned, usage) = with_cpus(&*sim, cfg, || {
        tick_until(deadline, tick, |now| {
            sim.sample_visibility();
            if now >= next_burst {
                sim.burst(0, burst_tasks, 1000);
                next_burst += burst_every;
            }
            if cfg.faults.jiffies_jump > 0 && now >= next_jump {
                sim.jump_jiffies();
                next_jump += Duration::from_millis(cfg.faults.jump_every_ms.max(1));
            }
        });
    });
    let secs = start.elapsed().as_secs_f64();
    let mut st = base_stats(&*sim, cfg, pinned, &usage, secs);
    st.tasks_per_sec = Some(st.tasks_completed as f64 / secs);
    let bursts = sim.bursts.lock().unwrap_or_else(|e| e.into_inner());
    let done: Vec<f64> = bursts
        .iter()
        .filter_map(|b| b.done.map(|d| (d - b.at).as_secs_f64() * 1e3))
        .collect();
    st.burst_ms = median(&done);
    st.pulled_to_nohz_full = Some(
        full.iter()
            .map(|&i| sim.cpus[i].pulled_in.load(Relaxed))
            .sum(),
    );
    Ok(st)
}

/// Every CPU runs enter+exit pairs for `secs`; returns ns per pair (median over CPUs) and the
/// threads' clocks.
fn pair_loop<P: Policy, const HZ: u32>(
    sim: &Sim<P, HZ>,
    cpus: &[usize],
    pin: bool,
    secs: f64,
) -> (Option<f64>, Vec<ThreadUsage>) {
    let cores = cores();
    let results: Vec<(f64, ThreadUsage)> = std::thread::scope(|s| {
        let hs: Vec<_> = cpus
            .iter()
            .map(|&i| {
                let core = (pin && !cores.is_empty()).then(|| cores[i % cores.len()]);
                s.spawn(move || {
                    if let Some(core) = core {
                        core_affinity::set_for_current(core);
                    }
                    sim.pair_thread(i, Duration::from_secs_f64(secs))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or((f64::NAN, ThreadUsage::default())))
            .collect()
    });
    let ns: Vec<f64> = results.iter().map(|(ns, _)| *ns).collect();
    (median(&ns), results.into_iter().map(|(_, u)| u).collect())
}

fn churn<P: Policy, const HZ: u32>(cfg: &RunConfig) -> Result<RunStats, String> {
    let n = cfg.cpus;
    let wake = SelfWake {
        min_ticks: 1,
        max_ticks: 3,
        min_work_us: 300,
        max_work_us: 2500,
    };
    let sim = Sim::<P, HZ>::new(n, &[], cfg.faults, Some(wake))?;
    let tick = Duration::from_nanos(nohz::platform::tick_nsec(HZ));
    let phase = cfg.seconds * 0.6;
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(phase);
    let mut next_jump = start + Duration::from_millis(cfg.faults.jump_every_ms.max(1));
    let (pinned, mut usage) = with_cpus(&*sim, cfg, || {
        tick_until(deadline, tick, |now| {
            sim.sample_visibility();
            if cfg.faults.jiffies_jump > 0 && now >= next_jump {
                sim.jump_jiffies();
                next_jump += Duration::from_millis(cfg.faults.jump_every_ms.max(1));
            }
        });
    });
    let churn_secs = start.elapsed().as_secs_f64();
    let all: Vec<usize> = (0..n).collect();
    let (pair_ns, pair_usage) = pair_loop(&*sim, &all, cfg.pin, cfg.seconds - phase);
    usage.extend(pair_usage);
    let mut st = base_stats(&*sim, cfg, pinned, &usage, start.elapsed().as_secs_f64());
    st.idle_transitions_per_sec = Some(st.idle_transitions as f64 / churn_secs);
    st.pair_ns = pair_ns;
    Ok(st)
}

fn irqtime<P: Policy, const HZ: u32>(cfg: &RunConfig) -> Result<RunStats, String> {
    let n = cfg.cpus;
    let sim = Sim::<P, HZ>::new(n, &[], cfg.faults, None)?;
    let cores = cores();
    let secs = cfg.seconds;
    let start = Instant::now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Per thread: ns per irq call (even CPUs) or per enter/exit pair (odd), clocks, pinned.
    type Thread = (Result<f64, f64>, ThreadUsage, bool);
    let results: Vec<Thread> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let core = (cfg.pin && !cores.is_empty()).then(|| cores[i % cores.len()]);
                let (sim, stop) = (&*sim, &stop);
                s.spawn(move || {
                    let pinned = core.is_some_and(core_affinity::set_for_current);
                    if i % 2 == 0 {
                        let (ns, u) = sim.irq_stream_thread(i, Duration::from_secs_f64(secs));
                        stop.store(true, Relaxed);
                        (Ok(ns), u, pinned)
                    } else {
                        let (ns, u) = sim.pair_thread_until(i, stop);
                        (Err(ns), u, pinned)
                    }
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or((Err(f64::NAN), ThreadUsage::default(), false))
            })
            .collect()
    });
    let usage: Vec<ThreadUsage> = results.iter().map(|(_, u, _)| *u).collect();
    let irq: Vec<f64> = results.iter().filter_map(|(r, _, _)| r.ok()).collect();
    let pairs: Vec<f64> = results.iter().filter_map(|(r, _, _)| r.err()).collect();
    let pinned = cfg.pin && results.iter().all(|(_, _, p)| *p);
    let mut st = base_stats(&*sim, cfg, pinned, &usage, start.elapsed().as_secs_f64());
    st.irq_ns_per_call = median(&irq);
    // The enter/exit pairs writing the nohz line meanwhile (the stream's neighbours).
    st.pair_ns = median(&pairs);
    Ok(st)
}

impl<P: Policy, const HZ: u32> Sim<P, HZ> {
    fn pair_thread(&self, i: usize, for_: Duration) -> (f64, ThreadUsage) {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let deadline = Instant::now() + for_;
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                stop.store(true, Relaxed);
            });
            self.pair_thread_until(i, &stop)
        })
    }

    /// Back-to-back `nohz_balance_enter_idle` + `nohz_balance_exit_idle` on CPU `i` until
    /// `stop`; returns ns per pair and the thread's clocks.
    fn pair_thread_until(
        &self,
        i: usize,
        stop: &std::sync::atomic::AtomicBool,
    ) -> (f64, ThreadUsage) {
        let cpu = self.cpu(i);
        self.set_current(Some(i));
        let clock = crate::measure::ThreadClock::start();
        let t0 = Instant::now();
        let mut pairs = 0u64;
        while !stop.load(Relaxed) {
            for _ in 0..256 {
                self.m.nohz_balance_enter_idle(cpu, self);
                self.m.nohz_balance_exit_idle(cpu, self);
            }
            pairs += 256;
        }
        let ns = t0.elapsed().as_nanos() as f64 / pairs.max(1) as f64;
        self.set_current(None);
        (ns, clock.finish())
    }

    /// A stream of interrupt entries and exits on CPU `i` for `for_`; returns ns per
    /// `irqtime_account_irq` call and the thread's clocks.
    fn irq_stream_thread(&self, i: usize, for_: Duration) -> (f64, ThreadUsage) {
        let cpu = self.cpu(i);
        self.set_current(Some(i));
        let clock = crate::measure::ThreadClock::start();
        let t0 = Instant::now();
        let deadline = t0 + for_;
        let mut calls = 0u64;
        let mut sched_clock = 0u64;
        while Instant::now() < deadline {
            for _ in 0..512 {
                sched_clock += 100;
                self.m
                    .irqtime_account_irq(cpu, IrqContext::Task, sched_clock);
                sched_clock += 50;
                self.m
                    .irqtime_account_irq(cpu, IrqContext::Hardirq, sched_clock);
            }
            calls += 1024;
        }
        let ns = t0.elapsed().as_nanos() as f64 / calls.max(1) as f64;
        self.set_current(None);
        (ns, clock.finish())
    }
}
