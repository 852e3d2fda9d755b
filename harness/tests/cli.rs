//! The command line of the virtual engine: a bad combination is explained and exits 2, a good
//! one runs and says it ran on the engine.

use std::process::{Command, Output};

fn nohz_stress(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nohz-stress"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Runs the binary with `args`, which must succeed and print a JSON report on stdout.
fn json_report(args: &[&str]) -> serde_json::Value {
    let out = nohz_stress(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
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
    refused(
        &["--housekeeping", "8"],
        "--housekeeping apply to --engine virtual only",
    );
    refused(
        &[
            "--engine",
            "virtual",
            "--scenario",
            "llama",
            "--housekeeping",
            "0",
        ],
        "--housekeeping 0: llama has cpusets of 80 CPUs",
    );
    refused(
        &[
            "--engine",
            "virtual",
            "--scenario",
            "frontier",
            "--housekeeping",
            "385",
        ],
        "each needs from 1",
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
    let report = json_report(&[
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
        let report = json_report(&args);
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
        let report = json_report(&args);
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

/// `--housekeeping N` makes every CPU of a cpuset but its first N NO_HZ_FULL: the notes say
/// so, and with every CPU housekeeping no idle time is invisible to the balancer under
/// Legacy (seed 001's bug needs NO_HZ_FULL CPUs).
#[test]
fn housekeeping_sets_the_nohz_full_split() {
    let run = |hk: &str| {
        let report = json_report(&[
            "--engine",
            "virtual",
            "--scenario",
            "hackbench-process",
            "--groups",
            "4",
            "--seconds",
            "0.005",
            "--runs",
            "1",
            "--policy",
            "legacy",
            "--check-every",
            "0",
            "--housekeeping",
            hk,
            "--json",
        ]);
        (
            report["notes"].to_string(),
            report["runs"][0]["invisible_idle_pct"].as_f64(),
        )
    };
    let (notes, _) = run("8");
    assert!(notes.contains("72 NO_HZ_FULL per cpuset"), "{notes}");
    let (notes, _) = run("1");
    assert!(notes.contains("79 NO_HZ_FULL per cpuset"), "{notes}");
    let (notes, invisible) = run("80");
    assert!(notes.contains("0 NO_HZ_FULL per cpuset"), "{notes}");
    assert!(invisible.is_none_or(|p| p == 0.0), "{invisible:?}");
}

/// The main job (`--engine threads --scenario all`, the defaults) also runs seed 001's
/// benchmark on the engine at 80 virtual CPUs, labelled apart from the host threads' numbers.
#[test]
fn the_main_job_includes_the_engines_seed_001_line() {
    let report = json_report(&["--seconds", "0.002", "--runs", "1", "--json"]);
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("threads: visibility, churn, irqtime ran on real host threads"),
        "{notes}"
    );
    assert!(notes.contains("engine: v-seed001 is seed 001's"), "{notes}");
    assert!(notes.contains("80 virtual CPUs"), "{notes}");
    let runs = report["runs"].as_array().expect("runs");
    let seed001: Vec<_> = runs
        .iter()
        .filter(|r| r["scenario"] == "v-seed001")
        .collect();
    assert_eq!(seed001.len(), 2, "one run a policy");
    for r in &seed001 {
        assert_eq!(r["engine"], "virtual");
        assert_eq!(r["logical_cpus"], 80);
        assert!(r["throughput"].as_f64().is_some_and(|t| t > 0.0), "{r}");
    }
    assert!(
        runs.iter().any(|r| r["engine"] != "virtual"),
        "the host threads' runs are there too"
    );
}

/// `NOHZ_ENGINE_TRACE=FROM_US-TO_US` prints the window's placements, newidle walks and kick
/// decisions to stderr (engine/trace.rs), and nothing outside it.
#[test]
fn the_engine_trace_prints_its_window() {
    let run = |window: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_nohz-stress"))
            .args([
                "--engine",
                "virtual",
                "--scenario",
                "hackbench-process",
                "--groups",
                "4",
                "--seconds",
                "0.004",
                "--runs",
                "1",
                "--policy",
                "legacy",
                "--check-every",
                "0",
            ])
            .env("NOHZ_ENGINE_TRACE", window)
            .output()
            .expect("the binary runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run("1000-4000");
    for kind in [" wake ", " newidle cpu=", " kick cpu="] {
        assert!(err.contains(kind), "no `{kind}` line");
    }
    let at = |l: &str| -> u64 {
        l.split_whitespace().nth(1).unwrap()["at=".len()..]
            .parse()
            .unwrap()
    };
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("trace ")).collect();
    assert!(
        lines
            .iter()
            .all(|l| (1_000_000..=4_000_000).contains(&at(l)))
    );
    assert!(
        !run("9000-9999").contains("trace "),
        "a window past the run's end"
    );
}

/// The SVG that `--plot` draws for a 5 ms frontier run on 64 CPUs with `extra` flags.
fn plot_of_frontier(tag: &str, extra: &[&str]) -> String {
    let path = std::env::temp_dir().join(format!("nohz-plot-{tag}-{}.svg", std::process::id()));
    let mut args = vec![
        "--engine",
        "virtual",
        "--scenario",
        "frontier",
        "--cpus",
        "64",
        "--seconds",
        "0.005",
        "--runs",
        "1",
        "--plot",
        path.to_str().expect("a UTF-8 temporary path"),
    ];
    args.extend_from_slice(extra);
    let out = nohz_stress(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(&path).expect("the SVG was written");
    let _ = std::fs::remove_file(&path);
    svg
}

/// `--plot` draws every policy the run measured: `--policy all` on the engine gives a point
/// column for each of them, `sharded` included (the plot once knew three policies by name and
/// dropped the others).
#[test]
fn the_plot_draws_every_policy_run() {
    let svg = plot_of_frontier("all", &["--policy", "all"]);
    for policy in ["legacy", "patched", "scalable", "sharded"] {
        assert!(
            svg.contains(&format!("\n{policy}\n")),
            "no {policy} column in the plot"
        );
    }
}

/// The plot of an engine run has the balancing-quality panels the comparison table has.
#[test]
fn the_plot_of_an_engine_run_has_the_quality_panels() {
    let svg = plot_of_frontier("quality", &[]);
    for metric in [
        "throughput",
        "ilb_cpu_ms_per_s",
        "idle_while_waiting_ms_per_s",
    ] {
        assert!(
            svg.contains(&format!("frontier: {metric}")),
            "no {metric} panel"
        );
    }
}

/// A 5 ms `--policy all` frontier report on 64 CPUs at `--util` `util` (none: the scenario's
/// own rate), written by `--out` to a temporary file.
fn frontier_report(tag: &str, util: Option<&str>) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("nohz-sweep-{tag}-{}.json", std::process::id()));
    let mut args = vec![
        "--engine",
        "virtual",
        "--scenario",
        "frontier",
        "--cpus",
        "64",
        "--seconds",
        "0.005",
        "--runs",
        "1",
        "--policy",
        "all",
        "--check-every",
        "0",
        "--out",
        path.to_str().expect("a UTF-8 temporary path"),
    ];
    if let Some(u) = util {
        args.extend_from_slice(&["--util", u]);
    }
    let out = nohz_stress(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// `--plot-sweep` draws two reports at 10 and 50 % utilization: a panel per balancing metric,
/// in each a two-point line per policy (one colour each, as in the legend), and the two
/// utilizations on the x axis.
#[test]
fn the_sweep_plot_has_a_panel_per_metric_and_a_line_per_policy() {
    let (r10, r50) = (
        frontier_report("10", Some("10")),
        frontier_report("50", Some("50")),
    );
    let svg_path = std::env::temp_dir().join(format!("nohz-sweep-{}.svg", std::process::id()));
    // Given out of order: the x axis sorts them.
    let out = nohz_stress(&[
        "--plot-sweep",
        svg_path.to_str().unwrap(),
        r50.to_str().unwrap(),
        r10.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(&svg_path).expect("the SVG was written");
    for p in [&r10, &r50, &svg_path] {
        let _ = std::fs::remove_file(p);
    }
    let metrics = [
        "ilb_cpu_ms_per_s",
        "ilb_busiest_share",
        "idle_while_waiting_ms_per_s",
        "runnable_wait_us_p99",
        "throughput",
        "ilb_passes_per_sec",
        "kicks_per_sec",
    ];
    let panels = metrics.len();
    for metric in metrics {
        assert!(
            svg.contains(&format!("frontier: {metric} (median")),
            "no {metric} panel"
        );
    }
    for policy in ["legacy", "patched", "scalable", "sharded"] {
        assert!(
            svg.contains(&format!("\n{policy}\n")),
            "no {policy} in the legend"
        );
    }
    for util in ["10 %", "50 %"] {
        assert_eq!(
            svg.matches(&format!("\n{util}\n")).count(),
            panels,
            "{util} is not on every panel's axis"
        );
    }
    // The lines: 2 px polylines, by colour; each colour has the legend's and one a panel.
    let mut by_color: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for el in svg.split("<polyline").skip(1) {
        let attr = |name: &str| {
            let at = el.find(&format!(" {name}=\""))? + name.len() + 3;
            el[at..].split('"').next()
        };
        if attr("stroke-width") == Some("2") {
            let points = attr("points").unwrap().split_whitespace().count();
            by_color
                .entry(attr("stroke").unwrap())
                .or_default()
                .push(points);
        }
    }
    assert_eq!(by_color.len(), 4, "one colour per policy: {by_color:?}");
    for (color, lines) in &by_color {
        assert_eq!(lines, &vec![2; panels + 1], "{color}'s lines");
    }
}

/// `--plot-sweep`'s bad inputs are explained, exit 2 and write nothing: a missing file, one
/// that is not JSON, a report of the threads engine, one without `--util`, two reports at one
/// utilization, and no report at all.
#[test]
fn the_sweep_plot_refuses_bad_reports() {
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let svg = dir.join(format!("nohz-sweep-bad-{id}.svg"));
    let svg = svg.to_str().unwrap();
    let at30 = frontier_report("bad30", Some("30"));
    let own = frontier_report("bad-own", None);
    let garbage = dir.join(format!("nohz-sweep-garbage-{id}.json"));
    std::fs::write(&garbage, "not json").unwrap();
    let threads = dir.join(format!("nohz-sweep-threads-{id}.json"));
    std::fs::write(
        &threads,
        r#"{"runs": [{"engine": "threads", "scenario": "churn", "policy": "legacy"}],
            "util_pct": 10}"#,
    )
    .unwrap();
    let missing = dir.join(format!("nohz-sweep-missing-{id}.json"));
    let [at30, own, garbage, threads, missing] =
        [&at30, &own, &garbage, &threads, &missing].map(|p| p.to_str().unwrap().to_string());
    let cases: [(&[&str], &str); 6] = [
        (&[&at30, &missing], "cannot read"),
        (&[&at30, &garbage], "not a JSON report"),
        (&[&threads, &at30], "not a report of --engine virtual"),
        (&[&at30, &own], "no utilization"),
        (&[&at30, &at30], "both at 30 % utilization"),
        (&[], "REPORT"),
    ];
    for (reports, says) in cases {
        let mut args = vec!["--plot-sweep", svg];
        args.extend_from_slice(reports);
        refused(&args, says);
        assert!(
            !std::path::Path::new(svg).exists(),
            "{args:?} wrote the SVG"
        );
    }
    for p in [&at30, &own, &garbage, &threads] {
        let _ = std::fs::remove_file(p);
    }
}

/// Each engine run reports how many tasks each kind of balancing pulled, per simulated
/// second: whole counts over the run's seconds, and on a loaded frontier newidle moves some;
/// how its ILB time splits into domain balances, blocked-load decays and rq locks; and the
/// load it was offered, the same for every policy.
#[test]
fn engine_runs_report_the_tasks_each_balancing_pulled() {
    let report = json_report(&[
        "--engine",
        "virtual",
        "--scenario",
        "frontier",
        "--cpus",
        "64",
        "--util",
        "70",
        "--policy",
        "all",
        "--seconds",
        "0.05",
        "--runs",
        "1",
        "--json",
    ]);
    let runs = report["runs"].as_array().expect("runs");
    let offered: Vec<_> = runs.iter().map(|r| r["arrivals"].as_u64()).collect();
    assert!(offered[0].is_some_and(|n| n > 0), "{offered:?}");
    assert!(offered.iter().all(|&n| n == offered[0]), "{offered:?}");
    assert!(runs.iter().all(|r| r["device_interrupts"] == 0), "{report}");
    let r = runs
        .iter()
        .find(|r| r["policy"] == "patched")
        .expect("a patched run");
    let secs = r["virtual_seconds"].as_f64().expect("virtual_seconds");
    for key in [
        "pulled_newidle_per_sec",
        "pulled_periodic_per_sec",
        "pulled_ilb_per_sec",
    ] {
        let n = r[key].as_f64().unwrap_or_else(|| panic!("{key}: {r}")) * secs;
        assert!(n >= 0.0 && (n - n.round()).abs() < 1e-6, "{key}: {n} tasks");
    }
    assert!(r["pulled_newidle_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    // The ILB time's split is reported too, and sums to it.
    let part = |key: &str| r[key].as_f64().unwrap_or_else(|| panic!("{key}: {r}"));
    let sum =
        part("ilb_domains_ms_per_s") + part("ilb_blocked_ms_per_s") + part("ilb_rq_lock_ms_per_s");
    let ilb = part("ilb_cpu_ms_per_s");
    assert!(
        ilb > 0.0 && (sum - ilb).abs() <= 1e-6 * ilb,
        "{sum} against {ilb}"
    );
}
