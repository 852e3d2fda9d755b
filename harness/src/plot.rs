//! `--plot FILE.svg`: per scenario and metric, every kept run as a point per policy, with each
//! policy's median marked as a bar.
//!
//! Drawn with `plotters`, SVG backend only (default features off: no font or image library,
//! nothing from the system; the SVG names a sans-serif font and the viewer draws the text).

use crate::measure::median;
use crate::report::{METRICS, QUALITY, Report, applies};
use crate::scenario::RunStats;
use plotters::prelude::*;

/// The policies' colours, in the order the report first names each policy (a run of
/// `--policy all` or of one of its groups): the first three are the ones earlier plots used
/// for `legacy`, `patched` and `scalable`.
const COLORS: [RGBColor; 8] = [
    RGBColor(200, 60, 40),
    RGBColor(40, 90, 200),
    RGBColor(30, 150, 70),
    RGBColor(150, 60, 170),
    RGBColor(230, 140, 20),
    RGBColor(20, 160, 170),
    RGBColor(120, 90, 50),
    RGBColor(110, 110, 110),
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
