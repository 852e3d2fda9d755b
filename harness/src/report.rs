//! The report: a table on stdout, or JSON.

use crate::measure::median;
use crate::scenario::RunStats;
use serde::Serialize;

/// One comparison: the median of a metric under `Legacy` (a) and `Patched` (b).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The scenario.
    pub scenario: &'static str,
    /// The metric.
    pub metric: &'static str,
    /// Median under `Legacy`.
    pub a: f64,
    /// Median under `Patched`.
    pub b: f64,
    /// `b / a`.
    pub ratio: f64,
    /// Kept runs per policy (the smaller count).
    pub runs: usize,
    /// Which way is better.
    pub better: &'static str,
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
}

type Metric = (&'static str, &'static str, fn(&RunStats) -> Option<f64>);

/// The metrics compared per scenario: name, which way is better, extractor.
const METRICS: [Metric; 10] = [
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
];

/// Which metrics belong to which scenario.
fn applies(scenario: &str, metric: &str) -> bool {
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
    )
}

/// Comparisons of `legacy` (a) against `patched` (b) runs of one scenario.
pub fn compare(
    scenario: &'static str,
    legacy: &[RunStats],
    patched: &[RunStats],
) -> Vec<Comparison> {
    METRICS
        .iter()
        .filter(|(name, _, _)| applies(scenario, name))
        .filter_map(|&(metric, better, get)| {
            let a = median(&legacy.iter().filter_map(get).collect::<Vec<_>>())?;
            let b = median(&patched.iter().filter_map(get).collect::<Vec<_>>())?;
            Some(Comparison {
                scenario,
                metric,
                a,
                b,
                ratio: if a == 0.0 { f64::NAN } else { b / a },
                runs: legacy.len().min(patched.len()),
                better,
            })
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

impl Report {
    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "scenario    policy   cpus pinned  gate  secs  idle_trans  kicks  ipis   ilb  tasks  invisible  violations  warnings  hotplug\n",
        );
        for r in &self.runs {
            out.push_str(&format!(
                "{:<11} {:<8} {:>4} {:>6} {:>5} {:>5.2} {:>11} {:>6} {:>5} {:>5} {:>6} {:>10} {:>11} {:>9} {:>8}\n",
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
                r.idle_transitions,
                r.kicks_sent,
                r.ipis_delivered,
                r.ilb_passes,
                r.tasks_completed,
                r.invisible_idle_ticks,
                r.invariant_violations,
                r.warnings,
                r.hotplug_cycles
            ));
        }
        if !self.comparisons.is_empty() {
            out.push_str("\ncomparison (medians of interleaved runs; ratio = patched / legacy)\n");
            out.push_str(
                "scenario    metric                        legacy      patched    ratio  runs  better\n",
            );
            for c in &self.comparisons {
                out.push_str(&format!(
                    "{:<11} {:<25} {:>12} {:>12} {:>8} {:>5}  {}\n",
                    c.scenario,
                    c.metric,
                    fmt_num(c.a),
                    fmt_num(c.b),
                    fmt_num(c.ratio),
                    c.runs,
                    c.better
                ));
            }
        }
        if self.discarded > 0 {
            out.push_str(&format!(
                "\n{} run(s) discarded (gate `drop`): a pinned thread was descheduled (CPU time < 97 % of runnable time)\n",
                self.discarded
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(policy: &'static str, tps: f64, invisible: u64) -> RunStats {
        RunStats {
            scenario: "visibility",
            policy,
            logical_cpus: 4,
            pinned: true,
            gated: false,
            descheduled: false,
            seconds: 1.0,
            idle_transitions: 1,
            kicks_sent: 1,
            ipis_delivered: 1,
            ilb_passes: 1,
            tasks_completed: tps as u64,
            invisible_idle_ticks: invisible,
            invariant_violations: 0,
            warnings: 0,
            hotplug_cycles: 0,
            hotplug_refused: 0,
            hotplug_checks: 0,
            tasks_per_sec: Some(tps),
            burst_ms: Some(10.0),
            pulled_to_nohz_full: Some(0),
            idle_transitions_per_sec: None,
            pair_ns: None,
            irq_ns_per_call: None,
        }
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
        let c = compare("visibility", &legacy, &patched);
        let tps = c.iter().find(|c| c.metric == "tasks_per_sec").unwrap();
        assert_eq!((tps.a, tps.b, tps.runs), (100.0, 150.0, 3));
        assert!((tps.ratio - 1.5).abs() < 1e-9);
        assert!(c.iter().all(|c| applies("visibility", c.metric)));
        assert!(!c.iter().any(|c| c.metric == "pair_ns"));
        let inv = c
            .iter()
            .find(|c| c.metric == "invisible_idle_ticks")
            .unwrap();
        assert_eq!((inv.a, inv.b), (50.0, 0.0));
    }
}
