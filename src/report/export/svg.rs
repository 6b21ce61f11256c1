//! `figures/*.svg`, at the size they print in a paper: a figure of one panel is one column
//! wide (3.5 in), one of several panels the page's width (7 in), two panels to a row. The SVG
//! says so (`width="3.5in"`), and its units are laid out at 720 px for 7 in, so a unit prints
//! at 0.7 pt and the smallest text, 13 px, at 9.1 pt. The title, legend and any note sit
//! above and below the panels, never over data. Where series share an x value, their markers
//! are set a little apart sideways, so that equal values never hide one another.
//!
//! plotters draws the frame, axes, ticks and grid (no system fonts needed). The series, bars
//! and legend are written as SVG elements of their own, because plotters' SVG backend has no
//! dash patterns: each series is a `<g class="series">` whose `data-marker` and `data-dash`
//! name its marker and line pattern, each panel's data area a `<rect class="plot-area">`, the
//! legend a `<g class="legend">` — which also lets tests read a figure.

mod legend;
mod overlay;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::figures::{Chart, Figure, Panel, Series, figures};
use crate::report::format::size_tick;
use legend::{LEGEND_PX, LEGEND_TEXT_X, LegendEntry, PAD};
use overlay::{Overlay, esc};

pub struct Svg;

impl Exporter for Svg {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
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

/// Widths in px of a figure of several panels (the page, 7 in) and of one (a column, 3.5 in).
const PAGE_W: u32 = 720;
const COLUMN_W: u32 = 360;
/// Inches the page width prints at: [`PAGE_W`] px are 7 in, so every px is 0.7 pt.
const PAGE_IN: f64 = 7.0;
const TITLE_LINE_H: u32 = 20;
const PANEL_H_HALF: u32 = 300;
const PANEL_H_FULL: u32 = 290;
const BAR_ROW_H: u32 = 46;
const BAR_PANEL_EXTRA: u32 = 110;
const NOTE_LINE_H: u32 = 24;

/// Font sizes in px as they appear in the SVG (× 0.7 for points in print).
const TITLE_PX: f64 = 15.0;
const CAPTION_PX: f64 = 14.0;
const AXIS_PX: f64 = 14.0;
const TICK_PX: f64 = 13.0;

/// plotters writes `font-size` as the requested size / 1.24; this asks for `px` on the page.
fn font(px: f64) -> (&'static str, f64) {
    ("sans-serif", px * 1.24)
}

fn plot_err<E: std::fmt::Debug>(e: E) -> ReportError {
    ReportError::Plot(format!("{e:?}"))
}

/// Where a figure's parts go.
struct Layout {
    /// [`PAGE_W`] or [`COLUMN_W`].
    width: u32,
    title: Vec<String>,
    cols: usize,
    rows: usize,
    panel_h: u32,
    legend: Vec<LegendEntry>,
    note: Vec<String>,
}

impl Layout {
    fn of(fig: &Figure) -> Self {
        let n = fig.panels.len().max(1);
        let (cols, panel_h) = match fig.chart {
            Chart::Bars => {
                let bars = fig.panels.iter().map(|p| p.series.len()).max().unwrap_or(1);
                (1, BAR_PANEL_EXTRA + BAR_ROW_H * bars as u32)
            }
            Chart::Lines if n > 1 => (2, PANEL_H_HALF),
            Chart::Lines => (1, PANEL_H_FULL),
        };
        // Bars carry their labels; lines get one legend for all panels.
        let width = if cols > 1 { PAGE_W } else { COLUMN_W };
        let mut legend: Vec<LegendEntry> = Vec::new();
        if fig.chart == Chart::Lines {
            for s in fig.panels.iter().flat_map(|p| &p.series) {
                if !legend.iter().any(|e| e.label == s.label) {
                    legend.push(LegendEntry {
                        label: s.label.clone(),
                        lines: wrap(&s.label, width as f64 - (LEGEND_TEXT_X + PAD) as f64),
                        style: s.style,
                        reference: s.reference,
                    });
                }
            }
        }
        Self {
            width,
            title: wrap_at(&fig.title, width as f64 - 2.0 * PAD as f64, TITLE_PX),
            cols,
            rows: n.div_ceil(cols),
            panel_h,
            legend,
            note: fig
                .note
                .as_deref()
                .map(|n| wrap(n, width as f64 - 2.0 * PAD as f64))
                .unwrap_or_default(),
        }
    }

    fn grid_h(&self) -> u32 {
        self.panel_h * self.rows as u32
    }

    fn legend_h(&self) -> u32 {
        if self.legend.is_empty() {
            0
        } else {
            self.legend.iter().map(LegendEntry::height).sum::<u32>() + 12
        }
    }

    fn title_h(&self) -> u32 {
        TITLE_LINE_H * self.title.len() as u32 + 10
    }

    fn height(&self) -> u32 {
        self.title_h() + self.grid_h() + self.legend_h() + NOTE_LINE_H * self.note.len() as u32 + 8
    }
}

/// Splits text into lines that fit `width` px at [`LEGEND_PX`].
fn wrap(text: &str, width: f64) -> Vec<String> {
    wrap_at(text, width, LEGEND_PX)
}

/// Splits text into lines that fit `width` px at `px` (DejaVu Sans averages about 0.58 em per
/// character in these labels).
fn wrap_at(text: &str, width: f64, px: f64) -> Vec<String> {
    let max = (width / (px * 0.58)) as usize;
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= max => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_owned()),
        }
    }
    lines
}

/// Draws one figure as an SVG document.
pub fn render(fig: &Figure) -> Result<String, ReportError> {
    let layout = Layout::of(fig);
    let mut buf = String::new();
    let mut overlay = Overlay::default();
    {
        let root =
            SVGBackend::with_string(&mut buf, (layout.width, layout.height())).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let (_, rest) = root.split_vertically(layout.title_h());
        let (grid, _) = rest.split_vertically(layout.grid_h());
        let areas = grid.split_evenly((layout.rows, layout.cols));
        for (panel, area) in fig.panels.iter().zip(areas.iter()) {
            match fig.chart {
                Chart::Lines => lines_panel(fig, panel, area, &mut overlay)?,
                Chart::Bars => bars_panel(fig, panel, area, &mut overlay)?,
            }
        }
        root.present().map_err(plot_err)?;
    }
    for (i, line) in layout.title.iter().enumerate() {
        let y = (TITLE_LINE_H * (i as u32 + 1)) as i32;
        overlay.text(
            layout.width as i32 / 2,
            y,
            TITLE_PX,
            "middle",
            line,
            "title",
        );
    }
    let mut y = (layout.title_h() + layout.grid_h()) as i32;
    overlay.legend(&layout.legend, y);
    y += layout.legend_h() as i32;
    for line in &layout.note {
        y += NOTE_LINE_H as i32;
        overlay.text(PAD, y - 6, LEGEND_PX, "start", line, "note");
    }
    let end = buf.rfind("</svg>").unwrap_or(buf.len());
    buf.insert_str(end, &overlay.0);
    Ok(with_title_element(
        at_print_size(buf, layout.width, layout.height()),
        &fig.title,
    ))
}

/// Declares the figure's print size on its root: `width="3.5in"` for [`COLUMN_W`] px, the
/// px kept as its viewBox, so every px prints at 0.7 pt.
fn at_print_size(svg: String, width: u32, height: u32) -> String {
    let inches = |px: u32| px as f64 * PAGE_IN / PAGE_W as f64;
    let from = format!(r#"width="{width}" height="{height}""#);
    let to = format!(
        r#"width="{:.3}in" height="{:.3}in""#,
        inches(width),
        inches(height)
    );
    // plotters opens the document with the root's width and height.
    if svg.starts_with(&format!("<svg {from}")) {
        svg.replacen(&from, &to, 1)
    } else {
        svg
    }
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
    format!(
        "{}\n<title>{}</title>{}",
        &svg[..at],
        esc(title),
        &svg[at..]
    )
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

/// Ticks for a size axis: powers of two, every `step`-th, so that at most `max` fit
/// between `lo` and `hi`.
fn size_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let (a, b) = (
        lo.max(1.0).log2().ceil() as i32,
        hi.max(1.0).log2().floor() as i32,
    );
    for step in [1, 2, 3, 4, 5, 10] {
        let ticks: Vec<f64> = (a..=b)
            .filter(|k| k % step == 0)
            .map(|k| 2f64.powi(k))
            .collect();
        if ticks.len() <= max {
            return ticks;
        }
    }
    vec![2f64.powi(a), 2f64.powi(b)]
}

/// A log range widened to whole decades: plotters labels a log axis only reliably then, and
/// readers find values on it faster.
fn decades(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let lo = if lo > 0.0 { lo } else { 1e-3 };
    let hi = hi.max(lo * 10.0);
    10f64.powf(lo.log10().floor())..10f64.powf(hi.log10().ceil())
}

fn lines_panel(
    fig: &Figure,
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    overlay: &mut Overlay,
) -> Result<(), ReportError> {
    let Some(((x0, x1), (y0, y1))) = bounds(panel) else {
        return Ok(());
    };
    let narrow = area.dim_in_pixel().0 < COLUMN_W + 20;
    let size_x = || {
        let lo = if x0 > 0.0 { x0 } else { 1.0 };
        let max = if narrow { 4 } else { 7 };
        // A few measured sizes are the ticks; many (a NetPIPE sweep) get powers of two.
        let mut measured: Vec<f64> = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .filter(|x| *x > 0.0)
            .collect();
        measured.sort_by(f64::total_cmp);
        measured.dedup();
        let ticks = if measured.len() <= max {
            measured
        } else {
            size_ticks(lo, x1, max)
        };
        ((lo / 1.5)..(x1.max(lo) * 1.5))
            .log_scale()
            .with_key_points(ticks)
    };
    let count_x = || {
        let pad = ((x1 - x0) * 0.08).max(0.5);
        (x0 - pad)..(x1 + pad)
    };
    let lin_y = 0.0..(if y1 > 0.0 { y1 * 1.08 } else { 1.0 });
    let frame = Frame { fig, panel, area };
    match (fig.x_log, fig.y_log) {
        (true, true) => frame.draw(size_x(), decades(y0, y1).log_scale(), overlay),
        (true, false) => frame.draw(size_x(), lin_y, overlay),
        (false, true) => frame.draw(count_x(), decades(y0, y1).log_scale(), overlay),
        (false, false) => frame.draw(count_x(), lin_y, overlay),
    }
}

/// One panel of a line figure being drawn.
struct Frame<'a, 'b, 'c> {
    fig: &'a Figure,
    panel: &'a Panel,
    area: &'b DrawingArea<SVGBackend<'c>, Shift>,
}

impl Frame<'_, '_, '_> {
    fn draw<X, Y>(&self, x: X, y: Y, overlay: &mut Overlay) -> Result<(), ReportError>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let fig = self.fig;
        let y_span = bounds(self.panel).map_or(1.0, |(_, (_, hi))| hi);
        let mut chart = ChartBuilder::on(self.area)
            .caption(&self.panel.title, font(CAPTION_PX))
            .margin(8)
            .margin_right(20)
            .x_label_area_size(58)
            .y_label_area_size(84)
            .build_cartesian_2d(x, y)
            .map_err(plot_err)?;
        // A count axis is labelled only where something was measured (1, 4 and 7 pairs).
        let measured = |v: f64| {
            self.panel
                .series
                .iter()
                .any(|s| s.points.iter().any(|p| (p.0 - v).abs() < 1e-9))
        };
        let x_fmt = |v: &f64| {
            if fig.x_log {
                size_tick(*v)
            } else if measured(*v) {
                format!("{v:.0}")
            } else {
                String::new()
            }
        };
        let y_fmt = |v: &f64| {
            if fig.y_log {
                log_tick(*v)
            } else {
                linear_tick(*v, y_span)
            }
        };
        chart
            .configure_mesh()
            .x_desc(fig.x_label.as_str())
            .y_desc(fig.y_label.as_str())
            .y_labels(6)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .label_style(font(TICK_PX))
            .axis_desc_style(font(AXIS_PX))
            .light_line_style(TRANSPARENT)
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(plot_err)?;
        overlay.plot_area(chart.plotting_area().get_pixel_range());
        let own: Vec<&Series> = self.panel.series.iter().filter(|s| !s.reference).collect();
        for s in &self.panel.series {
            let shift = dodge(fig, &own, s);
            let at = |x: f64, y: f64| chart.backend_coord(&(shift(x), y));
            let points: Vec<(i32, i32)> = s.points.iter().map(|&(x, y)| at(x, y)).collect();
            let whiskers: Vec<(i32, i32, i32)> = s
                .whiskers
                .iter()
                .map(|&(x, lo, hi)| {
                    let (px, plo) = at(x, lo);
                    (px, plo, at(x, hi).1)
                })
                .collect();
            overlay.series(s, &points, &whiskers);
        }
        Ok(())
    }
}

/// How far apart sideways the markers of series sharing an x value are set: a fifth of an
/// octave on a size axis, a tenth of a pair on a count axis, between neighbours.
const DODGE_OCTAVES: f64 = 0.2;
const DODGE_COUNT: f64 = 0.1;

/// Where series `s` of a panel whose own (non-reference) series are `own` draws an x value:
/// the series centred around it in their order, where the figure dodges.
fn dodge(fig: &Figure, own: &[&Series], s: &Series) -> impl Fn(f64) -> f64 + use<> {
    let step = match own.iter().position(|o| std::ptr::eq(*o, s)) {
        Some(k) if fig.dodge && own.len() > 1 => k as f64 - (own.len() - 1) as f64 / 2.0,
        _ => 0.0,
    };
    let log = fig.x_log;
    move |x: f64| {
        if log {
            x * 2f64.powf(step * DODGE_OCTAVES)
        } else {
            x + step * DODGE_COUNT
        }
    }
}

/// A bar chart panel: one horizontal bar per series, its label above it and its value at
/// its end, so no legend is needed.
fn bars_panel(
    fig: &Figure,
    panel: &Panel,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    overlay: &mut Overlay,
) -> Result<(), ReportError> {
    let Some((_, (_, y1))) = bounds(panel) else {
        return Ok(());
    };
    let n = panel.series.len() as f64;
    let top = if y1 > 0.0 { y1 * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, font(CAPTION_PX))
        .margin(8)
        .margin_right(28)
        .x_label_area_size(58)
        .y_label_area_size(8)
        .build_cartesian_2d(0.0..top, 0.0..n)
        .map_err(plot_err)?;
    let x_fmt = |v: &f64| linear_tick(*v, y1);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc(fig.y_label.as_str())
        .x_labels(6)
        .x_label_formatter(&x_fmt)
        .label_style(font(TICK_PX))
        .axis_desc_style(font(AXIS_PX))
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.08))
        .draw()
        .map_err(plot_err)?;
    overlay.plot_area(chart.plotting_area().get_pixel_range());
    for (i, s) in panel.series.iter().enumerate() {
        let Some(&(_, v)) = s.points.first() else {
            continue;
        };
        // Rows from the top: series i spans y in [n - i - 1, n - i].
        let row = n - i as f64;
        let (x_start, row_top) = chart.backend_coord(&(0.0, row));
        let (x_end, row_bottom) = chart.backend_coord(&(v, row - 1.0));
        let whisker = s.whiskers.first().map(|&(_, lo, hi)| {
            (
                chart.backend_coord(&(lo, row)).0,
                chart.backend_coord(&(hi, row)).0,
            )
        });
        overlay.bar(s, (x_start, x_end), (row_top, row_bottom), whisker, v);
    }
    Ok(())
}

/// A tick on a log axis, as short as its value allows and the same style at every decade:
/// `0.01`, `0.1`, `1`, `10`, `100`; `2.5` between them.
fn log_tick(v: f64) -> String {
    // Two significant digits at most, trailing zeros dropped.
    let decimals = (1.0 - v.log10().floor()).max(0.0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// A tick on a linear axis spanning `span`: as many decimals as the tick step needs (plotters
/// steps by 1, 2 or 5 × 10^k), the same for every tick of the axis.
fn linear_tick(v: f64, span: f64) -> String {
    let step = (span / 6.0).max(f64::MIN_POSITIVE);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_ticks_are_powers_of_two_that_fit() {
        assert_eq!(size_ticks(4.0, 8192.0, 4), [8.0, 64.0, 512.0, 4096.0]);
        assert_eq!(
            size_ticks(4.0, 8192.0, 7),
            [4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0]
        );
        assert!(size_ticks(1.0, 1048576.0, 4).len() <= 4);
    }

    #[test]
    fn log_ticks_are_as_short_as_their_values() {
        let ticks: Vec<String> = [0.01, 0.1, 1.0, 10.0, 100.0, 2.5, 0.25]
            .into_iter()
            .map(log_tick)
            .collect();
        assert_eq!(ticks, ["0.01", "0.1", "1", "10", "100", "2.5", "0.25"]);
    }

    #[test]
    fn notes_wrap_within_the_width() {
        let long = "word ".repeat(60);
        let lines = wrap(&long, 400.0);
        assert!(lines.len() > 1);
        let max = (400.0 / (LEGEND_PX * 0.58)) as usize;
        assert!(lines.iter().all(|l| l.chars().count() <= max));
    }
}
