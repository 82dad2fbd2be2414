//! `gameday.svg`: latency over time for both services, the share of requests
//! answered, and the breaker's state, on one time axis with the phases marked.
//! Drawn with plotters' SVG backend; text is left to the SVG viewer's fonts.

use std::path::Path;

use plotters::coord::CoordTranslate;
use plotters::coord::Shift;
use plotters::prelude::*;
use seawall_core::State;

use crate::load::{Sample, Service};
use crate::phases::PHASES;
use crate::report::RunData;
use crate::stats::percentile;

const UNPROTECTED: RGBColor = RGBColor(214, 39, 40);
const PROTECTED: RGBColor = RGBColor(31, 119, 180);
const PHASE_LINE: RGBColor = RGBColor(120, 120, 120);
/// Latency axis (ms, log scale): from an answer the breaker gives at once to past
/// the unprotected service's 10 s client timeout.
const LATENCY_RANGE_MS: (f64, f64) = (0.1, 20_000.0);
/// Time bins per phase for the latency and answered-share lines.
const BINS_PER_PHASE: u64 = 20;

/// One time bin of one service.
struct Bin {
    t_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    served_pct: f64,
    fresh_pct: f64,
}

fn bins(run: &RunData, service: Service, t0: u64, bin_ns: u64) -> Vec<Bin> {
    let end = run.phases.last().map_or(t0, |p| p.end_ns);
    let n = (end.saturating_sub(t0)).div_ceil(bin_ns.max(1));
    let mut groups: Vec<Vec<&Sample>> = (0..n).map(|_| Vec::new()).collect();
    for s in run.samples.iter().filter(|s| s.service == service) {
        let k = usize::try_from(s.sent_ns.saturating_sub(t0) / bin_ns).unwrap_or(usize::MAX);
        if let Some(g) = groups.get_mut(k) {
            g.push(s);
        }
    }
    groups
        .iter()
        .enumerate()
        .filter(|(_, g)| !g.is_empty())
        .map(|(k, g)| {
            let mut lat: Vec<u64> = g.iter().map(|s| s.latency_ns).collect();
            lat.sort_unstable();
            let ms = |p| {
                percentile(&lat, p)
                    .map_or(0.0, |v| v as f64 / 1e6)
                    .max(LATENCY_RANGE_MS.0)
            };
            let n = g.len() as f64;
            Bin {
                t_s: (k as f64 + 0.5) * bin_ns as f64 / 1e9,
                p50_ms: ms(50),
                p99_ms: ms(99),
                served_pct: g.iter().filter(|s| s.served()).count() as f64 * 100.0 / n,
                fresh_pct: g.iter().filter(|s| s.fresh()).count() as f64 * 100.0 / n,
            }
        })
        .collect()
}

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing gameday.svg: {e}")
}

/// Draw the picture to `path`.
pub fn draw(run: &RunData, path: &Path) -> Result<(), String> {
    let t0 = run.phases.first().map_or(0, |p| p.start_ns);
    let end_s = run
        .phases
        .last()
        .map_or(1.0, |p| (p.end_ns - t0) as f64 / 1e9);
    let phase_ns = u64::from(run.phase_secs) * 1_000_000_000;
    let bin_ns = (phase_ns / BINS_PER_PHASE).max(1);
    let root = SVGBackend::new(path, (1280, 960)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let title = format!(
        "seawall gameday: seed {}, {} req/s to each service, {} s phases, deadline {} ms",
        run.seed,
        run.rate,
        run.phase_secs,
        run.settings.deadline_ns / 1_000_000
    );
    let root = root.titled(&title, ("sans-serif", 22)).map_err(err)?;
    let (top, rest) = root.split_vertically(470);
    let (middle, bottom) = rest.split_vertically(250);
    let phase_starts: Vec<f64> = run
        .phases
        .iter()
        .map(|p| (p.start_ns - t0) as f64 / 1e9)
        .collect();
    let series = Service::BOTH.map(|svc| (svc, run.row_name(svc), bins(run, svc, t0, bin_ns)));
    latency_chart(
        &top,
        end_s,
        &phase_starts,
        &series,
        run.settings.deadline_ns,
    )?;
    served_chart(&middle, end_s, &phase_starts, &series)?;
    breaker_chart(&bottom, end_s, &phase_starts, &run.breaker, t0)?;
    root.present().map_err(err)
}

/// The legend box every chart of the picture draws, at `position`.
fn legend<'a, 'b: 'a, C: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, C>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .margin(10)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.5))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)
}

fn color(s: Service) -> RGBColor {
    match s {
        Service::Unprotected => UNPROTECTED,
        Service::Protected => PROTECTED,
    }
}

fn latency_chart(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    end_s: f64,
    phase_starts: &[f64],
    series: &[(Service, &str, Vec<Bin>)],
    deadline_ns: u64,
) -> Result<(), String> {
    let (lo, hi) = LATENCY_RANGE_MS;
    // The caption is drawn by hand, so the phase names fit between it and the plot.
    area.draw(&Text::new(
        "latency seen by the client, per time bin (ms, log scale): p99 thick, p50 thin",
        (82, 4),
        ("sans-serif", 16).into_font().color(&BLACK),
    ))
    .map_err(err)?;
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .margin_top(48)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..end_s, (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("ms")
        .y_label_formatter(&|v| format!("{v}"))
        .draw()
        .map_err(err)?;
    let (base_x, base_y) = area.get_base_pixel();
    for (i, &x) in phase_starts.iter().enumerate() {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, lo), (x, hi)],
                PHASE_LINE.stroke_width(1),
            )))
            .map_err(err)?;
        // The phase's name just above the plot, right of its start line.
        let (px, py) = chart.backend_coord(&(x, hi));
        let name = PHASES.get(i).map_or("", |p| p.name);
        area.draw(&Text::new(
            format!("{} {name}", i + 1),
            (px - base_x + 4, py - base_y - 20),
            ("sans-serif", 14).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    let limit_ms = deadline_ns as f64 / 1e6;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(0.0, limit_ms), (end_s, limit_ms)],
            6,
            4,
            BLACK.stroke_width(1),
        ))
        .map_err(err)?
        .label(format!("deadline {limit_ms:.0} ms"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1)));
    for (svc, name, bins) in series {
        if name.is_empty() {
            continue;
        }
        let c = color(*svc);
        chart
            .draw_series(LineSeries::new(
                bins.iter().map(|b| (b.t_s, b.p99_ms)),
                c.stroke_width(3),
            ))
            .map_err(err)?
            .label(format!("{name} p99"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        chart
            .draw_series(LineSeries::new(
                bins.iter().map(|b| (b.t_s, b.p50_ms)),
                c.mix(0.6).stroke_width(1),
            ))
            .map_err(err)?
            .label(format!("{name} p50"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], c.mix(0.6).stroke_width(1))
            });
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)
}

fn served_chart(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    end_s: f64,
    phase_starts: &[f64],
    series: &[(Service, &str, Vec<Bin>)],
) -> Result<(), String> {
    let mut chart = ChartBuilder::on(area)
        .caption(
            "requests answered with product data (%): fresh or stale thick, fresh only thin",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..end_s, 0f64..105f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("%")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(err)?;
    for &x in phase_starts {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, 0.0), (x, 105.0)],
                PHASE_LINE.stroke_width(1),
            )))
            .map_err(err)?;
    }
    for (svc, name, bins) in series {
        if name.is_empty() {
            continue;
        }
        let c = color(*svc);
        chart
            .draw_series(LineSeries::new(
                bins.iter().map(|b| (b.t_s, b.served_pct)),
                c.stroke_width(3),
            ))
            .map_err(err)?
            .label(format!("{name} answered"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        if *svc == Service::Protected {
            chart
                .draw_series(LineSeries::new(
                    bins.iter().map(|b| (b.t_s, b.fresh_pct)),
                    c.mix(0.6).stroke_width(1),
                ))
                .map_err(err)?
                .label("protected fresh (the rest: stale cache)")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.mix(0.6).stroke_width(1))
                });
        }
    }
    legend(&mut chart, SeriesLabelPosition::LowerLeft)
}

/// The state as a level: closed 0, half-open 1, open (or forced open) 2.
fn level(s: State) -> i32 {
    match s {
        State::Closed | State::Disabled => 0,
        State::HalfOpen => 1,
        State::Open | State::ForcedOpen => 2,
    }
}

fn breaker_chart(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    end_s: f64,
    phase_starts: &[f64],
    samples: &[(u64, State)],
    t0: u64,
) -> Result<(), String> {
    let mut chart = ChartBuilder::on(area)
        .caption(
            "protected service: circuit breaker state",
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..end_s, -1i32..3i32)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_label_formatter(&|v| {
            match v {
                0 => "closed",
                1 => "half-open",
                2 => "open",
                _ => "",
            }
            .to_string()
        })
        .draw()
        .map_err(err)?;
    for &x in phase_starts {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, -1), (x, 3)],
                PHASE_LINE.stroke_width(1),
            )))
            .map_err(err)?;
    }
    // A step line: hold each sampled state until the next sample.
    let mut steps: Vec<(f64, i32)> = Vec::with_capacity(samples.len() * 2);
    for &(t, s) in samples {
        let x = t.saturating_sub(t0) as f64 / 1e9;
        if let Some(&(_, prev)) = steps.last()
            && prev != level(s)
        {
            steps.push((x, prev));
        }
        steps.push((x, level(s)));
    }
    chart
        .draw_series(LineSeries::new(steps, PROTECTED.stroke_width(2)))
        .map_err(err)?;
    Ok(())
}
