//! The verdict logic and the report's JSON shape, on runs built by hand (no timing).

use nohz_stress::report::{EXIT_INCONCLUSIVE, EXIT_VIOLATION, MIN_KEPT, Report, Verdict, compare};
use nohz_stress::scenario::RunStats;

fn churn(policy: &'static str, per_sec: f64) -> RunStats {
    let mut r = RunStats::empty("churn", policy);
    r.idle_transitions_per_sec = Some(per_sec);
    r.pair_ns = Some(40.0);
    r.kicks_sent = 10;
    r
}

fn report(legacy: &[RunStats], others: &[(&'static str, &[RunStats])]) -> Report {
    let mut rep = Report::new();
    for &(name, runs) in others {
        rep.comparisons
            .extend(compare("churn", ("legacy", legacy), (name, runs)));
        rep.runs.extend(runs.iter().cloned());
    }
    rep.runs.extend(legacy.iter().cloned());
    rep.summarize();
    rep
}

#[test]
fn an_all_discarded_comparison_is_inconclusive_and_fails_strict_only() {
    // Every run discarded by the gate: no kept run on either side.
    let rep = report(&[], &[("patched", &[])]);
    assert!(!rep.comparisons.is_empty());
    for c in &rep.comparisons {
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
        assert_eq!(c.ratio, None, "{c:?}");
        assert!(c.medians.is_empty(), "{c:?}");
    }
    assert_eq!(rep.summary.inconclusive, rep.comparisons.len());
    assert_eq!(rep.summary.measured, 0);
    // --check fails on violations only; --strict also on the inconclusive comparison.
    assert_eq!(rep.exit_status(true, false), 0);
    assert_eq!(rep.exit_status(false, true), EXIT_INCONCLUSIVE);
    let table = rep.table();
    assert!(table.contains("inconclusive"), "{table}");
    assert!(table.contains("summary: 0 violation(s)"), "{table}");
    assert!(table.contains("3 inconclusive"), "{table}");
}

#[test]
fn too_few_kept_runs_on_one_side_give_no_ratio() {
    let legacy: Vec<RunStats> = (0..MIN_KEPT).map(|_| churn("legacy", 100.0)).collect();
    let patched: Vec<RunStats> = (0..MIN_KEPT - 1).map(|_| churn("patched", 200.0)).collect();
    let rep = report(&legacy, &[("patched", &patched)]);
    let c = rep
        .comparisons
        .iter()
        .find(|c| c.metric == "idle_transitions_per_sec")
        .unwrap();
    assert_eq!(c.verdict, Verdict::Inconclusive);
    assert_eq!(c.ratio, None);
    assert!(c.reason.as_deref().unwrap().contains("patched 2"), "{c:?}");
    assert!(!rep.table().contains(" 2.00 "), "no ratio printed");
}

#[test]
fn enough_kept_runs_measure_and_violations_fail_check() {
    let legacy: Vec<RunStats> = (0..3).map(|_| churn("legacy", 100.0)).collect();
    let mut patched: Vec<RunStats> = (0..3).map(|_| churn("patched", 150.0)).collect();
    let rep = report(&legacy, &[("patched", &patched)]);
    let c = &rep.comparisons[0];
    assert_eq!(c.verdict, Verdict::Measured);
    assert!((c.ratio.unwrap() - 1.5).abs() < 1e-9);
    assert_eq!(rep.exit_status(true, true), 0);
    patched[1].invariant_violations = 1;
    let rep = report(&legacy, &[("patched", &patched)]);
    assert_eq!(rep.exit_status(true, false), EXIT_VIOLATION);
    assert_eq!(rep.exit_status(false, true), EXIT_VIOLATION);
    assert_eq!(rep.exit_status(false, false), 0);
    // Legacy's own failures (the bugs the seeds fix) never fail a check.
    let mut bad_legacy = legacy.clone();
    bad_legacy[0].invisible_idle_ticks = 9;
    let rep = report(&bad_legacy, &[("patched", &legacy_named("patched"))]);
    assert_eq!(rep.exit_status(true, true), 0);
}

fn legacy_named(policy: &'static str) -> Vec<RunStats> {
    (0..3).map(|_| churn(policy, 100.0)).collect()
}

#[test]
fn a_comparison_of_ungated_runs_says_so() {
    let mut legacy: Vec<RunStats> = (0..3).map(|_| churn("legacy", 100.0)).collect();
    legacy[0].gated = false;
    let rep = report(&legacy, &[("patched", &legacy_named("patched"))]);
    assert!(rep.comparisons.iter().all(|c| !c.gated));
    assert!(rep.table().contains("gate off"), "{}", rep.table());
}

#[test]
fn json_names_every_side_by_its_policy() {
    let legacy: Vec<RunStats> = (0..3).map(|_| churn("legacy", 100.0)).collect();
    let rep = report(
        &legacy,
        &[
            ("patched", &legacy_named("patched")),
            ("scalable", &legacy_named("scalable")),
        ],
    );
    let v = serde_json::to_value(&rep).unwrap();
    let comps = v["comparisons"].as_array().unwrap();
    assert_eq!(comps.len(), 2 * 3, "three churn metrics per policy");
    for c in comps {
        let obj = c.as_object().unwrap();
        assert!(!obj.contains_key("a") && !obj.contains_key("b"), "{c}");
        assert_eq!(c["baseline"], "legacy");
        let policy = c["policy"].as_str().unwrap();
        assert!(policy == "patched" || policy == "scalable", "{c}");
        assert!(c["medians"]["legacy"].is_number(), "{c}");
        assert!(c["medians"][policy].is_number(), "{c}");
        assert_eq!(c["kept"][policy], 3);
        assert_eq!(c["verdict"], "measured");
    }
    assert_eq!(v["summary"]["measured"], 6);
    assert_eq!(v["summary"]["inconclusive"], 0);
    for r in v["runs"].as_array().unwrap() {
        assert!(["legacy", "patched", "scalable"].contains(&r["policy"].as_str().unwrap()));
    }
    // The CSV has one row per run under one header.
    let csv = rep.csv().unwrap();
    assert_eq!(csv.lines().count(), 1 + rep.runs.len());
    assert!(csv.starts_with("scenario,policy,"), "{csv}");
}
