//! The command line of the virtual engine: a bad combination is explained and exits 2, a good
//! one runs and says it ran on the engine.

use std::process::{Command, Output};

fn nohz_stress(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nohz-stress"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn refused(args: &[&str], says: &str) {
    let out = nohz_stress(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

#[test]
fn bad_combinations_are_explained_and_exit_2() {
    refused(&["--scenario", "frontier"], "--engine virtual");
    refused(
        &["--engine", "virtual", "--plant", "ilb-fence"],
        "sequential run",
    );
    refused(
        &["--hotplug-every-ms", "5"],
        "--hotplug-every-ms applies to --engine virtual only",
    );
    refused(
        &["--engine", "virtual", "--hotplug-every-ms", "0"],
        "--hotplug-every-ms",
    );
    refused(
        &["--engine", "virtual", "--faults"],
        "--engine threads only",
    );
    refused(&["--plant", "lost-update-rq"], "--engine virtual only");
    refused(
        &["--governor", "menu"],
        "--governor applies to --engine virtual only",
    );
    refused(
        &["--irqtime-flag", "own-line"],
        "--irqtime-flag applies to --engine virtual only",
    );
    refused(
        &["--engine", "virtual", "--irqtime-flag", "elsewhere"],
        "nohz-line",
    );
    refused(&["--engine", "virtual", "--cpus", "769"], "at most 768");
    refused(
        &["--engine", "virtual", "--runs", "2", "--strict"],
        "--runs 3",
    );
    refused(&["--calibrate", "10,30,80"], "--validate-model");
    refused(
        &["--validate-model", "--calibrate", "10,30"],
        "expected three values",
    );
    refused(
        &["--validate-model", "--calibrate", "10,-3,80"],
        "'-3' is not a positive number",
    );
    refused(
        &["--validate-model", "--calibrate", "10,x,80"],
        "'x' is not a positive number",
    );
    refused(&["--pair-work", "5"], "--validate-model");
    refused(&["--validate-model", "--pair-work", "1001"], "0..=1000");
    refused(&["--validate-model", "--pair-work", "4.5"], "4.5");
}

#[test]
fn validate_model_needs_the_counting_build() {
    let out = nohz_stress(&["--validate-model"]);
    if nohz_stress::engine::cost::available() {
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("model legacy"));
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--cfg nohz_linecount"));
    }
}

#[test]
fn a_small_virtual_run_reports_its_engine_and_seed() {
    let out = nohz_stress(&[
        "--engine",
        "virtual",
        "--scenario",
        "frontier",
        "--cpus",
        "64",
        "--seconds",
        "0.01",
        "--runs",
        "1",
        "--seed",
        "5",
        "--json",
        "--check",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "legacy and patched");
    for r in runs {
        assert_eq!(r["engine"], "virtual");
        assert_eq!(r["seed"], 5);
        assert_eq!(r["logical_cpus"], 64);
        assert_eq!(r["invariant_violations"], 0);
    }
}

/// Where the cost model puts `Legacy`'s irq-time flag: apart for `churn` (seed 000's machine),
/// in the `nohz` line elsewhere, or as `--irqtime-flag` says; the run's notes say which.
#[test]
fn the_irqtime_flags_line_is_the_scenarios_unless_given() {
    let notes = |scenario: &str, flag: Option<&str>| {
        let mut args = vec![
            "--engine",
            "virtual",
            "--scenario",
            scenario,
            "--cpus",
            "32",
            "--seconds",
            "0.005",
            "--runs",
            "1",
            "--policy",
            "legacy",
            "--json",
        ];
        if let Some(f) = flag {
            args.extend(["--irqtime-flag", f]);
        }
        let out = nohz_stress(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        report["notes"].to_string()
    };
    assert!(notes("churn", None).contains("irq-time flag own-line"));
    assert!(notes("frontier", None).contains("irq-time flag nohz-line"));
    assert!(notes("churn", Some("nohz-line")).contains("irq-time flag nohz-line"));
    assert!(notes("irqtime", Some("own-line")).contains("irq-time flag own-line"));
}

/// `--plant hotplug-order` on the engine takes CPUs offline (every 5 ms unless asked) and
/// `--check` fails the run on what the invariants catch: the dying CPU left in the idle mask.
#[test]
fn the_hotplug_order_plant_fails_a_checked_virtual_run() {
    let args = [
        "--engine",
        "virtual",
        "--scenario",
        "frontier",
        "--cpus",
        "64",
        "--seconds",
        "0.02",
        "--runs",
        "1",
        "--policy",
        "patched",
        "--check",
    ];
    // The same cycles without the plant: clean.
    let clean = nohz_stress(&[&args[..], &["--hotplug-every-ms", "5"]].concat());
    assert!(
        clean.status.success(),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    let planted = nohz_stress(&[&args[..], &["--plant", "hotplug-order"]].concat());
    assert_eq!(planted.status.code(), Some(1));
    let out = String::from_utf8_lossy(&planted.stdout);
    // The dying CPU registers again in its grace period: caught by the per-event check of the
    // mask during the rebuild, or by the takedown's own check after it.
    assert!(out.contains("in the idle mask"), "{out}");
}

/// The load options reach the run: a llama team of 16 on 80 CPUs leaves 64 CPUs idle, and a
/// team with no spin (`OMP_WAIT_POLICY=PASSIVE`) sleeps at its barriers; the defaults (80
/// spinning threads) keep every CPU busy and never idle. (The `--util` option once rebuilt the
/// load from its defaults, dropping both.)
#[test]
fn load_options_reach_the_engine() {
    let throughput_and_busy = |extra: &[&str]| {
        let mut args = vec![
            "--engine",
            "virtual",
            "--scenario",
            "llama",
            "--policy",
            "patched",
            "--seconds",
            "0.05",
            "--runs",
            "1",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = nohz_stress(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let run = &report["runs"][0];
        (
            run["throughput"].as_f64().expect("throughput"),
            run["idle_transitions"].as_u64().expect("idle_transitions"),
        )
    };
    let (all, all_transitions) = throughput_and_busy(&[]);
    let (sixteen, _) = throughput_and_busy(&["--threads", "16"]);
    let (_, passive_transitions) = throughput_and_busy(&["--load-param", "spin-ns=0"]);
    assert_eq!(
        all_transitions, 0,
        "80 spinning threads on 80 CPUs never idle"
    );
    assert!(
        sixteen < all * 0.6,
        "16 threads decode slower than 80 ({sixteen} vs {all} decodes/s)"
    );
    assert!(
        passive_transitions > 0,
        "threads that never spin sleep at each barrier, and their CPUs idle"
    );
}
