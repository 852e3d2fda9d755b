//! The engine's scenarios: the seeds' machines and loads, and the 768-CPU frontier.
//!
//! Each is a machine shape and a workload at a default size; `--cpus` scales the machine
//! (keeping its shape where it divides, see [`VirtualScenario::shape`]).

use super::Outcome;
use super::cost::KERNEL_FNS;
use super::topo::Shape;
use super::work::{Buffer, Hackbench, Llama, Source, TaskKind, Workload};
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
    /// Seed 001's llama load: `llama-batched-bench` generating tokens with a team of
    /// `--threads` threads (80 by default; the seed ran several counts), on seed 001's machine
    /// as `v-visibility` has it (80 CPUs, the last 72 NO_HZ_FULL).
    Llama,
    /// Seed 001's hackbench in process mode, `--groups` groups (10, hackbench's default), on
    /// the same machine.
    HackbenchProcess,
    /// The same in thread mode.
    HackbenchThread,
    /// Seed 000's `hackbench 40 process 10000 loops`, continuous, on seed 000's 480-CPU
    /// machine as `v-churn` has it.
    Hackbench480,
}

/// The parameters of the seeds' benchmark loads, and their sources. The full table, with
/// each derivation and its sensitivity: harness/README.md, "The seeds' benchmarks as loads".
pub mod params {
    /// Graph nodes of a Llama-3.2-1B decode: its llama.cpp log says "graph nodes = 566". One
    /// barrier round per node.
    pub const LLAMA_NODES: u32 = 566;

    /// A decode step of `llama-batched-bench` at batch size 1 (tg, PP512 TG256) with Llama
    /// 3.2 1B (Q4_K_4, Ampere's llama.cpp build) on an 80-core Ampere Altra (OCI A1), by thread
    /// count: `tg_avg_latency_sec` of AmpereComputingAI/llama.cpp
    /// benchmarks/example_results/a1/ampere_optimized_llama.cpp_r2.0.0, in ns. Counts below 48
    /// ran as several copies at once (80 / T of them), sharing the machine's memory.
    pub const LLAMA_STEP_NS: [(usize, u64); 11] = [
        (8, 33_966_016),
        (10, 26_739_746),
        (12, 20_509_766),
        (16, 17_284_375),
        (20, 14_594_727),
        (24, 12_200_521),
        (32, 9_460_938),
        (40, 9_181_641),
        (48, 7_664_063),
        (64, 7_671_875),
        (80, 7_796_875),
    ];

    /// The main thread's own work between two decodes: what llama.cpp's graph reuse saves a
    /// 1B model per token (ik_llama.cpp PR #94: tg128 of a Llama 1B Q4_0 519.27 -> 538.75 t/s,
    /// 1.9258 - 1.8562 ms per token), in ns.
    pub const LLAMA_MAIN_NS: u64 = 70_000;

    /// libgomp's spin count before a futex sleep when `OMP_WAIT_POLICY` is unset
    /// (`GOMP_SPINCOUNT`'s default), and when the team outnumbers the CPUs.
    pub const GOMP_SPINCOUNT: u64 = 300_000;
    /// See [`GOMP_SPINCOUNT`].
    pub const GOMP_THROTTLED_SPINCOUNT: u64 = 100;

    /// One iteration of libgomp's spin loop on Neoverse N1 (Altra's core), in picoseconds: a
    /// `yield` loop iteration measured at 0.400 ns on AWS Graviton2 (Neoverse N1; rust-lang/rust
    /// PR #84725). aarch64 libgomp's `cpu_relax` is `yield`.
    pub const SPIN_ITER_PS: u64 = 400;

    /// hackbench's senders and receivers per group (`num_fds`).
    pub const HACKBENCH_FDS: usize = 20;

    /// hackbench's default group count.
    pub const HACKBENCH_GROUPS: usize = 10;

    /// CPU time per message in process mode, in ns: `perf bench sched messaging` (10 groups of
    /// processes, 100 loops: 400,000 messages) took 0.449 s on a 4-CPU Core i7 (Lenovo P50s,
    /// Zan Aziz's 5.16.17-rc1 test report), 4 CPUs x 0.449 s / 400,000 = 4,490 ns, split
    /// evenly between the write and the read (an assumption).
    pub const HACKBENCH_PROCESS_MSG_NS: u64 = 4_490;

    /// The same in thread mode: the process-mode cost times the ratio of the two modes' wall
    /// time per message in perf-bench's own example (tools/perf/Documentation/perf-bench.txt:
    /// 0.308 s for 400,000 messages of processes, 0.582 s for 800,000 of threads), 0.9448.
    pub const HACKBENCH_THREAD_MSG_NS: u64 = 4_242;
}

/// What a scenario's load may be asked for on the command line: the llama team's size,
/// hackbench's groups, and any parameter by name (the sensitivity runs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOpts {
    /// `--threads`: the llama team (main thread included).
    pub threads: Option<usize>,
    /// `--groups`: hackbench's groups.
    pub groups: Option<usize>,
    /// `--load-param NAME=VALUE`, in order.
    pub params: Vec<(String, u64)>,
}

/// The load parameters `--load-param` takes, per load.
pub const LLAMA_PARAMS: [&str; 5] = [
    "nodes",
    "slice-ns",
    "main-ns",
    "spin-ns",
    "throttled-spin-ns",
];
/// See [`LLAMA_PARAMS`].
pub const HACKBENCH_PARAMS: [&str; 6] = [
    "loops",
    "write-ns",
    "read-ns",
    "capacity",
    "wake-writers-at",
    "wake-all-writers",
];

impl VirtualScenario {
    /// The scenario's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            VirtualScenario::Churn => "v-churn",
            VirtualScenario::Visibility => "v-visibility",
            VirtualScenario::Irqtime => "v-irqtime",
            VirtualScenario::Frontier => "frontier",
            VirtualScenario::Llama => "llama",
            VirtualScenario::HackbenchProcess => "hackbench-process",
            VirtualScenario::HackbenchThread => "hackbench-thread",
            VirtualScenario::Hackbench480 => "hackbench-480",
        }
    }

    /// The machine size the scenario models.
    pub fn default_cpus(self) -> usize {
        match self {
            VirtualScenario::Churn | VirtualScenario::Hackbench480 => 480,
            VirtualScenario::Visibility
            | VirtualScenario::Llama
            | VirtualScenario::HackbenchProcess
            | VirtualScenario::HackbenchThread => 80,
            VirtualScenario::Irqtime => 224,
            VirtualScenario::Frontier => 768,
        }
    }

    /// The machine at `cpus` CPUs: the scenario's shape where `cpus` divides into it, else
    /// the nearest simpler one (no SMT, caches and sockets of the whole machine).
    pub fn shape(self, cpus: usize) -> Shape {
        let want = match self {
            VirtualScenario::Churn | VirtualScenario::Hackbench480 => Shape {
                cpus,
                smt: 2,
                llc: cpus / 4,
                socket: cpus / 4,
                cpusets: 1,
                nohz_full: 0,
            },
            VirtualScenario::Visibility
            | VirtualScenario::Llama
            | VirtualScenario::HackbenchProcess
            | VirtualScenario::HackbenchThread => Shape {
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
            VirtualScenario::Churn | VirtualScenario::Hackbench480 => super::cost::FlagLine::Own,
            _ => super::cost::FlagLine::Nohz,
        }
    }

    /// Whether irq-time accounting is on.
    pub fn irqtime(self) -> bool {
        self == VirtualScenario::Irqtime
    }

    /// Whether the scenario's load is one of the seeds' benchmarks (llama, hackbench), whose
    /// throughput the report carries.
    pub fn is_benchmark(self) -> bool {
        matches!(
            self,
            VirtualScenario::Llama
                | VirtualScenario::HackbenchProcess
                | VirtualScenario::HackbenchThread
                | VirtualScenario::Hackbench480
        )
    }

    /// The load on `shape`, at its defaults.
    pub fn workload(self, shape: &Shape) -> Workload {
        self.workload_with(shape, &LoadOpts::default())
            .expect("the defaults are valid")
    }

    /// The load on `shape` with `opts`: an error names an option the scenario does not take,
    /// or a parameter its load does not have.
    pub fn workload_with(self, shape: &Shape, opts: &LoadOpts) -> Result<Workload, String> {
        let name = self.name();
        if opts.threads.is_some() && self != VirtualScenario::Llama {
            return Err(format!("--threads applies to --scenario llama, not {name}"));
        }
        if opts.groups.is_some() && (!self.is_benchmark() || self == VirtualScenario::Llama) {
            return Err(format!(
                "--groups applies to the hackbench scenarios, not {name}"
            ));
        }
        if !opts.params.is_empty() && !self.is_benchmark() {
            return Err(format!(
                "--load-param applies to the llama and hackbench scenarios, not {name}"
            ));
        }
        let source = match self {
            VirtualScenario::Llama => Source::Llama(llama(opts)?),
            VirtualScenario::HackbenchProcess => {
                Source::Hackbench(hackbench(opts, params::HACKBENCH_PROCESS_MSG_NS, 10)?)
            }
            VirtualScenario::HackbenchThread => {
                Source::Hackbench(hackbench(opts, params::HACKBENCH_THREAD_MSG_NS, 10)?)
            }
            VirtualScenario::Hackbench480 => {
                Source::Hackbench(hackbench(opts, params::HACKBENCH_PROCESS_MSG_NS, 40)?)
            }
            _ => return Ok(self.classic(shape)),
        };
        Ok(Workload {
            sources: vec![source],
        })
    }

    /// The load of the scenarios before the seeds' benchmarks.
    fn classic(self, shape: &Shape) -> Workload {
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
            VirtualScenario::Llama
            | VirtualScenario::HackbenchProcess
            | VirtualScenario::HackbenchThread
            | VirtualScenario::Hackbench480 => unreachable!("built by workload_with"),
        }
    }
}

/// The llama load at its defaults (the team's size from `--threads`, 80 by default), with
/// `--load-param`s applied.
fn llama(opts: &LoadOpts) -> Result<Llama, String> {
    let threads = opts.threads.unwrap_or(80);
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    // The measured step of the largest thread count at most `threads` (else the smallest).
    let step = params::LLAMA_STEP_NS
        .iter()
        .rev()
        .find(|&&(t, _)| t <= threads)
        .unwrap_or(&params::LLAMA_STEP_NS[0])
        .1;
    let nodes = params::LLAMA_NODES;
    let spin = |count: u64| count * params::SPIN_ITER_PS / 1000;
    let mut l = Llama {
        on: 0,
        threads,
        nodes,
        slice_ns: (step - params::LLAMA_MAIN_NS) / u64::from(nodes),
        main_ns: params::LLAMA_MAIN_NS,
        spin_ns: spin(params::GOMP_SPINCOUNT),
        throttled_spin_ns: spin(params::GOMP_THROTTLED_SPINCOUNT),
    };
    for (name, v) in &opts.params {
        match name.as_str() {
            "nodes" => l.nodes = u32::try_from(*v).map_err(|_| "nodes: too large")?,
            "slice-ns" => l.slice_ns = *v,
            "main-ns" => l.main_ns = *v,
            "spin-ns" => l.spin_ns = *v,
            "throttled-spin-ns" => l.throttled_spin_ns = *v,
            _ => return Err(unknown_param(name, &LLAMA_PARAMS)),
        }
    }
    if l.nodes == 0 || l.slice_ns == 0 {
        return Err("llama: nodes and slice-ns must be at least 1".into());
    }
    Ok(l)
}

/// A hackbench load of `groups` groups by default (or `--groups`), `msg_ns` of CPU per
/// message split evenly between its write and its read, over sockets, continuous; with
/// `--load-param`s applied.
fn hackbench(opts: &LoadOpts, msg_ns: u64, groups: usize) -> Result<Hackbench, String> {
    let mut h = Hackbench {
        on: 0,
        groups: opts.groups.unwrap_or(groups),
        fds: params::HACKBENCH_FDS,
        loops: 0,
        write_ns: msg_ns / 2,
        read_ns: msg_ns - msg_ns / 2,
        buffer: Buffer::SOCKET,
    };
    if h.groups == 0 {
        return Err("--groups must be at least 1".into());
    }
    for (name, v) in &opts.params {
        let count = || usize::try_from(*v).map_err(|_| format!("{name}: too large"));
        match name.as_str() {
            "loops" => h.loops = u32::try_from(*v).map_err(|_| "loops: too large")?,
            "write-ns" => h.write_ns = *v,
            "read-ns" => h.read_ns = *v,
            "capacity" => h.buffer.capacity = count()?,
            "wake-writers-at" => h.buffer.wake_writers_at = count()?,
            "wake-all-writers" => h.buffer.wake_all_writers = *v != 0,
            _ => return Err(unknown_param(name, &HACKBENCH_PARAMS)),
        }
    }
    if h.buffer.capacity == 0 || h.buffer.wake_writers_at >= h.buffer.capacity {
        return Err("hackbench: capacity must be at least 1 and above wake-writers-at".into());
    }
    Ok(h)
}

fn unknown_param(name: &str, known: &[&str]) -> String {
    format!(
        "no load parameter `{name}` for this scenario (it takes {})",
        known.join(", ")
    )
}

/// A line for the report's notes: the load's parameters, for the seeds' benchmarks.
pub fn load_note(w: &Workload) -> Option<String> {
    w.sources.iter().find_map(|s| match s {
        Source::Llama(l) => Some(format!(
            "llama team of {} threads (main included), {} nodes a decode, {} ns a slice, main \
             thread {} ns between decodes, spin {} ns (throttled {} ns)",
            l.threads, l.nodes, l.slice_ns, l.main_ns, l.spin_ns, l.throttled_spin_ns
        )),
        Source::Hackbench(h) => Some(format!(
            "hackbench {} groups of {}+{}, {}, write {} ns, read {} ns, buffer {} messages \
             (writers woken at {}, {})",
            h.groups,
            h.fds,
            h.fds,
            if h.loops == 0 {
                "continuous".to_string()
            } else {
                format!("{} loops", h.loops)
            },
            h.write_ns,
            h.read_ns,
            h.buffer.capacity,
            h.buffer.wake_writers_at,
            if h.buffer.wake_all_writers {
                "all"
            } else {
                "one by one"
            }
        )),
        _ => None,
    })
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
        arrivals: Some(o.arrivals),
        device_interrupts: Some(o.device_interrupts),
        busy_pct: pct(o.busy_ns, o.busy_ns + o.idle_ns),
        due_tick_pct: pct(o.due_ticks, o.busy_ticks),
        ilb_passes_per_sec: per_sec(o.ilb_passes),
        ilb_top_share_pct: pct(o.ilb_duty.iter().copied().max().unwrap_or(0), o.ilb_passes),
        invisible_idle_pct: pct(o.invisible_idle_ns, o.idle_ns),
        plant,
        throughput: Some(throughput(scenario, o).0),
        throughput_unit: Some(throughput(scenario, o).1),
        idle_while_waiting_ms_per_s: Some(o.idle_while_waiting_ms_per_s),
        runnable_wait_us_p50: o.runnable_wait_us_p50,
        runnable_wait_us_p99: o.runnable_wait_us_p99,
        ilb_cpu_ms_per_s: Some(o.ilb_cpu_ms_per_s),
        ilb_busiest_share: Some(o.ilb_busiest_share),
        ilb_domains_ms_per_s: Some(o.ilb_domains_ms_per_s),
        ilb_blocked_ms_per_s: Some(o.ilb_blocked_ms_per_s),
        ilb_rq_lock_ms_per_s: Some(o.ilb_rq_lock_ms_per_s),
        newidle_cpu_ms_per_s: Some(o.newidle_cpu_ms_per_s),
        periodic_cpu_ms_per_s: Some(o.periodic_cpu_ms_per_s),
        pulled_newidle_per_sec: per_sec(o.pulled_newidle),
        pulled_periodic_per_sec: per_sec(o.pulled_periodic),
        pulled_ilb_per_sec: per_sec(o.pulled_ilb),
        due_tick_fraction: (o.busy_ticks > 0).then(|| o.due_ticks as f64 / o.busy_ticks as f64),
        ilb_passes_aborted: Some(o.ilb_passes_aborted),
        next_balance_advance: Some(pairs(&o.next_balance_advance)),
        next_balance_ahead: Some(pairs(&o.next_balance_ahead)),
        due_jiffy_fraction: o.due_jiffy_fraction,
        balance_costs: Some(o.balance_costs.clone()),
        ..cost_stats(o, RunStats::empty(scenario.name(), o.policy))
    }
}

/// A histogram as one field: `value:count` pairs, space-separated.
fn pairs(h: &[(i64, u64)]) -> String {
    h.iter()
        .map(|(j, n)| format!("{j}:{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The workload's own throughput, per simulated second measured (after the warm-up): what
/// the load counts itself (llama decodes, hackbench messages), else batches for the batch
/// load, else tasks completed; and its unit.
fn throughput(scenario: VirtualScenario, o: &Outcome) -> (f64, &'static str) {
    match o.work_unit {
        "decodes" => (o.work_done / o.measured_seconds, "decodes/s"),
        "messages" => (o.work_done / o.measured_seconds, "messages/s"),
        _ if scenario == VirtualScenario::Visibility => {
            (o.batches_done as f64 / o.sim_seconds, "batches/s")
        }
        _ => (o.tasks_completed as f64 / o.sim_seconds, "tasks/s"),
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
            VirtualScenario::Llama,
            VirtualScenario::HackbenchProcess,
            VirtualScenario::HackbenchThread,
            VirtualScenario::Hackbench480,
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
        assert_eq!(VirtualScenario::Llama.shape(80), v);
        assert_eq!(VirtualScenario::HackbenchThread.shape(80), v);
        let c = VirtualScenario::Churn.shape(480);
        assert_eq!(VirtualScenario::Hackbench480.shape(480), c);
    }

    fn only(w: Workload) -> Source {
        assert_eq!(w.sources.len(), 1);
        w.sources[0].clone()
    }

    #[test]
    fn the_llama_slice_comes_from_the_measured_step_of_its_thread_count() {
        let shape = VirtualScenario::Llama.shape(80);
        let with = |threads| {
            let opts = LoadOpts {
                threads: Some(threads),
                ..Default::default()
            };
            match only(VirtualScenario::Llama.workload_with(&shape, &opts).unwrap()) {
                Source::Llama(l) => l,
                s => panic!("{s:?}"),
            }
        };
        // 80 threads: (7,796,875 - 70,000) / 566 ns a slice; 300,000 spins of 0.4 ns.
        let l = with(80);
        assert_eq!((l.threads, l.nodes, l.slice_ns), (80, 566, 13_651));
        assert_eq!((l.spin_ns, l.throttled_spin_ns), (120_000, 40));
        assert_eq!(with(16).slice_ns, (17_284_375 - 70_000) / 566);
        // 70 threads take the step measured at 64, 6 the one at 8.
        assert_eq!(with(70).slice_ns, with(64).slice_ns);
        assert_eq!(with(6).slice_ns, with(8).slice_ns);
    }

    #[test]
    fn load_options_are_checked_against_the_scenario() {
        let shape = VirtualScenario::HackbenchProcess.shape(80);
        let opts = |threads, groups, params: &[(&str, u64)]| LoadOpts {
            threads,
            groups,
            params: params.iter().map(|&(n, v)| (n.to_string(), v)).collect(),
        };
        let hb = VirtualScenario::HackbenchProcess;
        let w = hb
            .workload_with(&shape, &opts(None, Some(3), &[("capacity", 640)]))
            .unwrap();
        let Source::Hackbench(h) = only(w) else {
            panic!()
        };
        assert_eq!((h.groups, h.fds, h.loops), (3, 20, 0));
        assert_eq!(
            (h.write_ns, h.read_ns, h.buffer.capacity),
            (2_245, 2_245, 640)
        );
        let err = |s: VirtualScenario, o: LoadOpts| s.workload_with(&shape, &o).unwrap_err();
        assert!(err(hb, opts(Some(4), None, &[])).contains("--threads applies"));
        assert!(err(VirtualScenario::Llama, opts(None, Some(4), &[])).contains("--groups"));
        assert!(err(hb, opts(None, None, &[("spin-ns", 1)])).contains("no load parameter"));
        assert!(err(hb, opts(None, None, &[("wake-writers-at", 256)])).contains("capacity"));
        assert!(err(VirtualScenario::Churn, opts(None, None, &[("loops", 1)])).contains("--load"));
        let thread = only(VirtualScenario::HackbenchThread.workload(&shape));
        let Source::Hackbench(t) = thread else {
            panic!()
        };
        assert!(t.write_ns < h.write_ns, "threads cost less a message");
    }
}
