//! The report: a table on stdout (or JSON), a CSV of the runs, and the verdicts.
//!
//! # Verdicts
//!
//! A comparison is the median of one metric under a policy against its median under the
//! baseline (`legacy`), over the runs the descheduling gate kept. With fewer than
//! [`MIN_KEPT`] kept runs on either side it is **inconclusive**: the table, the JSON and the
//! closing summary say so and give no ratio. A comparison whose runs were not gated (more
//! logical CPUs than cores) says `gate off` on its line: its ratio stands, but another
//! process may have taken CPU time from either side.
//!
//! `--check` fails on invariant violations only (exit [`EXIT_VIOLATION`]); `--strict` also
//! fails when any comparison is inconclusive (exit [`EXIT_INCONCLUSIVE`]); bad usage exits
//! [`EXIT_USAGE`].

use crate::measure::median;
use crate::scenario::RunStats;
use serde::Serialize;
use std::collections::BTreeMap;

/// Fewest kept runs per policy for a comparison to be measured rather than inconclusive.
pub const MIN_KEPT: usize = 3;
/// Exit status: an invariant violation, a crate warning or an invisible idle tick under a
/// policy other than `legacy` (with `--check` or `--strict`).
pub const EXIT_VIOLATION: u8 = 1;
/// Exit status: bad usage (a flag's value, a scenario that needs more CPUs, a failed run).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: `--strict` and a comparison was inconclusive (no violation).
pub const EXIT_INCONCLUSIVE: u8 = 3;

/// Whether a comparison has a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Enough kept runs on both sides: the ratio of the medians stands.
    Measured,
    /// Too few kept runs on a side: no ratio.
    Inconclusive,
}

/// One comparison: the median of a metric under `policy` against `baseline`.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The scenario.
    pub scenario: &'static str,
    /// The metric.
    pub metric: &'static str,
    /// Which way is better (`higher`, `lower`, `info`).
    pub better: &'static str,
    /// The policy compared against (`legacy`).
    pub baseline: &'static str,
    /// The policy compared.
    pub policy: &'static str,
    /// Medians of the kept runs, by policy name (a side without kept runs is absent).
    pub medians: BTreeMap<&'static str, f64>,
    /// Kept runs, by policy name.
    pub kept: BTreeMap<&'static str, usize>,
    /// `policy`'s median over `baseline`'s; `None` when inconclusive or the baseline is 0.
    pub ratio: Option<f64>,
    /// Measured or inconclusive.
    pub verdict: Verdict,
    /// Why it is inconclusive.
    pub reason: Option<String>,
    /// Whether the descheduling gate applied to every run of both sides.
    pub gated: bool,
}

/// Everything a report holds.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Every run, kept ones first per scenario; discarded ones are marked `descheduled`.
    pub runs: Vec<RunStats>,
    /// Runs discarded by the descheduling gate.
    pub discarded: usize,
    /// The comparisons.
    pub comparisons: Vec<Comparison>,
    /// Notes for the reader (oversubscription, expected Legacy failures, ...).
    pub notes: Vec<String>,
    /// The closing summary: violations, verdicts.
    pub summary: Summary,
    /// `--engine virtual --util`: the utilization the arriving tasks were set to, per cent
    /// (`None`: the scenario's own rate); `--plot-sweep` places the report by it.
    pub util_pct: Option<u32>,
}

/// The closing summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Violations, warnings and invisible idle ticks under policies other than `legacy`.
    pub violations: u64,
    /// Comparisons measured.
    pub measured: usize,
    /// Comparisons inconclusive.
    pub inconclusive: usize,
    /// Soak runs' transitions per second (wall time), if any soak ran.
    pub soak_transitions_per_sec: Option<f64>,
}

type Metric = (&'static str, &'static str, fn(&RunStats) -> Option<f64>);

/// The metrics compared per scenario: name, which way is better, extractor.
pub const METRICS: [Metric; 29] = [
    ("tasks_per_sec", "higher", |r| r.tasks_per_sec),
    ("burst_ms", "lower", |r| r.burst_ms),
    ("invisible_idle_ticks", "lower", |r| {
        Some(r.invisible_idle_ticks as f64)
    }),
    ("pulled_to_nohz_full", "higher", |r| {
        r.pulled_to_nohz_full.map(|v| v as f64)
    }),
    ("idle_transitions_per_sec", "higher", |r| {
        r.idle_transitions_per_sec
    }),
    ("pair_ns", "lower", |r| r.pair_ns),
    ("irq_ns_per_call", "lower", |r| r.irq_ns_per_call),
    ("kicks_sent", "info", |r| Some(r.kicks_sent as f64)),
    ("ilb_passes", "info", |r| Some(r.ilb_passes as f64)),
    ("tasks_completed", "higher", |r| {
        Some(r.tasks_completed as f64)
    }),
    ("transitions_per_sec", "higher", |r| r.transitions_per_sec),
    ("invisible_idle_pct", "lower", |r| r.invisible_idle_pct),
    ("due_tick_pct", "info", |r| r.due_tick_pct),
    ("ilb_passes_per_sec", "info", |r| r.ilb_passes_per_sec),
    ("ilb_top_share_pct", "info", |r| r.ilb_top_share_pct),
    ("busy_pct", "info", |r| r.busy_pct),
    ("exit_idle_pct", "lower", |r| r.exit_idle_pct),
    ("kick_pct", "lower", |r| r.kick_pct),
    ("enter_idle_pct", "lower", |r| r.enter_idle_pct),
    ("irqtime_pct", "lower", |r| r.irqtime_pct),
    ("kernel_pct", "lower", |r| r.kernel_pct),
    ("throughput", "higher", |r| r.throughput),
    ("idle_while_waiting_ms_per_s", "lower", |r| {
        r.idle_while_waiting_ms_per_s
    }),
    ("runnable_wait_us_p99", "lower", |r| r.runnable_wait_us_p99),
    ("ilb_cpu_ms_per_s", "lower", |r| r.ilb_cpu_ms_per_s),
    ("ilb_busiest_share", "lower", |r| r.ilb_busiest_share),
    ("ilb_domains_ms_per_s", "lower", |r| r.ilb_domains_ms_per_s),
    ("ilb_blocked_ms_per_s", "lower", |r| r.ilb_blocked_ms_per_s),
    ("ilb_rq_lock_ms_per_s", "lower", |r| r.ilb_rq_lock_ms_per_s),
];

/// The balancing-quality and balancing-cost metrics every engine scenario compares and plots.
pub const QUALITY: [&str; 5] = [
    "throughput",
    "idle_while_waiting_ms_per_s",
    "runnable_wait_us_p99",
    "ilb_cpu_ms_per_s",
    "ilb_busiest_share",
];

/// Which metrics belong to which scenario.
pub fn applies(scenario: &str, metric: &str) -> bool {
    matches!(
        (scenario, metric),
        (
            "visibility",
            "tasks_per_sec"
                | "burst_ms"
                | "invisible_idle_ticks"
                | "pulled_to_nohz_full"
                | "tasks_completed"
                | "kicks_sent"
                | "ilb_passes"
        ) | (
            "churn",
            "idle_transitions_per_sec" | "pair_ns" | "kicks_sent"
        ) | ("irqtime", "irq_ns_per_call")
            | ("soak", "transitions_per_sec" | "kicks_sent" | "ilb_passes")
            | (
                "v-visibility",
                "tasks_per_sec" | "burst_ms" | "invisible_idle_pct" | "ilb_passes_per_sec"
            )
            | (
                "v-churn",
                "idle_transitions_per_sec" | "kicks_sent" | "ilb_passes_per_sec"
            )
            | ("v-irqtime", "irqtime_pct" | "kernel_pct")
            | (
                "v-churn",
                "exit_idle_pct" | "kick_pct" | "enter_idle_pct" | "kernel_pct"
            )
            | (
                "frontier",
                "due_tick_pct"
                    | "ilb_passes_per_sec"
                    | "ilb_top_share_pct"
                    | "busy_pct"
                    | "ilb_domains_ms_per_s"
                    | "ilb_blocked_ms_per_s"
                    | "ilb_rq_lock_ms_per_s"
            )
            | (
                "llama",
                "throughput"
                    | "burst_ms"
                    | "busy_pct"
                    | "invisible_idle_pct"
                    | "ilb_passes_per_sec"
            )
            | (
                "hackbench-process" | "hackbench-thread",
                "throughput" | "busy_pct" | "invisible_idle_pct" | "ilb_passes_per_sec"
            )
            | (
                "hackbench-480",
                "throughput"
                    | "busy_pct"
                    | "ilb_passes_per_sec"
                    | "exit_idle_pct"
                    | "kick_pct"
                    | "kernel_pct"
            )
    )
}

/// Comparisons of one scenario's kept `runs` of `policy` against those of `baseline`.
pub fn compare(
    scenario: &'static str,
    baseline: (&'static str, &[RunStats]),
    policy: (&'static str, &[RunStats]),
) -> Vec<Comparison> {
    let (bname, bruns) = baseline;
    let (pname, pruns) = policy;
    let gated = bruns.iter().chain(pruns).all(|r| r.gated);
    METRICS
        .iter()
        .filter(|(name, _, get)| {
            applies(scenario, name)
                || (QUALITY.contains(name) && bruns.iter().chain(pruns).any(|r| get(r).is_some()))
        })
        .map(|&(metric, better, get)| {
            let bm = median(&bruns.iter().filter_map(get).collect::<Vec<_>>());
            let pm = median(&pruns.iter().filter_map(get).collect::<Vec<_>>());
            let mut medians = BTreeMap::new();
            if let Some(v) = bm {
                medians.insert(bname, v);
            }
            if let Some(v) = pm {
                medians.insert(pname, v);
            }
            let kept = BTreeMap::from([(bname, bruns.len()), (pname, pruns.len())]);
            let short: Vec<String> = [(bname, bruns.len()), (pname, pruns.len())]
                .iter()
                .filter(|(_, k)| *k < MIN_KEPT)
                .map(|(name, k)| format!("{name} {k}"))
                .collect();
            let (verdict, reason, ratio) = if !short.is_empty() {
                (
                    Verdict::Inconclusive,
                    Some(format!(
                        "kept runs: {} (at least {MIN_KEPT} each needed)",
                        short.join(", ")
                    )),
                    None,
                )
            } else {
                let ratio = match (bm, pm) {
                    (Some(b), Some(p)) if b != 0.0 => Some(p / b),
                    _ => None,
                };
                (Verdict::Measured, None, ratio)
            };
            Comparison {
                scenario,
                metric,
                better,
                baseline: bname,
                policy: pname,
                medians,
                kept,
                ratio,
                verdict,
                reason,
                gated,
            }
        })
        .collect()
}

fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), fmt_num)
}

/// The scenario's own metrics of one run, as `name=value` pairs (what its comparisons use).
fn own_metrics(r: &RunStats) -> String {
    let pairs: Vec<(&str, Option<f64>)> = match r.scenario {
        "visibility" => vec![
            ("tasks/s", r.tasks_per_sec),
            ("burst_ms", r.burst_ms),
            ("pulled_full", r.pulled_to_nohz_full.map(|v| v as f64)),
        ],
        "churn" => vec![
            ("idle/s", r.idle_transitions_per_sec),
            ("pair_ns", r.pair_ns),
        ],
        "irqtime" => vec![("irq_ns", r.irq_ns_per_call), ("pair_ns", r.pair_ns)],
        "soak" => vec![
            ("trans/s", r.transitions_per_sec),
            ("checks", Some(r.checks as f64)),
            ("faults", Some(r.faults_injected as f64)),
            ("ilb_spread", r.ilb_pick_spread),
        ],
        "v-visibility" => vec![
            ("tasks/s", r.tasks_per_sec),
            ("batch_ms", r.burst_ms),
            ("invisible%", r.invisible_idle_pct),
            ("busy%", r.busy_pct),
        ],
        "v-churn" => vec![
            ("idle/s", r.idle_transitions_per_sec),
            ("busy%", r.busy_pct),
            ("exit%", r.exit_idle_pct),
            ("kick%", r.kick_pct),
            ("kernel%", r.kernel_pct),
        ],
        "v-irqtime" => vec![
            ("irqtime%", r.irqtime_pct),
            ("kernel%", r.kernel_pct),
            ("busy%", r.busy_pct),
        ],
        "llama" => vec![
            ("decodes/s", r.throughput),
            ("decode_ms", r.burst_ms),
            ("busy%", r.busy_pct),
            ("invisible%", r.invisible_idle_pct),
        ],
        "hackbench-process" | "hackbench-thread" => vec![
            ("msgs/s", r.throughput),
            ("busy%", r.busy_pct),
            ("invisible%", r.invisible_idle_pct),
            ("ilb/s", r.ilb_passes_per_sec),
        ],
        "hackbench-480" => vec![
            ("msgs/s", r.throughput),
            ("busy%", r.busy_pct),
            ("exit%", r.exit_idle_pct),
            ("kick%", r.kick_pct),
            ("kernel%", r.kernel_pct),
        ],
        "frontier" => vec![
            ("due%", r.due_tick_pct),
            ("ilb/s", r.ilb_passes_per_sec),
            ("ilb_top%", r.ilb_top_share_pct),
            ("busy%", r.busy_pct),
        ],
        _ => Vec::new(),
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", fmt_opt(*v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An engine run's balancing quality and cost, one line: the workload's throughput, CPU time
/// idle while a task waited, runnable waits, and the ILB, newidle and periodic balances' CPU
/// time with the busiest ILB CPU's share of its own time and the ILB time's split; the tasks
/// each kind of balancing pulled.
fn quality_line(r: &RunStats) -> String {
    format!(
        "quality: {} {} iww_ms/s={} wait_us p50={} p99={} pulled/s newidle={} periodic={} \
         ilb={} | cost: ilb_ms/s={} (domains={} blocked={} rq_lock={}) ilb_busiest={} \
         newidle_ms/s={} periodic_ms/s={} \
         aborted={} due={} due_jiffies={} advance=[{}] ahead=[{}]",
        fmt_opt(r.throughput),
        r.throughput_unit.unwrap_or(""),
        fmt_opt(r.idle_while_waiting_ms_per_s),
        fmt_opt(r.runnable_wait_us_p50),
        fmt_opt(r.runnable_wait_us_p99),
        fmt_opt(r.pulled_newidle_per_sec),
        fmt_opt(r.pulled_periodic_per_sec),
        fmt_opt(r.pulled_ilb_per_sec),
        fmt_opt(r.ilb_cpu_ms_per_s),
        fmt_opt(r.ilb_domains_ms_per_s),
        fmt_opt(r.ilb_blocked_ms_per_s),
        fmt_opt(r.ilb_rq_lock_ms_per_s),
        fmt_opt(r.ilb_busiest_share),
        fmt_opt(r.newidle_cpu_ms_per_s),
        fmt_opt(r.periodic_cpu_ms_per_s),
        r.ilb_passes_aborted.map_or("-".into(), |n| n.to_string()),
        fmt_opt(r.due_tick_fraction),
        fmt_opt(r.due_jiffy_fraction),
        r.next_balance_advance.as_deref().unwrap_or(""),
        r.next_balance_ahead.as_deref().unwrap_or(""),
    )
}

impl Report {
    /// An empty report.
    pub fn new() -> Self {
        Report {
            runs: Vec::new(),
            discarded: 0,
            comparisons: Vec::new(),
            notes: Vec::new(),
            summary: Summary::default(),
            util_pct: None,
        }
    }

    /// Fills the summary from the runs and comparisons.
    pub fn summarize(&mut self) {
        self.summary.violations = self
            .runs
            .iter()
            .filter(|r| r.policy != "legacy")
            .map(RunStats::patched_failures)
            .sum();
        self.summary.measured = self
            .comparisons
            .iter()
            .filter(|c| c.verdict == Verdict::Measured)
            .count();
        self.summary.inconclusive = self.comparisons.len() - self.summary.measured;
        let soak: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| r.transitions_per_sec)
            .collect();
        self.summary.soak_transitions_per_sec = median(&soak);
    }

    /// The exit status for `--check` / `--strict`: violations first, then (strict only)
    /// inconclusive comparisons.
    pub fn exit_status(&self, check: bool, strict: bool) -> u8 {
        if (check || strict) && self.summary.violations > 0 {
            EXIT_VIOLATION
        } else if strict && self.summary.inconclusive > 0 {
            EXIT_INCONCLUSIVE
        } else {
            0
        }
    }

    /// The human-readable table and the closing summary.
    pub fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "scenario    policy   cpus pinned  gate  secs  transitions  kicks   ipis    ilb   tasks  invisible  violations  warnings  hotplug  scenario metrics\n",
        );
        for r in &self.runs {
            out.push_str(&format!(
                "{:<11} {:<8} {:>4} {:>6} {:>5} {:>5.2} {:>12} {:>6} {:>6} {:>6} {:>7} {:>10} {:>11} {:>9} {:>8}  {}\n",
                r.scenario,
                r.policy,
                r.logical_cpus,
                if r.pinned { "yes" } else { "no" },
                match (r.gated, r.descheduled) {
                    (false, _) => "off",
                    (true, false) => "ok",
                    (true, true) => "drop",
                },
                r.seconds,
                r.transitions,
                r.kicks_sent,
                r.ipis_delivered,
                r.ilb_passes,
                r.tasks_completed,
                r.invisible_idle_ticks,
                r.invariant_violations,
                r.warnings,
                r.hotplug_cycles,
                own_metrics(r),
            ));
            if r.engine == "virtual" {
                out.push_str(&format!("  {}\n", quality_line(r)));
            }
            if let Some(v) = &r.first_violation {
                out.push_str(&format!(
                    "  first violation after {} transitions: {v}\n",
                    r.violation_after_transitions.unwrap_or(0)
                ));
            }
        }
        if !self.comparisons.is_empty() {
            out.push_str(
                "\ncomparison (medians of interleaved kept runs; ratio = policy / baseline)\n",
            );
            out.push_str(
                "scenario    metric                    baseline       median   policy        median     ratio  kept  better\n",
            );
            for c in &self.comparisons {
                let bm = c.medians.get(c.baseline).copied();
                let pm = c.medians.get(c.policy).copied();
                let kept = c.kept.values().min().copied().unwrap_or(0);
                let ratio = match c.verdict {
                    Verdict::Inconclusive => "inconclusive".to_string(),
                    Verdict::Measured => fmt_opt(c.ratio),
                };
                let mut line = format!(
                    "{:<11} {:<25} {:<8} {:>12}   {:<8} {:>12} {:>12} {:>5}  {}",
                    c.scenario,
                    c.metric,
                    c.baseline,
                    fmt_opt(bm),
                    c.policy,
                    fmt_opt(pm),
                    ratio,
                    kept,
                    c.better
                );
                if let Some(why) = &c.reason {
                    line.push_str(&format!("  ({why})"));
                }
                if !c.gated {
                    line.push_str("  (gate off: runs not checked for descheduling)");
                }
                out.push_str(&line);
                out.push('\n');
            }
        }
        if self.discarded > 0 {
            let pinned = self.runs.iter().all(|r| r.pinned);
            out.push_str(&format!(
                "\n{} run(s) discarded (gate `drop`): a {} was descheduled (CPU time < 97 % of runnable time)\n",
                self.discarded,
                if pinned {
                    "pinned CPU thread"
                } else {
                    "CPU thread"
                }
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out.push_str(&self.summary_line());
        out
    }

    /// The closing summary line.
    pub fn summary_line(&self) -> String {
        let s = &self.summary;
        let mut line = format!(
            "\nsummary: {} violation(s) outside legacy; comparisons: {} measured, {} inconclusive",
            s.violations, s.measured, s.inconclusive
        );
        if s.inconclusive > 0 {
            let mut which: Vec<String> = self
                .comparisons
                .iter()
                .filter(|c| c.verdict == Verdict::Inconclusive)
                .map(|c| format!("{} {}", c.scenario, c.policy))
                .collect();
            which.dedup();
            line.push_str(&format!(" ({}: too few kept runs)", which.join(", ")));
        }
        if let Some(rate) = s.soak_transitions_per_sec {
            line.push_str(&format!("; soak {rate:.0} transitions/s"));
        }
        line.push('\n');
        line
    }

    /// One CSV row per run (every field of [`RunStats`]), with a header.
    pub fn csv(&self) -> Result<String, String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        for r in &self.runs {
            w.serialize(r).map_err(|e| e.to_string())?;
        }
        let bytes = w.into_inner().map_err(|e| e.to_string())?;
        String::from_utf8(bytes).map_err(|e| e.to_string())
    }
}

impl Default for Report {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(policy: &'static str, tps: f64, invisible: u64) -> RunStats {
        let mut r = crate::scenario::RunStats::empty("visibility", policy);
        r.tasks_per_sec = Some(tps);
        r.tasks_completed = tps as u64;
        r.invisible_idle_ticks = invisible;
        r.burst_ms = Some(10.0);
        r.pulled_to_nohz_full = Some(0);
        r
    }

    #[test]
    fn compares_medians_of_the_scenario_metrics_only() {
        let legacy = [
            run("legacy", 100.0, 50),
            run("legacy", 120.0, 40),
            run("legacy", 80.0, 60),
        ];
        let patched = [
            run("patched", 150.0, 0),
            run("patched", 160.0, 0),
            run("patched", 10.0, 0),
        ];
        let c = compare("visibility", ("legacy", &legacy), ("patched", &patched));
        let tps = c.iter().find(|c| c.metric == "tasks_per_sec").unwrap();
        assert_eq!(tps.medians["legacy"], 100.0);
        assert_eq!(tps.medians["patched"], 150.0);
        assert_eq!(tps.verdict, Verdict::Measured);
        assert!((tps.ratio.unwrap() - 1.5).abs() < 1e-9);
        assert!(c.iter().all(|c| applies("visibility", c.metric)));
        assert!(!c.iter().any(|c| c.metric == "pair_ns"));
        let inv = c
            .iter()
            .find(|c| c.metric == "invisible_idle_ticks")
            .unwrap();
        assert_eq!((inv.medians["legacy"], inv.medians["patched"]), (50.0, 0.0));
    }
}
