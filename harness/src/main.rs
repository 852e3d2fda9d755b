//! `nohz-stress`: run the `nohz` crate on pinned host threads and compare `Patched` with
//! `Legacy`. With no arguments: every scenario, both policies interleaved, 5 runs each.

use clap::{Parser, ValueEnum};
use nohz::{Legacy, Patched, Scalable};
use nohz_stress::report::{Report, compare};
use nohz_stress::scenario::{RunConfig, RunStats, Scenario, core_count, run};
use nohz_stress::sim::{CAP, Faults, Plant};
use std::io::Write;
use std::process::ExitCode;

/// Which policies to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyArg {
    /// Both, interleaved, with a comparison.
    Both,
    /// The kernel with the seeds applied.
    Patched,
    /// The kernel before the seeds.
    Legacy,
    /// Beyond the kernel: Patched with the nohz flags read before written.
    Scalable,
}

/// Which scenarios to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScenarioArg {
    /// All three.
    All,
    /// Seed 001: idle NO_HZ_FULL CPUs visible to the idle balancer.
    Visibility,
    /// Seed 000: idle enter/exit under churn.
    Churn,
    /// Seed 003: irq-time accounting beside the nohz line.
    Irqtime,
    /// The soak: every kernel path on a virtual clock, faults and invariant checks.
    Soak,
}

/// Stress-run the nohz crate on host threads pinned to cores, Patched against Legacy.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    /// Scenario to run.
    #[arg(long, value_enum, default_value_t = ScenarioArg::All)]
    scenario: ScenarioArg,

    /// Policy to run; `both` interleaves them and prints the comparison.
    #[arg(long, value_enum, default_value_t = PolicyArg::Both)]
    policy: PolicyArg,

    /// Logical CPUs (default: 4 for visibility, the number of cores for churn and irqtime).
    /// More than the cores is allowed: threads are pinned round-robin and the report says so.
    #[arg(long, value_parser = parse_cpus)]
    cpus: Option<usize>,

    /// Seconds per run.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    seconds: f64,

    /// Runs per policy (interleaved A B A B ...).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,

    /// Scheduler tick rate (HZ) of the simulated kernel.
    #[arg(long, default_value_t = 1000, value_parser = parse_hz)]
    hz: u32,

    /// Inject faults: delayed IPIs, stalled CPU threads, jiffies jumps, and CPUs taken
    /// offline and back (hotplug, with its invariants checked).
    #[arg(long)]
    faults: bool,

    /// Do not pin CPU threads to cores.
    #[arg(long)]
    no_pin: bool,

    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,

    /// `soak`: stop after this many idle transitions (all CPUs) instead of after --seconds.
    #[arg(long, value_parser = parse_count)]
    transitions: Option<u64>,

    /// Plant a bug the invariant checks must catch: `hotplug-order` (the hotplug fix
    /// reverted), `csd-leak` (a csd never released), `ilb-fence` (the ILB pass's fence
    /// removed; probe builds only: RUSTFLAGS='--cfg nohz_probe').
    #[arg(long, value_enum, default_value_t = PlantArg::None)]
    plant: PlantArg,

    /// Exit with status 1 if any Patched (or Scalable) run shows an invariant violation, a
    /// warning or an invisible idle tick.
    #[arg(long)]
    check: bool,
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
}

impl PlantArg {
    fn plant(self) -> Plant {
        match self {
            PlantArg::None => Plant::None,
            PlantArg::HotplugOrder => Plant::HotplugOrder,
            PlantArg::CsdLeak => Plant::CsdLeak,
            PlantArg::IlbFence => Plant::IlbFence,
        }
    }
}

fn parse_count(s: &str) -> Result<u64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a count (1000000 or 1e6)"))?;
    if !v.is_finite() || v < 1.0 || v > 1e15 {
        return Err(format!("a count from 1 to 1e15, got {s}"));
    }
    Ok(v as u64)
}

fn parse_cpus(s: &str) -> Result<usize, String> {
    let n: usize = s.parse().map_err(|_| format!("`{s}` is not a CPU count"))?;
    if n == 0 {
        return Err("at least one CPU is needed".into());
    }
    if n > CAP {
        return Err(format!(
            "{n} CPUs requested, but the harness is built for at most {CAP}"
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

fn run_scalable(cfg: &RunConfig, hz: u32) -> Result<RunStats, String> {
    match hz {
        100 => run::<Scalable, 100>(cfg),
        250 => run::<Scalable, 250>(cfg),
        300 => run::<Scalable, 300>(cfg),
        _ => run::<Scalable, 1000>(cfg),
    }
}

fn run_policy(cfg: &RunConfig, patched: bool, hz: u32) -> Result<RunStats, String> {
    match (patched, hz) {
        (true, 100) => run::<Patched, 100>(cfg),
        (true, 250) => run::<Patched, 250>(cfg),
        (true, 300) => run::<Patched, 300>(cfg),
        (true, _) => run::<Patched, 1000>(cfg),
        (false, 100) => run::<Legacy, 100>(cfg),
        (false, 250) => run::<Legacy, 250>(cfg),
        (false, 300) => run::<Legacy, 300>(cfg),
        (false, _) => run::<Legacy, 1000>(cfg),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let scenarios: Vec<Scenario> = match cli.scenario {
        ScenarioArg::All => Scenario::ALL.to_vec(),
        ScenarioArg::Visibility => vec![Scenario::Visibility],
        ScenarioArg::Churn => vec![Scenario::Churn],
        ScenarioArg::Irqtime => vec![Scenario::Irqtime],
        ScenarioArg::Soak => vec![Scenario::Soak],
    };
    let cores = core_count();
    for s in &scenarios {
        if let Some(n) = cli.cpus
            && n < s.min_cpus()
        {
            eprintln!(
                "error: {} needs at least {} logical CPUs (got --cpus {n})",
                s.name(),
                s.min_cpus()
            );
            return ExitCode::from(2);
        }
    }
    let faults = if cli.faults {
        Faults::standard()
    } else {
        Faults::default()
    };
    let mut report = Report {
        runs: Vec::new(),
        discarded: 0,
        comparisons: Vec::new(),
        notes: Vec::new(),
    };
    let total_seconds = scenarios.len() as f64
        * f64::from(cli.runs)
        * cli.seconds
        * if cli.policy == PolicyArg::Both {
            2.0
        } else {
            1.0
        };
    let show_progress = total_seconds > 3.0;
    let mut done = 0;
    for &scenario in &scenarios {
        let cpus = cli.cpus.unwrap_or(scenario.default_cpus(cores));
        let mut cfg = RunConfig::new(scenario, cpus, cli.seconds, faults, !cli.no_pin);
        cfg.transitions = cli.transitions;
        cfg.plant = cli.plant.plant();
        cfg.progress = true;
        let mut discarded_runs: Vec<RunStats> = Vec::new();
        if cpus > cores {
            report.notes.push(format!(
                "{}: {cpus} logical CPUs on {cores} cores: threads pinned round-robin, so they \
                 deschedule each other and the descheduling gate is off",
                scenario.name()
            ));
        }
        let mut one = |patched: bool| -> Option<Result<RunStats, String>> {
            done += 1;
            if show_progress {
                eprint!(
                    "\r{:<60}\r[{done}] {} {}",
                    "",
                    scenario.name(),
                    match (cli.policy, patched) {
                        (PolicyArg::Scalable, _) => "scalable",
                        (_, true) => "patched",
                        (_, false) => "legacy",
                    }
                );
                let _ = std::io::stderr().flush();
            }
            let result = if cli.policy == PolicyArg::Scalable {
                run_scalable(&cfg, cli.hz)
            } else {
                run_policy(&cfg, patched, cli.hz)
            };
            match result {
                Ok(st) if st.descheduled => {
                    discarded_runs.push(st);
                    None
                }
                other => Some(other),
            }
        };
        let (legacy, patched) = match cli.policy {
            PolicyArg::Both => {
                let r = nohz_stress::measure::interleave(cli.runs as usize, &mut one);
                (r.a, r.b)
            }
            PolicyArg::Patched | PolicyArg::Scalable => (
                Vec::new(),
                (0..cli.runs).filter_map(|_| one(true)).collect(),
            ),
            PolicyArg::Legacy => (
                (0..cli.runs).filter_map(|_| one(false)).collect(),
                Vec::new(),
            ),
        };
        let legacy: Result<Vec<RunStats>, String> = legacy.into_iter().collect();
        let patched: Result<Vec<RunStats>, String> = patched.into_iter().collect();
        let (legacy, patched) = match (legacy, patched) {
            (Ok(l), Ok(p)) => (l, p),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("\nerror: {e}");
                return ExitCode::from(2);
            }
        };
        let discarded = discarded_runs.len();
        report.discarded += discarded;
        let kept = legacy.len().min(patched.len());
        if cli.policy == PolicyArg::Both && kept < cli.runs as usize {
            report.notes.push(format!(
                "{}: only {kept} of {} runs per policy kept ({discarded} discarded by the \
                 descheduling gate: another process took CPU time from a pinned thread)",
                scenario.name(),
                cli.runs
            ));
        }
        if !legacy.is_empty() && !patched.is_empty() {
            report
                .comparisons
                .extend(compare(scenario.name(), &legacy, &patched));
        }
        if scenario == Scenario::Visibility && legacy.iter().any(|r| r.invisible_idle_ticks > 0) {
            report.notes.push(
                "visibility: Legacy shows invisible idle ticks by design: NO_HZ_FULL CPUs whose \
                 tick stopped while they ran stay out of the idle mask (the bug seed 001 fixes)"
                    .into(),
            );
        }
        report.runs.extend(legacy);
        report.runs.extend(patched);
        // Shown (and checked) too, marked descheduled; never part of a comparison.
        report.runs.extend(discarded_runs);
    }
    if show_progress {
        eprintln!("\r{:<60}\rdone", "");
    }
    let failures: u64 = report
        .runs
        .iter()
        .filter(|r| r.policy != "legacy")
        .map(RunStats::patched_failures)
        .sum();
    if failures > 0 {
        report.notes.push(format!(
            "Patched runs show {failures} invariant violation(s), warning(s) or invisible tick(s)"
        ));
    }
    if cli.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", report.table());
    }
    if cli.check && failures > 0 {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
