//! `figures/*.svg`: every figure drawn with plotters' SVG backend (no system fonts needed).

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::figures::{Figure, Panel, figures};
use crate::report::format::{human, size_tick};
use crate::report::media::MediaReport;

pub struct Svg;

impl Exporter for Svg {
    fn export(
        &self,
        report: &Report,
        _media: &MediaReport,
    ) -> Result<Vec<RenderedFile>, ReportError> {
        let mut out = Vec::new();
        for f in figures(report) {
            out.push(RenderedFile {
                path: format!("figures/{}.svg", f.stem).into(),
                bytes: render(&f)?.into_bytes(),
            });
        }
        for (name, svg) in &report.topology_drawings {
            out.push(RenderedFile {
                path: format!("figures/topology-{name}.svg").into(),
                bytes: svg.clone().into_bytes(),
            });
        }
        Ok(out)
    }
}

/// Colour-blind-friendly palette (Okabe–Ito, then Tol's muted), cycled by series index.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
    RGBColor(0, 0, 0),
    RGBColor(136, 34, 85),
    RGBColor(68, 170, 153),
    RGBColor(153, 153, 51),
];

const PANEL_W: u32 = 560;
const SINGLE_W: u32 = 800;
const PANEL_H: u32 = 420;
const TITLE_H: u32 = 40;

fn plot_err<E: std::fmt::Debug>(e: E) -> ReportError {
    ReportError::Plot(format!("{e:?}"))
}

/// Draws one figure as an SVG document.
pub fn render(fig: &Figure) -> Result<String, ReportError> {
    let n = fig.panels.len().max(1) as u32;
    let cols = n.min(4);
    let rows = n.div_ceil(cols);
    // A figure with one panel gets room for a long title and a long legend.
    let panel_w = if n == 1 { SINGLE_W } else { PANEL_W };
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (panel_w * cols, PANEL_H * rows + TITLE_H))
            .into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let body = root
            .titled(&fig.title, ("sans-serif", 22))
            .map_err(plot_err)?;
        let areas = body.split_evenly((rows as usize, cols as usize));
        for (panel, area) in fig.panels.iter().zip(areas.iter()) {
            draw_panel(fig, panel, area)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(with_title_element(buf, &fig.title))
}

/// Adds an SVG `<title>` so the figure is named for screen readers and file browsers too.
fn with_title_element(svg: String, title: &str) -> String {
    let Some(open) = svg.find("<svg") else {
        return svg;
    };
    let Some(end) = svg[open..].find('>') else {
        return svg;
    };
    let at = open + end + 1;
    let escaped = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!("{}\n<title>{escaped}</title>{}", &svg[..at], &svg[at..])
}

fn bounds(panel: &Panel) -> Option<((f64, f64), (f64, f64))> {
    let mut xs = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let first = xs.next()?;
    let (mut x0, mut x1) = (first, first);
    for x in xs {
        x0 = x0.min(x);
        x1 = x1.max(x);
    }
    let ys = panel.series.iter().flat_map(|s| {
        s.points
            .iter()
            .map(|p| p.1)
            .chain(s.whiskers.iter().flat_map(|w| [w.1, w.2]))
    });
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for y in ys {
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    Some(((x0, x1), (y0, y1)))
}

fn draw_panel(
    fig: &Figure,
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
) -> Result<(), ReportError> {
    let Some(((x0, x1), (y0, y1))) = bounds(panel) else {
        return Ok(());
    };
    let log_range = |lo: f64, hi: f64| {
        let lo = if lo > 0.0 { lo } else { 1e-3 };
        let hi = hi.max(lo);
        (lo / 1.5)..(hi * 1.5)
    };
    let lin_x = || {
        let pad = ((x1 - x0) * 0.05).max(0.5);
        (x0 - pad)..(x1 + pad)
    };
    // Headroom above the data for the legend, which sits in the upper left.
    let headroom = 1.08 + 0.06 * panel.series.len() as f64;
    let lin_y = || 0.0..(if y1 > 0.0 { y1 * headroom } else { 1.0 });
    match (fig.x_log, fig.y_log) {
        (true, true) => draw_in(
            fig,
            panel,
            area,
            log_range(x0, x1).log_scale(),
            decades(y0, y1).log_scale(),
        ),
        (true, false) => draw_in(fig, panel, area, log_range(x0, x1).log_scale(), lin_y()),
        (false, true) => draw_in(fig, panel, area, lin_x(), decades(y0, y1).log_scale()),
        (false, false) => draw_in(fig, panel, area, lin_x(), lin_y()),
    }
}

/// A log range widened to whole decades: plotters labels a log axis only reliably then, and
/// readers find values on it faster.
fn decades(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let lo = if lo > 0.0 { lo } else { 1e-3 };
    let hi = hi.max(lo * 10.0);
    10f64.powf(lo.log10().floor())..10f64.powf(hi.log10().ceil())
}

fn draw_in<X, Y>(
    fig: &Figure,
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    x: X,
    y: Y,
) -> Result<(), ReportError>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let y_span = bounds(panel).map_or(1.0, |(_, (_, hi))| hi);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(plot_err)?;
    let x_fmt = |v: &f64| {
        if fig.x_log {
            size_tick(*v)
        } else if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            String::new()
        }
    };
    let y_fmt = |v: &f64| {
        if fig.y_log {
            human(*v)
        } else {
            linear_tick(*v, y_span)
        }
    };
    chart
        .configure_mesh()
        .x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .x_labels(10)
        .y_labels(10)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 14))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(plot_err)?;
    for (i, s) in panel.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let width = if s.reference { 1 } else { 2 };
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(width),
            ))
            .map_err(plot_err)?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
            });
        if !s.reference {
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(plot_err)?;
        }
        chart
            .draw_series(s.whiskers.iter().map(|&(x, lo, hi)| {
                ErrorBar::new_vertical(x, lo, (lo + hi) / 2.0, hi, color.stroke_width(1), 8)
            }))
            .map_err(plot_err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// A tick on a linear axis spanning `span`: as many decimals as the tick step needs (plotters
/// steps by 1, 2 or 5 × 10^k), the same for every tick of the axis.
fn linear_tick(v: f64, span: f64) -> String {
    let step = (span / 10.0).max(f64::MIN_POSITIVE);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}
