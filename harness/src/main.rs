//! `nohz-stress`: run the `nohz` crate on pinned host threads and compare policies. With no
//! arguments: every measuring scenario, `Legacy` and `Patched` interleaved, 5 runs each.

use clap::{Parser, ValueEnum};
use nohz::{
    HegdeHk, Khan, KhanNextBalance, KhanRoundRobin, Legacy, Paced, Patched, Scalable, Seed000,
};

/// The `Sharded` policy the harness runs: the default layout (each LLC split into shards of
/// at most 64 CPUs), `LocalFirst`, `Hint`, with room for the harness's whole capacity
/// ([`CAP`](nohz_stress::sim::CAP) / 64 shards).
type ShardedDefault = nohz::Sharded<{ nohz_stress::sim::CAP / 64 }>;
use nohz_stress::engine::scenario::VirtualScenario;
use nohz_stress::engine::{self, Config as EngineConfig, Outcome};
use nohz_stress::measure::interleave_many;
use nohz_stress::report::{
    EXIT_INCONCLUSIVE, EXIT_USAGE, EXIT_VIOLATION, MIN_KEPT, Report, compare,
};
use nohz_stress::scenario::{RunConfig, RunStats, Scenario, core_count, run};
use nohz_stress::sim::{CAP, Faults, Plant};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

/// Which policies to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    /// Legacy and Patched, interleaved, with Patched's ratio to Legacy.
    Both,
    /// Every policy (Legacy, Patched, Scalable, Sharded), interleaved, with each one's ratio to
    /// Legacy.
    All,
    /// The kernel with the seeds applied.
    Patched,
    /// The kernel before the seeds.
    Legacy,
    /// Beyond the kernel: Patched with the nohz flags read before written.
    Scalable,
    /// Beyond the kernel: Scalable with the idle mask split into shards of at most 64 CPUs
    /// per LLC, with a sticky summary (`LocalFirst`, `Hint`).
    Sharded,
    /// Legacy and the kernel with seed 000 alone (before seeds 001 and 003), interleaved:
    /// the two kernels seed 000's own numbers compare.
    Seed000,
    /// The fixes posted to LKML in 2026, each on Patched, interleaved with Patched and
    /// compared with it: khan-next-balance, khan-round-robin, khan, hegde-hk.
    Posted,
    /// Posted: Khan's patch 1 (nohz.next_balance scaled by the idle count; reconstructed).
    KhanNextBalance,
    /// Posted: Khan's patch 2 (find_new_ilb round robin from nohz.ilb_cpu_last).
    KhanRoundRobin,
    /// Posted: both of Khan's patches.
    Khan,
    /// Posted: Hegde's early housekeeping test of the kick.
    HegdeHk,
    /// Beyond the kernel: Scalable with the ILB's blocked-load refresh paced by
    /// nohz.next_blocked, no NEXT-only kick a jiffy before a BALANCE kick, an idle CPU's first
    /// balance held two jiffies after its newidle look, and the ILB picked from a start hashed
    /// from jiffies.
    Paced,
    /// Every policy, interleaved, each compared with Patched: Patched, Legacy, Scalable,
    /// Sharded, the posted fixes (khan-next-balance, khan-round-robin, khan, hegde-hk) and
    /// Paced (issue 39's matrix, `ci/frontier.sh`).
    Every,
}

/// A policy a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pol {
    Legacy,
    Patched,
    Scalable,
    Sharded,
    Seed000,
    KhanNextBalance,
    KhanRoundRobin,
    Khan,
    HegdeHk,
    Paced,
}

impl Pol {
    fn name(self) -> &'static str {
        match self {
            Pol::Legacy => "legacy",
            Pol::Patched => "patched",
            Pol::Scalable => "scalable",
            Pol::Sharded => "sharded",
            Pol::Seed000 => "seed000",
            Pol::KhanNextBalance => "khan-next-balance",
            Pol::KhanRoundRobin => "khan-round-robin",
            Pol::Khan => "khan",
            Pol::HegdeHk => "hegde-hk",
            Pol::Paced => "paced",
        }
    }
}

impl PolicyArg {
    /// The policies, baseline (Legacy) first when there is a comparison.
    fn policies(self) -> Vec<Pol> {
        match self {
            PolicyArg::Both => vec![Pol::Legacy, Pol::Patched],
            PolicyArg::All => vec![Pol::Legacy, Pol::Patched, Pol::Scalable, Pol::Sharded],
            PolicyArg::Patched => vec![Pol::Patched],
            PolicyArg::Legacy => vec![Pol::Legacy],
            PolicyArg::Scalable => vec![Pol::Scalable],
            PolicyArg::Sharded => vec![Pol::Sharded],
            PolicyArg::Seed000 => vec![Pol::Legacy, Pol::Seed000],
            PolicyArg::Posted => vec![
                Pol::Patched,
                Pol::KhanNextBalance,
                Pol::KhanRoundRobin,
                Pol::Khan,
                Pol::HegdeHk,
            ],
            PolicyArg::KhanNextBalance => vec![Pol::KhanNextBalance],
            PolicyArg::KhanRoundRobin => vec![Pol::KhanRoundRobin],
            PolicyArg::Khan => vec![Pol::Khan],
            PolicyArg::HegdeHk => vec![Pol::HegdeHk],
            PolicyArg::Paced => vec![Pol::Paced],
            PolicyArg::Every => vec![
                Pol::Patched,
                Pol::Legacy,
                Pol::Scalable,
                Pol::Sharded,
                Pol::KhanNextBalance,
                Pol::KhanRoundRobin,
                Pol::Khan,
                Pol::HegdeHk,
                Pol::Paced,
            ],
        }
    }
}

/// Which scenarios to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScenarioArg {
    /// The three measuring scenarios (not the soak).
    All,
    /// Seed 001: idle NO_HZ_FULL CPUs visible to the idle balancer.
    Visibility,
    /// Seed 000: idle enter/exit under churn.
    Churn,
    /// Seed 003: irq-time accounting beside the nohz line.
    Irqtime,
    /// The soak: every kernel path on a virtual clock, faults and invariant checks.
    Soak,
    /// The frontier: 768 CPUs in two cpusets of 384, mostly idle, churning (`--engine
    /// virtual` only).
    Frontier,
    /// Seed 001's llama-batched-bench on its 80-CPU machine, a team of `--threads` threads
    /// (`--engine virtual` only).
    Llama,
    /// Seed 001's hackbench, process mode, `--groups` groups, on its 80-CPU machine
    /// (`--engine virtual` only).
    HackbenchProcess,
    /// The same in thread mode (`--engine virtual` only).
    HackbenchThread,
    /// Seed 000's `hackbench 40 process 10000 loops` on its 480-CPU machine, continuous
    /// (`--engine virtual` only).
    #[value(name = "hackbench-480")]
    Hackbench480,
}

/// How the machine is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EngineArg {
    /// One pinned host thread per logical CPU, on the host's clock.
    Threads,
    /// The deterministic virtual-time engine: every CPU on one thread, simulated time, the
    /// invariants checked between events. `churn`, `visibility` and `irqtime` are then the
    /// seeds' machines (480, 80 and 224 CPUs), `frontier` 768 CPUs.
    Virtual,
}

/// The virtual engine's cpuidle governor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum GovernorArg {
    /// No cpuidle driver: every idle pass stops the tick.
    None,
    /// A menu-like governor: the tick stops only when the predicted idle period is at least
    /// a tick long.
    Menu,
}

/// Where the cost model puts the plain irq-time flag of the kernels before seed 003.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FlagLineArg {
    /// In the `nohz` line, as the x86 build seed 003 profiled had it.
    NohzLine,
    /// On a line of its own (another build's link order).
    OwnLine,
}

/// A bug to plant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PlantArg {
    /// Nothing: the crate as it is.
    None,
    /// The hotplug fix reverted: the active bit cleared after the grace period.
    HotplugOrder,
    /// The kick's handler never frees the csd.
    CsdLeak,
    /// The ILB pass's fence removed (probe builds only).
    IlbFence,
    /// `--engine virtual` only: the embedder forgets `update_rq` when it queues a task on
    /// another CPU.
    LostUpdateRq,
    /// `--engine virtual` only: `rq.has_blocked_load` cleared unconditionally after a decay
    /// that found nothing left, as the crate did before the clear became conditional.
    BlockedClear,
}

impl PlantArg {
    fn plant(self) -> Plant {
        match self {
            PlantArg::None => Plant::None,
            PlantArg::HotplugOrder => Plant::HotplugOrder,
            PlantArg::CsdLeak => Plant::CsdLeak,
            PlantArg::IlbFence => Plant::IlbFence,
            PlantArg::LostUpdateRq | PlantArg::BlockedClear => Plant::None,
        }
    }
}

const AFTER_HELP: &str = "\
Exit status:
  0  done (with --check: no violation; with --strict: no violation, nothing inconclusive)
  1  --check or --strict: an invariant violation, crate warning or invisible idle tick under a
     policy other than legacy
  2  bad usage (a flag's value, too few CPUs for a scenario, a failed run)
  3  --strict only: a comparison was inconclusive (fewer than 3 kept runs of a policy)";

/// Stress-run the nohz crate on host threads pinned to cores, comparing policies, or soak it.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None, after_help = AFTER_HELP)]
struct Cli {
    /// Scenario to run.
    #[arg(long, value_enum, default_value_t = ScenarioArg::All)]
    scenario: ScenarioArg,

    /// How to run the machine: host threads, or the deterministic virtual-time engine.
    #[arg(long, value_enum, default_value_t = EngineArg::Threads)]
    engine: EngineArg,

    /// `--engine virtual`: the seed of the first run (run k uses seed + k); the same seed
    /// gives the same numbers on any host.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Print the contention cost model's predictions for the contention bench's two-core
    /// pairs (T1, T3, T8a) on this host and exit; needs the counting build
    /// (`RUSTFLAGS='--cfg nohz_linecount'`). `ci/engine-validate.sh` compares them with the
    /// bench.
    #[arg(long)]
    validate_model: bool,

    /// The cost model's `t_x` within a socket, ns (counting build: `--engine virtual` and
    /// `--validate-model`). About 70 on this host; `ci/engine-validate.sh` passes half the
    /// bench's measured round trip.
    #[arg(long, default_value_t = 70, value_name = "NS", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    t_local: u64,

    /// The cost model's `t_x` across sockets, ns.
    #[arg(long, default_value_t = 200, value_name = "NS", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    t_remote: u64,

    /// The cost model's cost of a locked RMW on a line the CPU already has, ns (counting
    /// build): about 6 on the host the defaults come from; `ci/engine-validate.sh` passes the
    /// bench's `rmw-local` pattern.
    #[arg(long, default_value_t = 6, value_name = "NS", value_parser = clap::value_parser!(u64).range(1..=1000))]
    t_rmw: u64,

    /// The cost model's transfer for a locked RMW, in per cent of `t_x` (counting build). The
    /// calibration patterns of `ci/engine-validate.sh` put it near 125 on this host.
    #[arg(long, default_value_t = 100, value_name = "PCT", value_parser = clap::value_parser!(u64).range(50..=400))]
    rmw_transfer_pct: u64,

    /// When a request for a line reaches the core that has it, in per cent of `t_x` after the
    /// transfer starts (counting build); that core keeps using the line until then.
    #[arg(long, default_value_t = 50, value_name = "PCT", value_parser = clap::value_parser!(u64).range(0..=100))]
    leave_pct: u64,

    /// `--validate-model`: fit the cost model's host parameters (`t_rmw`, `t_x`, the leave
    /// point) to the contention bench's calibration patterns, in ns: a locked RMW on an owned
    /// line, one line incremented by both cores (per round), two lines in turn (per round),
    /// e.g. `9.5,33.5,82.4` (T1's `rmw-local`, `rmw-1line`, `rmw-2line` means). Overrides
    /// `--t-local`, `--t-rmw` and `--leave-pct`; `ci/engine-validate.sh` passes it.
    #[arg(long, value_name = "LOCAL,ONE,TWO", value_parser = parse_calibration, requires = "validate_model")]
    calibrate: Option<engine::validate::Calibration>,

    /// `--validate-model`: the ns each crate pair spends besides its atomic accesses (its
    /// branches, calls, loads and plain stores, which the model prices at nothing), counted in
    /// the pair's time. `ci/engine-validate.sh` passes the bench's T2: the kernel's pair on a
    /// quiet machine less two bare locked RMWs.
    #[arg(long, default_value_t = 0, value_name = "NS", value_parser = clap::value_parser!(u64).range(0..=1000), requires = "validate_model")]
    pair_work: u64,

    /// `--engine virtual`, counting build: where the cost model puts the plain irq-time flag
    /// that `legacy` and `seed000` read (`sched_clock_irqtime` before seed 003). Default:
    /// `own-line` for `churn` (seed 000's machine, which names no irq-time cost: its kernels
    /// then differ by seed 000 alone), `nohz-line` for the others (seed 003's x86 build).
    #[arg(long, value_enum, value_name = "WHERE")]
    irqtime_flag: Option<FlagLineArg>,

    /// `--engine virtual`: check the invariants after every N events (1: after each; 0: at
    /// the end only).
    #[arg(long, default_value_t = 1, value_name = "N")]
    check_every: u64,

    /// `--engine virtual`: take a CPU offline and back about every MS milliseconds (one at a
    /// time, down for half of that; never the first CPU of a cpuset). `--plant hotplug-order`
    /// sets 5 unless given.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    hotplug_every_ms: Option<u64>,

    /// `--engine virtual`: the cpuidle governor each idle pass asks whether to stop the tick.
    #[arg(long, value_enum, default_value_t = GovernorArg::None)]
    governor: GovernorArg,

    /// `--engine virtual`: one domain's balance, the fixed part, in ns [default: 123, fitted
    /// to Bursov's per-domain newidle costs, LKML 2024-04-03; harness/README.md].
    #[arg(long, value_name = "NS", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    lb_fixed_ns: Option<u64>,

    /// `--engine virtual`: one domain's balance, per CPU of its span, in ns [default: 93, the
    /// same fit].
    #[arg(long, value_name = "NS", value_parser = clap::value_parser!(u64).range(0..=100_000))]
    lb_per_cpu_ns: Option<u64>,

    /// `--engine virtual`: one run queue's blocked-load decay, in ns [default: 1927, the same
    /// thread's SMT-only walk against all levels'].
    #[arg(long, value_name = "NS", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    decay_ns: Option<u64>,

    /// `--engine virtual`: the load's arriving tasks come at the rate that keeps PCT per cent
    /// of the CPUs busy (`frontier`, Khan's 768-CPU machine: 10, 30, 50, 70) [default: the
    /// scenario's own, 8 % for frontier].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u32).range(1..=100))]
    util: Option<u32>,

    /// `--engine virtual`: every balancing cost times PCT per cent, after the three above (0:
    /// balancing takes no time, as in the engine before it did).
    #[arg(long, default_value_t = 100, value_name = "PCT", value_parser = clap::value_parser!(u64).range(0..=10_000))]
    balance_cost_pct: u64,

    /// Policies to run; `both` and `all` interleave them and compare each with legacy.
    #[arg(long, value_enum, default_value_t = PolicyArg::Both)]
    policy: PolicyArg,

    /// Logical CPUs, at most 768 (the harness's capacity, `CAP` in harness/src/sim.rs).
    /// Default: 4 for visibility, the number of cores for the others. More than the cores is
    /// allowed: threads are pinned round-robin and the descheduling gate is off. With
    /// `--engine virtual`: 480 for churn, 80 for visibility, 768 for frontier.
    #[arg(long, value_parser = parse_cpus)]
    cpus: Option<usize>,

    /// `--engine virtual`: housekeeping CPUs per cpuset, the rest NO_HZ_FULL (`nohz_full=`
    /// is every CPU of a cpuset but its first N). Seed 001's machine (llama, hackbench-*,
    /// visibility) defaults to 8 of 80; the others to all (no NO_HZ_FULL). N = the cpuset's
    /// size: no NO_HZ_FULL CPU.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=768))]
    housekeeping: Option<u64>,

    /// `--scenario llama`: the llama team's threads, the main thread included (`-t`; 80; the
    /// seed ran several counts, e.g. 16, 32, 64, 80).
    #[arg(long, value_name = "T", value_parser = clap::value_parser!(u64).range(1..=4096))]
    threads: Option<u64>,

    /// The hackbench scenarios: groups of 20 senders and 20 receivers (10 on 80 CPUs, 40 on
    /// 480).
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u64).range(1..=1000))]
    groups: Option<u64>,

    /// The llama and hackbench scenarios: set one of the load's parameters (repeatable), for
    /// sensitivity runs. llama: nodes, slice-ns, main-ns, spin-ns, throttled-spin-ns;
    /// hackbench: loops (0: continuous), write-ns, read-ns, capacity, wake-writers-at,
    /// wake-all-writers (0 or 1). Their defaults and sources: harness/README.md.
    #[arg(long, value_name = "NAME=VALUE", value_parser = parse_load_param)]
    load_param: Vec<(String, u64)>,

    /// Seconds per run [default: 1; with --engine virtual, 0.2 simulated seconds].
    #[arg(long, allow_negative_numbers = true, value_parser = parse_seconds)]
    seconds: Option<f64>,

    /// Runs per policy (interleaved L P S L P S ...); a comparison needs 3 kept runs a side.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,

    /// Scheduler tick rate (HZ) of the simulated kernel.
    #[arg(long, default_value_t = 1000, value_parser = parse_hz)]
    hz: u32,

    /// Inject faults: delayed IPIs, stalled CPU threads, jiffies jumps, a held timekeeper
    /// (the soak; jiffies must still advance), and CPUs taken offline and back (hotplug, with
    /// its invariants checked).
    #[arg(long)]
    faults: bool,

    /// Do not pin CPU threads to cores.
    #[arg(long)]
    no_pin: bool,

    /// `soak`: stop after this many idle transitions (all CPUs; 1e8 works) instead of after
    /// --seconds.
    #[arg(long, value_parser = parse_count)]
    transitions: Option<u64>,

    /// Plant a bug the invariant checks must catch: `hotplug-order` (the hotplug fix
    /// reverted), `csd-leak` (a csd never released), `ilb-fence` (the ILB pass's fence
    /// removed; probe builds only: RUSTFLAGS='--cfg nohz_probe'); the soak takes all three.
    /// `--engine virtual` takes `csd-leak`, `hotplug-order` and `lost-update-rq` (an embedder
    /// forgetting `update_rq` for a task queued on another CPU).
    #[arg(long, value_enum, default_value_t = PlantArg::None)]
    plant: PlantArg,

    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,

    /// Also write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    out: Option<std::path::PathBuf>,

    /// Write one CSV row per run to FILE.
    #[arg(long, value_name = "FILE")]
    csv: Option<std::path::PathBuf>,

    /// Draw every kept run as a point per policy, medians marked, per scenario and metric,
    /// into FILE (SVG).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<std::path::PathBuf>,

    /// Run nothing: draw the engine's balancing metrics against utilization into FILE (SVG),
    /// from REPORTs that `--engine virtual --util PCT --json` (or `--out`) wrote, one per
    /// utilization, of one scenario: a line per policy through its median over the seeds.
    #[arg(long, value_name = "FILE.svg", requires = "reports")]
    plot_sweep: Option<std::path::PathBuf>,

    /// `--plot-sweep`: the JSON reports to draw.
    #[arg(value_name = "REPORT", requires = "plot_sweep")]
    reports: Vec<std::path::PathBuf>,

    /// Exit with status 1 if any run of a policy other than legacy shows an invariant
    /// violation, a warning or an invisible idle tick. Inconclusive comparisons do not fail.
    #[arg(long)]
    check: bool,

    /// `--check`, and also exit with status 3 if a comparison is inconclusive (too few kept
    /// runs). Needs --runs 3 or more.
    #[arg(long)]
    strict: bool,
}

fn parse_load_param(s: &str) -> Result<(String, u64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
    let v = value
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("`{value}` is not a whole number"))?;
    Ok((name.trim().to_string(), v))
}

fn parse_count(s: &str) -> Result<u64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a count (1000000 or 1e6)"))?;
    if !v.is_finite() || !(1.0..=1e15).contains(&v) {
        return Err(format!("a count from 1 to 1e15, got {s}"));
    }
    Ok(v as u64)
}

/// `--calibrate`: three positive nanosecond values, comma-separated.
fn parse_calibration(s: &str) -> Result<engine::validate::Calibration, String> {
    let v: Vec<f64> = s
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0 && *v <= 100_000.0)
                .ok_or_else(|| format!("'{x}' is not a positive number of ns (up to 100000)"))
        })
        .collect::<Result<_, _>>()?;
    match v[..] {
        [rmw_local, rmw_1line, rmw_2lines] => Ok(engine::validate::Calibration {
            rmw_local,
            rmw_1line,
            rmw_2lines,
        }),
        _ => Err(format!(
            "expected three values LOCAL,ONE,TWO (ns), got {}",
            v.len()
        )),
    }
}

fn parse_cpus(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("`{s}` is not a CPU count"))?;
    if n == 0 {
        return Err("at least one CPU is needed".into());
    }
    if n > CAP {
        return Err(format!(
            "{n} CPUs requested, but the harness is built for at most {CAP}: raise `CAP` in \
             harness/src/sim.rs (a multiple of 64; the crate itself takes up to 8192)"
        ));
    }
    Ok(n)
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("the duration must be positive, got {s}"));
    }
    if v > 3600.0 {
        return Err("runs longer than an hour are not supported".into());
    }
    Ok(v)
}

fn parse_hz(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(hz @ (100 | 250 | 300 | 1000)) => Ok(hz),
        _ => Err(format!("HZ must be one of 100, 250, 300, 1000; got {s}")),
    }
}

/// `$run::<P, HZ>($cfg)` for the policy `$pol` and the tick rate `$hz` (100, 250, 300 or
/// 1000, which the flag's parser guarantees), `$sharded` standing for `Sharded`: the one
/// place the command line's values become the generic arguments.
macro_rules! by_policy {
    ($($run:ident)::+, $cfg:expr, $pol:expr, $hz:expr, $sharded:ty) => {{
        macro_rules! hz {
            ($p:ty) => {
                match $hz {
                    100 => $($run)::+::<$p, 100>($cfg),
                    250 => $($run)::+::<$p, 250>($cfg),
                    300 => $($run)::+::<$p, 300>($cfg),
                    _ => $($run)::+::<$p, 1000>($cfg),
                }
            };
        }
        match $pol {
            Pol::Patched => hz!(Patched),
            Pol::Legacy => hz!(Legacy),
            Pol::Scalable => hz!(Scalable),
            Pol::Sharded => hz!($sharded),
            Pol::Seed000 => hz!(Seed000),
            Pol::KhanNextBalance => hz!(KhanNextBalance),
            Pol::KhanRoundRobin => hz!(KhanRoundRobin),
            Pol::Khan => hz!(Khan),
            Pol::HegdeHk => hz!(HegdeHk),
            Pol::Paced => hz!(Paced),
        }
    }};
}

fn run_one(cfg: &RunConfig, pol: Pol, hz: u32) -> Result<RunStats, String> {
    by_policy!(run, cfg, pol, hz, ShardedDefault)
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(EXIT_USAGE)
}

/// `--plot-sweep OUT REPORT...`: the reports read, drawn against utilization into `out`.
fn plot_sweep(out: &std::path::Path, reports: &[std::path::PathBuf]) -> ExitCode {
    let mut texts = Vec::new();
    for path in reports {
        match std::fs::read_to_string(path) {
            Ok(t) => texts.push((path.display().to_string(), t)),
            Err(e) => return usage_error(&format!("cannot read {}: {e}", path.display())),
        }
    }
    match nohz_stress::plot::sweep_svg(&texts).and_then(|svg| write_file(out, &svg)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => usage_error(&e),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(out) = &cli.plot_sweep {
        return plot_sweep(out, &cli.reports);
    }
    if cli.validate_model {
        return validate_model(cost_params(&cli), cli.calibrate, cli.pair_work);
    }
    if cli.engine == EngineArg::Virtual {
        return virtual_main(&cli);
    }
    let seconds = cli.seconds.unwrap_or(1.0);
    let scenarios: Vec<Scenario> = match cli.scenario {
        ScenarioArg::All => Scenario::ALL.to_vec(),
        ScenarioArg::Visibility => vec![Scenario::Visibility],
        ScenarioArg::Churn => vec![Scenario::Churn],
        ScenarioArg::Irqtime => vec![Scenario::Irqtime],
        ScenarioArg::Soak => vec![Scenario::Soak],
        ScenarioArg::Frontier
        | ScenarioArg::Llama
        | ScenarioArg::HackbenchProcess
        | ScenarioArg::HackbenchThread
        | ScenarioArg::Hackbench480 => {
            return usage_error(
                "--scenario frontier, llama and the hackbench scenarios run on the virtual \
                 engine: add --engine virtual",
            );
        }
    };
    if cli.threads.is_some() || cli.groups.is_some() || !cli.load_param.is_empty() {
        return usage_error(
            "--threads, --groups and --load-param apply to --engine virtual's benchmark \
             scenarios",
        );
    }
    if cli.strict && (cli.runs as usize) < MIN_KEPT {
        return usage_error(&format!(
            "--strict needs --runs {MIN_KEPT} or more: a comparison of fewer kept runs is \
             always inconclusive"
        ));
    }
    if cli.transitions.is_some() && cli.scenario != ScenarioArg::Soak {
        return usage_error("--transitions applies to --scenario soak only");
    }
    if matches!(cli.plant, PlantArg::LostUpdateRq | PlantArg::BlockedClear) {
        return usage_error(
            "--plant lost-update-rq and --plant blocked-clear apply to --engine virtual only",
        );
    }
    if cli.governor != GovernorArg::None {
        return usage_error("--governor applies to --engine virtual only");
    }
    if cli.irqtime_flag.is_some() {
        return usage_error("--irqtime-flag applies to --engine virtual only");
    }
    if cli.lb_fixed_ns.is_some()
        || cli.util.is_some()
        || cli.lb_per_cpu_ns.is_some()
        || cli.decay_ns.is_some()
        || cli.balance_cost_pct != 100
        || cli.housekeeping.is_some()
    {
        return usage_error(
            "--util, --lb-fixed-ns, --lb-per-cpu-ns, --decay-ns, --balance-cost-pct and \
             --housekeeping apply to --engine virtual only",
        );
    }
    if cli.hotplug_every_ms.is_some() {
        return usage_error(
            "--hotplug-every-ms applies to --engine virtual only (--faults takes CPUs offline \
             on threads)",
        );
    }
    if cli.plant != PlantArg::None && cli.scenario != ScenarioArg::Soak {
        return usage_error("--plant applies to --scenario soak only");
    }
    let cores = core_count();
    for s in &scenarios {
        if let Some(n) = cli.cpus
            && n < s.min_cpus()
        {
            return usage_error(&format!(
                "{} needs at least {} logical CPUs (got --cpus {n})",
                s.name(),
                s.min_cpus()
            ));
        }
    }
    let faults = if cli.faults {
        Faults::standard()
    } else {
        Faults::default()
    };
    let policies = cli.policy.policies();
    let mut report = Report::new();
    let total_runs = scenarios.len() * policies.len() * cli.runs as usize;
    let show_progress = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut attempted = 0usize;
    for &scenario in &scenarios {
        let cpus = cli.cpus.unwrap_or(scenario.default_cpus(cores));
        let mut cfg = RunConfig::new(scenario, cpus, seconds, faults, !cli.no_pin);
        cfg.transitions = cli.transitions;
        cfg.plant = cli.plant.plant();
        cfg.progress = true;
        if cpus > cores {
            report.notes.push(format!(
                "{}: {cpus} logical CPUs on {cores} cores: threads {} round-robin, so they \
                 deschedule each other and the descheduling gate is off",
                scenario.name(),
                if cli.no_pin {
                    "share the cores"
                } else {
                    "pinned"
                }
            ));
        }
        let mut discarded_runs: Vec<RunStats> = Vec::new();
        let mut failed: Option<String> = None;
        let kept = interleave_many(policies.len(), cli.runs as usize, |v| {
            if failed.is_some() {
                return None;
            }
            attempted += 1;
            if show_progress {
                let done = attempted - 1;
                let per_run = started.elapsed().as_secs_f64() / done.max(1) as f64;
                let left = total_runs.saturating_sub(done) as f64
                    * if done == 0 { seconds } else { per_run };
                eprint!(
                    "\r\x1b[Krun {attempted} of {total_runs}{}: {} {}, ~{left:.0}s left",
                    if attempted > total_runs {
                        " (a retry)"
                    } else {
                        ""
                    },
                    scenario.name(),
                    policies[v].name(),
                );
                let _ = std::io::stderr().flush();
            }
            match run_one(&cfg, policies[v], cli.hz) {
                Ok(st) if st.descheduled => {
                    discarded_runs.push(st);
                    None
                }
                Ok(st) => Some(st),
                Err(e) => {
                    failed = Some(e);
                    None
                }
            }
        });
        if let Some(e) = failed {
            if show_progress {
                eprint!("\r\x1b[K");
            }
            return usage_error(&e);
        }
        let discarded = discarded_runs.len();
        report.discarded += discarded;
        let fewest = kept.kept.iter().map(Vec::len).min().unwrap_or(0);
        if fewest < cli.runs as usize {
            report.notes.push(format!(
                "{}: only {fewest} of {} runs of some policy kept ({discarded} discarded by the \
                 descheduling gate: another process took CPU time from a {} thread)",
                scenario.name(),
                cli.runs,
                if cli.no_pin { "CPU" } else { "pinned CPU" }
            ));
        }
        if policies.len() > 1 {
            for (k, &pol) in policies.iter().enumerate().skip(1) {
                report.comparisons.extend(compare(
                    scenario.name(),
                    (policies[0].name(), &kept.kept[0]),
                    (pol.name(), &kept.kept[k]),
                ));
            }
        }
        if scenario == Scenario::Visibility
            && policies.contains(&Pol::Legacy)
            && kept.kept[0].iter().any(|r| r.invisible_idle_ticks > 0)
        {
            report.notes.push(
                "visibility: Legacy shows invisible idle ticks by design: NO_HZ_FULL CPUs whose \
                 tick stopped while they ran stay out of the idle mask (the bug seed 001 fixes)"
                    .into(),
            );
        }
        for runs in kept.kept {
            report.runs.extend(runs);
        }
        // Shown (and checked) too, marked descheduled; never part of a comparison.
        report.runs.extend(discarded_runs);
    }
    if show_progress {
        eprint!("\r\x1b[K");
    }
    if cli.scenario == ScenarioArg::All {
        report.notes.push(format!(
            "threads: {} ran on real host threads ({cores} cores here): their numbers are this \
             host's",
            scenarios
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Err(e) = seed001_on_the_engine(&cli, seconds, &mut report) {
            return usage_error(&e);
        }
    }
    finish(report, &cli)
}

/// The main job's seed 001 at its size: [`SEED001`]'s benchmark on the virtual engine at 80
/// CPUs, Legacy and Patched interleaved, 0.05 simulated s and 3 runs each (fewer if `--seconds`
/// or `--runs` ask for less), its throughput ratio into the report as `v-seed001`.
fn seed001_on_the_engine(cli: &Cli, seconds: f64, report: &mut Report) -> Result<(), String> {
    let (scenario, groups) = SEED001;
    let shape = scenario.shape(scenario.default_cpus());
    let opts = engine::scenario::LoadOpts {
        groups,
        ..Default::default()
    };
    let sim = seconds.min(0.05);
    let runs = cli.runs.min(3);
    let mut cfg = EngineConfig {
        workload: scenario.workload_with(&shape, &opts)?,
        shape: shape.clone(),
        sim_ns: (sim * 1e9) as u64,
        seed: cli.seed,
        ipi_ns: 2_000,
        check_every: 0,
        cost: engine::cost::CostParams {
            flag_line: scenario.flag_line(),
            ..cost_params(cli)
        },
        irqtime: scenario.irqtime(),
        plant: engine::Plant::None,
        governor: engine::Governor::None,
        hotplug_every_ns: 0,
        costs: engine::BalanceCosts::default(),
    };
    let policies = [Pol::Legacy, Pol::Patched];
    let mut by_pol: Vec<Vec<RunStats>> = vec![Vec::new(); 2];
    for k in 0..u64::from(runs) {
        cfg.seed = cli.seed + k;
        for (v, &pol) in policies.iter().enumerate() {
            let o = run_virtual(&cfg, pol, cli.hz)?;
            let mut st = engine::scenario::run_stats(scenario, cfg.seed, &o);
            st.scenario = "v-seed001";
            by_pol[v].push(st);
        }
    }
    let cmp = compare("v-seed001", ("legacy", &by_pol[0]), ("patched", &by_pol[1]));
    let ratio = cmp
        .iter()
        .find(|c| c.metric == "throughput")
        .and_then(|c| Some(c.medians.get("patched")? / c.medians.get("legacy")?));
    report.comparisons.extend(
        cmp.into_iter()
            .filter(|c| matches!(c.metric, "throughput" | "idle_while_waiting_ms_per_s")),
    );
    let mut hidden: Vec<f64> = by_pol[0]
        .iter()
        .filter_map(|r| r.invisible_idle_pct)
        .collect();
    hidden.sort_by(f64::total_cmp);
    report.notes.push(format!(
        "engine: v-seed001 is seed 001's {} ({} groups) on the virtual-time engine, 80 virtual \
         CPUs ({} NO_HZ_FULL), {sim} simulated s x {runs} runs a policy: throughput Patched / \
         Legacy {} (the seed: up to 1.26), Legacy's idle time invisible to the balancer {}; its \
         numbers come from the engine's model, not this host",
        scenario.name(),
        groups.unwrap_or(engine::scenario::params::HACKBENCH_GROUPS),
        shape.nohz_full,
        ratio.map_or("n/a".to_string(), |r| format!("{r:.3}")),
        hidden
            .get(hidden.len() / 2)
            .map_or("n/a".to_string(), |p| format!("{p:.0} %")),
    ));
    for r in by_pol {
        report.runs.extend(r);
    }
    Ok(())
}

/// The seed-001 benchmark the main job runs on the engine: the scenario and its `--groups`.
const SEED001: (VirtualScenario, Option<usize>) = (VirtualScenario::HackbenchProcess, Some(4));

/// Summarizes, prints and writes the report; the exit status.
fn finish(mut report: Report, cli: &Cli) -> ExitCode {
    report.summarize();
    if report.summary.violations > 0 {
        report.notes.push(format!(
            "runs outside legacy show {} invariant violation(s), warning(s) or invisible tick(s)",
            report.summary.violations
        ));
    }
    let json = match serde_json::to_string_pretty(&report) {
        Ok(s) => s,
        Err(e) => return usage_error(&e.to_string()),
    };
    if cli.json {
        println!("{json}");
    } else {
        print!("{}", report.table());
    }
    let mut outputs: Vec<(&std::path::Path, Result<String, String>)> = Vec::new();
    if let Some(p) = &cli.out {
        outputs.push((p, Ok(json.clone())));
    }
    if let Some(p) = &cli.csv {
        outputs.push((p, report.csv()));
    }
    if let Some(p) = &cli.plot {
        outputs.push((p, nohz_stress::plot::svg(&report)));
    }
    for (path, text) in outputs {
        if let Err(e) = text.and_then(|t| write_file(path, &t)) {
            return usage_error(&e);
        }
    }
    match report.exit_status(cli.check, cli.strict) {
        0 => ExitCode::SUCCESS,
        EXIT_VIOLATION => ExitCode::from(EXIT_VIOLATION),
        _ => ExitCode::from(EXIT_INCONCLUSIVE),
    }
}

/// The balancing costs the flags ask for: the defaults, each given one replaced, all scaled.
fn balance_costs(cli: &Cli) -> engine::BalanceCosts {
    let d = engine::BalanceCosts::default();
    engine::BalanceCosts {
        lb_fixed_ns: cli.lb_fixed_ns.unwrap_or(d.lb_fixed_ns),
        lb_per_cpu_ns: cli.lb_per_cpu_ns.unwrap_or(d.lb_per_cpu_ns),
        decay_ns: cli.decay_ns.unwrap_or(d.decay_ns),
        ..d
    }
    .scaled(cli.balance_cost_pct)
}

fn run_virtual(cfg: &EngineConfig, pol: Pol, hz: u32) -> Result<Outcome, String> {
    by_policy!(engine::run, cfg, pol, hz, engine::Sharded)
}

/// `--engine virtual`: each scenario's runs (seed, seed + 1, ... for every policy in turn) on
/// the deterministic engine, into the same report.
fn virtual_main(cli: &Cli) -> ExitCode {
    let scenarios: Vec<VirtualScenario> = match cli.scenario {
        ScenarioArg::All => vec![
            VirtualScenario::Visibility,
            VirtualScenario::Churn,
            VirtualScenario::Irqtime,
            VirtualScenario::Frontier,
        ],
        ScenarioArg::Visibility => vec![VirtualScenario::Visibility],
        ScenarioArg::Churn => vec![VirtualScenario::Churn],
        ScenarioArg::Irqtime => vec![VirtualScenario::Irqtime],
        ScenarioArg::Frontier => vec![VirtualScenario::Frontier],
        ScenarioArg::Llama => vec![VirtualScenario::Llama],
        ScenarioArg::HackbenchProcess => vec![VirtualScenario::HackbenchProcess],
        ScenarioArg::HackbenchThread => vec![VirtualScenario::HackbenchThread],
        ScenarioArg::Hackbench480 => vec![VirtualScenario::Hackbench480],
        ScenarioArg::Soak => {
            return usage_error(
                "--scenario soak runs on threads; the virtual engine checks every invariant \
                 after every event in each of its scenarios instead",
            );
        }
    };
    let threads_only = [
        (cli.faults, "--faults"),
        (cli.no_pin, "--no-pin"),
        (cli.transitions.is_some(), "--transitions"),
    ];
    if let Some((_, flag)) = threads_only.iter().find(|(on, _)| *on) {
        return usage_error(&format!("{flag} applies to --engine threads only"));
    }
    if cli.strict && (cli.runs as usize) < MIN_KEPT {
        return usage_error(&format!(
            "--strict needs --runs {MIN_KEPT} or more: a comparison of fewer runs is always \
             inconclusive"
        ));
    }
    let plant = match cli.plant {
        PlantArg::None => engine::Plant::None,
        PlantArg::CsdLeak => engine::Plant::CsdLeak,
        PlantArg::LostUpdateRq => engine::Plant::LostUpdateRq,
        PlantArg::BlockedClear => engine::Plant::BlockedClear,
        PlantArg::HotplugOrder => engine::Plant::HotplugOrder,
        PlantArg::IlbFence => {
            return usage_error(
                "--plant ilb-fence weakens a fence, which a sequential run cannot show (every \
                 access sees the one before it); the threaded soak and loom plant it",
            );
        }
    };
    // The hotplug-order plant needs CPUs going offline: every 5 ms unless asked otherwise.
    let hotplug_every_ms = match (cli.hotplug_every_ms, plant) {
        (Some(ms), _) => ms,
        (None, engine::Plant::HotplugOrder) => 5,
        (None, _) => 0,
    };
    let seconds = cli.seconds.unwrap_or(0.2);
    let policies = cli.policy.policies();
    let mut report = Report::new();
    report.util_pct = cli.util;
    let show_progress = std::io::stderr().is_terminal();
    let opts = engine::scenario::LoadOpts {
        threads: cli.threads.map(|t| t as usize),
        groups: cli.groups.map(|g| g as usize),
        params: cli.load_param.clone(),
    };
    for &scenario in &scenarios {
        let cpus = cli.cpus.unwrap_or(scenario.default_cpus());
        let mut shape = scenario.shape(cpus);
        if let Some(hk) = cli.housekeeping {
            let set = shape.cpus / shape.cpusets;
            if hk == 0 || hk as usize > set {
                return usage_error(&format!(
                    "--housekeeping {hk}: {} has cpusets of {set} CPUs; each needs from 1 \
                     housekeeping CPU (CPU 0 keeps time) to all {set} (no NO_HZ_FULL)",
                    scenario.name()
                ));
            }
            shape.nohz_full = set - hk as usize;
        }
        let workload = match scenario.workload_with(&shape, &opts) {
            Ok(w) => w,
            Err(e) => return usage_error(&e),
        };
        if let Some(note) = engine::scenario::load_note(&workload) {
            report.notes.push(format!("{}: {note}", scenario.name()));
        }
        let governor = match cli.governor {
            GovernorArg::None => engine::Governor::None,
            GovernorArg::Menu => engine::Governor::Menu,
        };
        let flag_line = match cli.irqtime_flag {
            Some(FlagLineArg::NohzLine) => engine::cost::FlagLine::Nohz,
            Some(FlagLineArg::OwnLine) => engine::cost::FlagLine::Own,
            None => scenario.flag_line(),
        };
        report.notes.push(format!(
            "{}: virtual engine, {cpus} CPUs ({} per cache, {} per socket, SMT{}, {} cpuset(s), \
             {} NO_HZ_FULL per cpuset), {seconds} simulated s per run, HZ {}, governor {}, \
             legacy's irq-time flag {}, balancing costs {}, seeds {}..{}",
            scenario.name(),
            shape.llc,
            shape.socket,
            shape.smt,
            shape.cpusets,
            shape.nohz_full,
            cli.hz,
            governor.name(),
            flag_line.name(),
            balance_costs(cli).describe(),
            cli.seed,
            cli.seed + u64::from(cli.runs) - 1
        ));
        let workload = match cli.util {
            None => workload,
            Some(pct) => match workload.at_utilization(pct) {
                Ok(w) => w,
                Err(e) => {
                    return usage_error(&format!("--util {pct} for {}: {e}", scenario.name()));
                }
            },
        };
        let mut cfg = EngineConfig {
            workload,
            shape,
            sim_ns: (seconds * 1e9) as u64,
            seed: cli.seed,
            ipi_ns: 2_000,
            check_every: cli.check_every,
            cost: engine::cost::CostParams {
                flag_line,
                ..cost_params(cli)
            },
            irqtime: scenario.irqtime(),
            plant,
            governor,
            hotplug_every_ns: hotplug_every_ms * 1_000_000,
            costs: balance_costs(cli),
        };
        let mut runs: Vec<Vec<RunStats>> = vec![Vec::new(); policies.len()];
        for k in 0..u64::from(cli.runs) {
            cfg.seed = cli.seed + k;
            for (v, &pol) in policies.iter().enumerate() {
                if show_progress {
                    eprint!(
                        "\r\x1b[K{} {} seed {} ...",
                        scenario.name(),
                        pol.name(),
                        cfg.seed
                    );
                    let _ = std::io::stderr().flush();
                }
                match run_virtual(&cfg, pol, cli.hz) {
                    Ok(o) => runs[v].push(engine::scenario::run_stats(scenario, cfg.seed, &o)),
                    Err(e) => return usage_error(&e),
                }
            }
        }
        if show_progress {
            eprint!("\r\x1b[K");
        }
        if policies.len() > 1 {
            for (k, &pol) in policies.iter().enumerate().skip(1) {
                report.comparisons.extend(compare(
                    scenario.name(),
                    (policies[0].name(), &runs[0]),
                    (pol.name(), &runs[k]),
                ));
            }
        }
        for r in runs {
            report.runs.extend(r);
        }
    }
    finish(report, cli)
}

/// The cost model's parameters: the defaults, with the transfer costs of the command line.
fn cost_params(cli: &Cli) -> engine::cost::CostParams {
    engine::cost::CostParams {
        t_local: cli.t_local,
        t_remote: cli.t_remote,
        rmw_transfer_pct: cli.rmw_transfer_pct,
        leave_pct: cli.leave_pct,
        t_rmw: cli.t_rmw,
        ..Default::default()
    }
}

/// `--validate-model`: the cost model's ns per pair for each of the bench's variants.
fn validate_model(
    params: engine::cost::CostParams,
    calibrate: Option<engine::validate::Calibration>,
    pair_work: u64,
) -> ExitCode {
    if !engine::cost::available() {
        return usage_error(
            "--validate-model needs the counting build: RUSTFLAGS='--cfg nohz_linecount' cargo run \
             --release --target-dir target/linecount -p nohz-stress -- --validate-model",
        );
    }
    let params = match calibrate {
        Some(cal) => {
            let fitted = engine::validate::fit(params, cal);
            println!(
                "# fitted to the bench's calibration patterns (rmw-local {}, rmw-1line {}, \
                 rmw-2lines {} ns): t_x {} ns, t_rmw {} ns, leave {} %",
                cal.rmw_local,
                cal.rmw_1line,
                cal.rmw_2lines,
                fitted.t_local,
                fitted.t_rmw,
                fitted.leave_pct
            );
            fitted
        }
        None => params,
    };
    println!(
        "# cost model: t_x {} ns within a socket, {} across, the line held {} % of it; hits {} ns \
         (a load or store), {} ns (a locked RMW); an RMW's transfer {} % of t_x; the request \
         reaches the holder at {} %",
        params.t_local,
        params.t_remote,
        params.occupancy_pct,
        params.t_hit,
        params.t_rmw,
        params.rmw_transfer_pct,
        params.leave_pct
    );
    println!("# each crate pair's other work: {pair_work} ns");
    for p in engine::validate::predict(params, pair_work) {
        println!("model {} {:.2} ns", p.name, p.ns);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep plot colours policies in the order a report first names them: `--policy
    /// every` (the largest group) must not wrap the palette, or two lines share a colour.
    #[test]
    fn every_policy_of_the_largest_group_gets_its_own_colour() {
        let every = PolicyArg::Every.policies();
        assert!(
            every.len() <= nohz_stress::plot::COLORS.len(),
            "{} policies",
            every.len()
        );
        for arg in PolicyArg::value_variants() {
            assert!(arg.policies().len() <= every.len(), "{arg:?}");
        }
    }
}
