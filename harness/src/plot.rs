//! `--plot FILE.svg`: per scenario and metric, every kept run as a point per policy, with each
//! policy's median marked as a bar.
//! `--plot-sweep FILE.svg REPORT...` ([`sweep_svg`]): one scenario's balancing metrics against
//! utilization, from engine reports at several `--util`s, a line per policy through its medians.
//!
//! Drawn with `plotters`, SVG backend only (default features off: no font or image library,
//! nothing from the system; the SVG names a sans-serif font and the viewer draws the text).

use crate::measure::median;
use crate::report::{METRICS, QUALITY, Report, applies};
use crate::scenario::RunStats;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// The policies' colours, in the order the report first names each policy (a run of
/// `--policy all` or of one of its groups): the first three are the ones earlier plots used
/// for `legacy`, `patched` and `scalable`. As many as `--policy every` names, so that no two
/// of its policies share a colour (a test in `main.rs` holds the count to it).
pub const COLORS: [RGBColor; 10] = [
    RGBColor(200, 60, 40),
    RGBColor(40, 90, 200),
    RGBColor(30, 150, 70),
    RGBColor(150, 60, 170),
    RGBColor(230, 140, 20),
    RGBColor(20, 160, 170),
    RGBColor(120, 90, 50),
    RGBColor(110, 110, 110),
    RGBColor(0, 0, 0),
    RGBColor(230, 90, 160),
];

/// One panel: a scenario's metric, the kept runs' values by policy.
struct Panel {
    title: String,
    by_policy: Vec<(&'static str, Vec<f64>)>,
}

/// Every policy the report ran, in the order it first names each.
fn policies(report: &Report) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in &report.runs {
        if !out.contains(&r.policy) {
            out.push(r.policy);
        }
    }
    out
}

fn panels(report: &Report, policies: &[&'static str]) -> Vec<Panel> {
    let kept: Vec<&RunStats> = report.runs.iter().filter(|r| !r.descheduled).collect();
    let mut scenarios: Vec<&'static str> = kept.iter().map(|r| r.scenario).collect();
    scenarios.dedup();
    let mut out = Vec::new();
    for scenario in scenarios {
        for &(metric, better, get) in &METRICS {
            // A scenario's own metrics, and the balancing-quality ones wherever a run has
            // them (the engine's), as the comparisons take them.
            if !applies(scenario, metric) && !QUALITY.contains(&metric) {
                continue;
            }
            let by_policy: Vec<(&'static str, Vec<f64>)> = policies
                .iter()
                .map(|&p| {
                    let v: Vec<f64> = kept
                        .iter()
                        .filter(|r| r.scenario == scenario && r.policy == p)
                        .filter_map(|r| get(r))
                        .filter(|v| v.is_finite())
                        .collect();
                    (p, v)
                })
                .filter(|(_, v)| !v.is_empty())
                .collect();
            if by_policy.is_empty() {
                continue;
            }
            let arrow = match better {
                "higher" => " (higher is better)",
                "lower" => " (lower is better)",
                _ => "",
            };
            out.push(Panel {
                title: format!("{scenario}: {metric}{arrow}"),
                by_policy,
            });
        }
    }
    out
}

/// The SVG text of the plot of `report`'s kept runs.
pub fn svg(report: &Report) -> Result<String, String> {
    let policies = policies(report);
    let panels = panels(report, &policies);
    if panels.is_empty() {
        return Err("nothing to plot: no kept run has a metric".into());
    }
    let cols = 2u32.min(panels.len() as u32);
    let rows = (panels.len() as u32).div_ceil(cols);
    let (w, h) = (460 * cols, 300 * rows);
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let areas = root.split_evenly((rows as usize, cols as usize));
        for (panel, area) in panels.iter().zip(areas.iter()) {
            draw_panel(panel, &policies, area).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_panel(
    panel: &Panel,
    policies: &[&'static str],
    area: &Area<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    let all: Vec<f64> = panel
        .by_policy
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let hi = if hi > lo { hi * 1.1 } else { lo + 1.0 };
    let n = panel.by_policy.len();
    let names: Vec<&str> = panel.by_policy.iter().map(|(p, _)| *p).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(24)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), lo..hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                names
                    .get(i as usize)
                    .map_or(String::new(), |s| (*s).to_string())
            } else {
                String::new()
            }
        })
        .draw()?;
    for (k, (policy, values)) in panel.by_policy.iter().enumerate() {
        let color = policies
            .iter()
            .position(|p| p == policy)
            .map_or(BLACK, |i| COLORS[i % COLORS.len()]);
        let x0 = k as f64;
        let spread = 0.25;
        let m = values.len().max(2) as f64 - 1.0;
        chart.draw_series(values.iter().enumerate().map(|(j, &v)| {
            // Spread the runs sideways, in run order, so equal values stay visible.
            let x = if values.len() == 1 {
                x0
            } else {
                x0 - spread + 2.0 * spread * j as f64 / m
            };
            Circle::new((x, v), 4, color.filled())
        }))?;
        if let Some(med) = median(values) {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x0 - 0.38, med), (x0 + 0.38, med)],
                ShapeStyle::from(&BLACK).stroke_width(2),
            )))?;
        }
    }
    Ok(())
}

/// `--plot-sweep`'s panels: the field of a run's JSON each reads (`kicks_per_sec` is derived:
/// `kicks_sent` over `seconds`) and which way is better.
pub const SWEEP_METRICS: [(&str, &str); 7] = [
    ("ilb_cpu_ms_per_s", "lower"),
    ("ilb_busiest_share", "lower"),
    ("idle_while_waiting_ms_per_s", "lower"),
    ("runnable_wait_us_p99", "lower"),
    ("throughput", "higher"),
    ("ilb_passes_per_sec", "info"),
    ("kicks_per_sec", "info"),
];

/// A panel's medians drawn on a log axis when they are all positive and the largest is at
/// least this many times the smallest (policies' ILB time differs by 100x and more).
const LOG_SPREAD: f64 = 20.0;

/// One metric of one run's JSON object (`None` when absent, null or not finite).
fn sweep_value(run: &serde_json::Value, metric: &str) -> Option<f64> {
    let v = if metric == "kicks_per_sec" {
        let secs = run.get("seconds")?.as_f64().filter(|s| *s > 0.0)?;
        run.get("kicks_sent")?.as_f64()? / secs
    } else {
        run.get(metric)?.as_f64()?
    };
    v.is_finite().then_some(v)
}

/// One panel of a sweep: a metric's median per policy at each utilization.
struct SweepPanel {
    title: String,
    log: bool,
    /// By policy (in [`Sweep::policies`] order): `(utilization, median)`, by utilization.
    lines: Vec<(usize, Vec<(f64, f64)>)>,
}

/// What `--plot-sweep` draws: one scenario's reports at several utilizations.
struct Sweep {
    utils: Vec<u32>,
    policies: Vec<String>,
    panels: Vec<SweepPanel>,
}

/// Reads the reports (`(name, JSON text)`, the name for errors) of one scenario at several
/// utilizations into their panels.
fn sweep(reports: &[(String, String)]) -> Result<Sweep, String> {
    if reports.is_empty() {
        return Err("no report to plot".into());
    }
    // (utilization, name, kept runs), sorted by utilization.
    let mut points: Vec<(u32, &str, Vec<serde_json::Value>)> = Vec::new();
    let mut scenario: Option<(String, &str)> = None;
    for (name, text) in reports {
        let json: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("{name}: not a JSON report of nohz-stress: {e}"))?;
        let runs = json
            .get("runs")
            .and_then(|r| r.as_array())
            .ok_or_else(|| format!("{name}: not a JSON report of nohz-stress (no `runs`)"))?;
        if runs.is_empty() {
            return Err(format!("{name}: the report has no runs"));
        }
        for run in runs {
            let engine = run.get("engine").and_then(|e| e.as_str());
            if engine != Some("virtual") {
                return Err(format!(
                    "{name}: not a report of --engine virtual (a run's engine is {}): a sweep \
                     plots the engine's balancing metrics",
                    engine.unwrap_or("missing")
                ));
            }
            let s = run.get("scenario").and_then(|s| s.as_str()).unwrap_or("");
            match &scenario {
                None => scenario = Some((s.to_string(), name)),
                Some((first, from)) if first != s => {
                    return Err(format!(
                        "{name} has {s} runs but {from} has {first}: a sweep plots one scenario"
                    ));
                }
                Some(_) => {}
            }
        }
        let util = json
            .get("util_pct")
            .and_then(|u| u.as_u64())
            .and_then(|u| u32::try_from(u).ok())
            .ok_or_else(|| {
                format!(
                    "{name}: the report has no utilization (`util_pct`): write it with \
                     --engine virtual --util PCT"
                )
            })?;
        if let Some((_, other, _)) = points.iter().find(|(u, _, _)| *u == util) {
            return Err(format!(
                "{other} and {name} are both at {util} % utilization: one report per \
                 utilization"
            ));
        }
        let kept = runs
            .iter()
            .filter(|r| r.get("descheduled").and_then(|d| d.as_bool()) != Some(true))
            .cloned()
            .collect();
        points.push((util, name, kept));
    }
    points.sort_by_key(|(u, _, _)| *u);
    let scenario = scenario.map(|(s, _)| s).unwrap_or_default();
    let policy_of = |r: &serde_json::Value| {
        r.get("policy")
            .and_then(|p| p.as_str())
            .unwrap_or("?")
            .to_string()
    };
    let mut policies: Vec<String> = Vec::new();
    for (_, _, runs) in &points {
        for r in runs {
            let p = policy_of(r);
            if !policies.contains(&p) {
                policies.push(p);
            }
        }
    }
    let mut panels = Vec::new();
    for &(metric, better) in &SWEEP_METRICS {
        let lines: Vec<(usize, Vec<(f64, f64)>)> = policies
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let line = points
                    .iter()
                    .filter_map(|(u, _, runs)| {
                        let v: Vec<f64> = runs
                            .iter()
                            .filter(|r| policy_of(r) == *p)
                            .filter_map(|r| sweep_value(r, metric))
                            .collect();
                        Some((f64::from(*u), median(&v)?))
                    })
                    .collect();
                (k, line)
            })
            .filter(|(_, line): &(usize, Vec<_>)| !line.is_empty())
            .collect();
        if lines.is_empty() {
            continue;
        }
        let ys = || lines.iter().flat_map(|(_, l)| l.iter().map(|&(_, y)| y));
        let lo = ys().fold(f64::INFINITY, f64::min);
        let hi = ys().fold(f64::NEG_INFINITY, f64::max);
        let log = lo > 0.0 && hi >= LOG_SPREAD * lo;
        let arrow = match better {
            "higher" => ", higher is better",
            "lower" => ", lower is better",
            _ => "",
        };
        let scale = if log { ", log scale" } else { "" };
        panels.push(SweepPanel {
            title: format!("{scenario}: {metric} (median{arrow}{scale})"),
            log,
            lines,
        });
    }
    if panels.is_empty() {
        return Err("nothing to plot: no run has a balancing metric".into());
    }
    Ok(Sweep {
        utils: points.iter().map(|(u, _, _)| *u).collect(),
        policies,
        panels,
    })
}

/// The SVG text of `--plot-sweep`: from one scenario's reports (`(name, JSON text)`, as
/// `--json` or `--out` wrote them, each at its own `--util`), one panel per metric of
/// [`SWEEP_METRICS`] the runs have, utilization across, one line per policy through its
/// median over the seeds at each utilization.
pub fn sweep_svg(reports: &[(String, String)]) -> Result<String, String> {
    let sweep = sweep(reports)?;
    let cols = 2u32.min(sweep.panels.len() as u32);
    let rows = (sweep.panels.len() as u32).div_ceil(cols);
    let w = 460 * cols;
    let per_row = ((w - 20) / LEGEND_STEP).max(1) as usize;
    let legend_h = 24 * sweep.policies.len().div_ceil(per_row) as u32 + 8;
    let h = legend_h + 300 * rows;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (legend, grid) = root.split_vertically(legend_h);
        draw_legend(&sweep.policies, per_row, &legend).map_err(|e| e.to_string())?;
        let areas = grid.split_evenly((rows as usize, cols as usize));
        for (panel, area) in sweep.panels.iter().zip(areas.iter()) {
            draw_sweep_panel(panel, &sweep.utils, area).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

/// A legend entry's width, pixels.
const LEGEND_STEP: u32 = 160;

fn draw_legend(
    policies: &[String],
    per_row: usize,
    area: &Area<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    for (k, policy) in policies.iter().enumerate() {
        let x = 20 + (k % per_row) as i32 * LEGEND_STEP as i32;
        let y = 16 + (k / per_row) as i32 * 24;
        let color = COLORS[k % COLORS.len()];
        area.draw(&PathElement::new(
            vec![(x, y), (x + 24, y)],
            color.stroke_width(2),
        ))?;
        area.draw(&Circle::new((x + 12, y), 3, color.filled()))?;
        area.draw(&Text::new(
            policy.as_str(),
            (x + 30, y - 7),
            ("sans-serif", 14),
        ))?;
    }
    Ok(())
}

/// An axis with the ticks given: labelled ones (`bold`) and lighter grid lines (`light`),
/// and no others (the utilization axis: the reports' utilizations; a log axis: 1, 2, 5 x 10^k).
struct Ticked<R> {
    inner: R,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// A log axis's ticks from `lo` to `hi` (both positive): the powers of ten labelled, or 1, 2
/// and 5 times them when fewer than three powers fall in the range; the other multiples light.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let mut all: Vec<(f64, u32)> = Vec::new();
    for k in lo.log10().floor() as i32..=hi.log10().floor() as i32 {
        for m in 1..10u32 {
            // m x 10^k, written so that 10^-2 is 0.01 exactly as printed.
            let v = if k < 0 {
                f64::from(m) / 10f64.powi(-k)
            } else {
                f64::from(m) * 10f64.powi(k)
            };
            if (lo..=hi).contains(&v) {
                all.push((v, m));
            }
        }
    }
    let decades = all.iter().filter(|(_, m)| *m == 1).count();
    let labelled = |m: u32| m == 1 || (decades < 3 && (m == 2 || m == 5));
    let pick = |want: bool| {
        all.iter()
            .filter(|&&(_, m)| labelled(m) == want)
            .map(|&(v, _)| v)
            .collect()
    };
    (pick(true), pick(false))
}

/// A tick's label: at most three significant digits, no trailing zeros.
fn tick_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

fn draw_sweep_panel(
    panel: &SweepPanel,
    utils: &[u32],
    area: &Area<'_>,
) -> Result<(), Box<dyn std::error::Error>> {
    let first = f64::from(utils[0]);
    let last = f64::from(utils[utils.len() - 1]);
    let pad = ((last - first) * 0.08).max(2.0);
    let x = Ticked {
        inner: RangedCoordf64::from(first - pad..last + pad),
        bold: utils.iter().map(|&u| f64::from(u)).collect(),
        light: Vec::new(),
    };
    let ys = || {
        panel
            .lines
            .iter()
            .flat_map(|(_, l)| l.iter().map(|&(_, y)| y))
    };
    let lo = ys().fold(f64::INFINITY, f64::min);
    let hi = ys().fold(f64::NEG_INFINITY, f64::max);
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 14))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60);
    if panel.log {
        let (lo, hi) = (lo / 1.5, hi * 1.5);
        let (bold, light) = log_ticks(lo, hi);
        let y = Ticked {
            inner: LogCoord::from((lo..hi).log_scale()),
            bold,
            light,
        };
        let chart = builder.build_cartesian_2d(x, y)?;
        draw_sweep_lines(chart, panel)
    } else {
        let lo = lo.min(0.0);
        let hi = if hi > lo { hi * 1.1 } else { lo + 1.0 };
        let chart = builder.build_cartesian_2d(x, lo..hi)?;
        draw_sweep_lines(chart, panel)
    }
}

fn draw_sweep_lines<'a, X, Y>(
    mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    panel: &SweepPanel,
) -> Result<(), Box<dyn std::error::Error>>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc("utilization")
        .x_label_formatter(&|x| format!("{x:.0} %"))
        .y_label_formatter(&|y| tick_label(*y))
        .draw()?;
    for (k, line) in &panel.lines {
        let color = COLORS[k % COLORS.len()];
        chart.draw_series(LineSeries::new(line.iter().copied(), color.stroke_width(2)))?;
        chart.draw_series(line.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three decades or more: the powers of ten labelled; fewer: 1, 2 and 5 times them.
    #[test]
    fn log_ticks_label_decades_or_one_two_five() {
        let (bold, light) = log_ticks(0.004, 150.0);
        assert_eq!(bold, [0.01, 0.1, 1.0, 10.0, 100.0]);
        // 0.004..0.009, then 2..9 times each of 0.01, 0.1, 1 and 10.
        assert_eq!(light.len(), 6 + 8 * 4);
        let (bold, light) = log_ticks(650.0, 40_000.0);
        assert_eq!(bold, [1000.0, 2000.0, 5000.0, 10_000.0, 20_000.0]);
        assert!(light.contains(&700.0) && light.contains(&30_000.0));
        assert!(light.iter().all(|v| (650.0..=40_000.0).contains(v)));
    }

    #[test]
    fn the_colours_are_distinct() {
        for (i, a) in COLORS.iter().enumerate() {
            for b in &COLORS[i + 1..] {
                assert_ne!((a.0, a.1, a.2), (b.0, b.1, b.2));
            }
        }
    }

    #[test]
    fn tick_labels_have_three_significant_digits_at_most() {
        for (v, s) in [
            (0.0, "0"),
            (0.01, "0.01"),
            (0.5, "0.5"),
            (2.0, "2"),
            (1.25, "1.25"),
        ] {
            assert_eq!(tick_label(v), s);
        }
        for (v, s) in [(1400.0, "1400"), (120_000.0, "120000"), (0.3333, "0.333")] {
            assert_eq!(tick_label(v), s);
        }
    }
}
