//! What is drawn over plotters' frame: series with their markers and dash patterns, bars,
//! the legend and notes, as SVG elements named by class for readers and tests.

use std::fmt::Write;

use super::legend::{LEGEND_LINE_H, LEGEND_PX, LEGEND_ROW_H, LEGEND_TEXT_X, LegendEntry, PAD};
use crate::report::figures::{Series, Style};
use crate::report::format::human;

/// Colour-blind-friendly palette (Okabe–Ito, then Tol's wine), indexed by [`Style::colour`].
const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000", "#882255",
];

/// Markers, indexed with [`DASHES`] by [`Style::shape`]: a series differs from the others
/// in marker and line pattern, not only in colour.
const MARKERS: [Marker; 8] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::OpenCircle,
    Marker::OpenSquare,
    Marker::Cross,
];

/// SVG `stroke-dasharray`s; the first is a solid line.
const DASHES: [&str; 8] = [
    "none",
    "9 4",
    "2 4",
    "12 4 2 4",
    "5 5",
    "16 5",
    "2 8",
    "12 3 3 3 3 3",
];

#[derive(Debug, Clone, Copy)]
enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    OpenCircle,
    OpenSquare,
    Cross,
}

impl Marker {
    fn name(self) -> &'static str {
        match self {
            Self::Circle => "circle",
            Self::Square => "square",
            Self::TriangleUp => "triangle-up",
            Self::Diamond => "diamond",
            Self::TriangleDown => "triangle-down",
            Self::OpenCircle => "open-circle",
            Self::OpenSquare => "open-square",
            Self::Cross => "cross",
        }
    }

    /// The marker centred on `(x, y)` as an SVG element.
    fn svg(self, x: i32, y: i32, colour: &str) -> String {
        const R: i32 = 6;
        let filled = format!(r#"fill="{colour}" stroke="{colour}""#);
        let open = format!(r##"fill="#FFFFFF" stroke="{colour}" stroke-width="2""##);
        let polygon = |pts: [(i32, i32); 4], style: &str| {
            let p: Vec<String> = pts.iter().map(|(a, b)| format!("{a},{b}")).collect();
            format!(
                r#"<polygon class="marker" points="{}" {style}/>"#,
                p.join(" ")
            )
        };
        match self {
            Self::Circle => {
                format!(r#"<circle class="marker" cx="{x}" cy="{y}" r="{R}" {filled}/>"#)
            }
            Self::OpenCircle => {
                format!(r#"<circle class="marker" cx="{x}" cy="{y}" r="{R}" {open}/>"#)
            }
            Self::Square | Self::OpenSquare => format!(
                r#"<rect class="marker" x="{}" y="{}" width="{}" height="{}" {}/>"#,
                x - R + 1,
                y - R + 1,
                2 * R - 2,
                2 * R - 2,
                if matches!(self, Self::Square) {
                    &filled
                } else {
                    &open
                }
            ),
            Self::TriangleUp => polygon(
                [
                    (x, y - R - 1),
                    (x + R + 1, y + R),
                    (x - R - 1, y + R),
                    (x, y - R - 1),
                ],
                &filled,
            ),
            Self::TriangleDown => polygon(
                [
                    (x, y + R + 1),
                    (x + R + 1, y - R),
                    (x - R - 1, y - R),
                    (x, y + R + 1),
                ],
                &filled,
            ),
            Self::Diamond => polygon(
                [
                    (x, y - R - 1),
                    (x + R + 1, y),
                    (x, y + R + 1),
                    (x - R - 1, y),
                ],
                &filled,
            ),
            Self::Cross => format!(
                r#"<path class="marker" d="M{} {}L{} {}M{} {}L{} {}" fill="none" stroke="{colour}" stroke-width="2.5"/>"#,
                x - R,
                y - R,
                x + R,
                y + R,
                x - R,
                y + R,
                x + R,
                y - R
            ),
        }
    }
}

pub fn colour(style: Style) -> &'static str {
    PALETTE[style.colour % PALETTE.len()]
}

fn marker(style: Style) -> Marker {
    MARKERS[style.shape % MARKERS.len()]
}

fn dash(style: Style) -> &'static str {
    DASHES[style.shape % DASHES.len()]
}

/// SVG elements drawn over what plotters drew, inserted before `</svg>`.
#[derive(Default)]
pub struct Overlay(pub String);

impl Overlay {
    pub fn plot_area(&mut self, (x, y): (std::ops::Range<i32>, std::ops::Range<i32>)) {
        let _ = writeln!(
            self.0,
            r#"<rect class="plot-area" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="none"/>"#,
            x.start,
            y.start,
            x.end - x.start,
            y.end - y.start
        );
    }

    fn group(&mut self, class: &str, label: &str, style: Style) {
        let _ = writeln!(
            self.0,
            r#"<g class="{class}" data-label="{}" data-marker="{}" data-dash="{}">"#,
            esc(label),
            marker(style).name(),
            dash(style)
        );
    }

    fn line(&mut self, points: &[(i32, i32)], style: Style, reference: bool) {
        let p: Vec<String> = points.iter().map(|(x, y)| format!("{x},{y}")).collect();
        let dashes = match dash(style) {
            "none" => String::new(),
            d => format!(r#" stroke-dasharray="{d}""#),
        };
        let _ = writeln!(
            self.0,
            r#"<polyline class="line" fill="none" stroke="{}" stroke-width="{}" stroke-linejoin="round"{dashes} points="{}"/>"#,
            colour(style),
            if reference { 1.5 } else { 2.5 },
            p.join(" ")
        );
    }

    /// A series: its line, its whiskers and a marker on every point.
    pub fn series(&mut self, s: &Series, points: &[(i32, i32)], whiskers: &[(i32, i32, i32)]) {
        self.group("series", &s.label, s.style);
        self.line(points, s.style, s.reference);
        let c = colour(s.style);
        for &(x, lo, hi) in whiskers {
            let _ = writeln!(
                self.0,
                r#"<path class="whisker" d="M{x} {lo}L{x} {hi}M{} {lo}L{} {lo}M{} {hi}L{} {hi}" fill="none" stroke="{c}" stroke-width="1.5"/>"#,
                x - 5,
                x + 5,
                x - 5,
                x + 5
            );
        }
        if !s.reference {
            for &(x, y) in points {
                self.0.push_str(&marker(s.style).svg(x, y, c));
                self.0.push('\n');
            }
        }
        self.0.push_str("</g>\n");
    }

    /// A bar in its row: the label above, the bar, the interval across its end, the value.
    pub fn bar(
        &mut self,
        s: &Series,
        (x0, x1): (i32, i32),
        (top, bottom): (i32, i32),
        whisker: Option<(i32, i32)>,
        value: f64,
    ) {
        let h = bottom - top;
        let (bar_top, bar_h) = (top + h * 50 / 100, h * 38 / 100);
        let c = colour(s.style);
        self.group("series bar", &s.label, s.style);
        self.text(
            x0 + 2,
            top + h * 40 / 100,
            LEGEND_PX,
            "start",
            &s.label,
            "label",
        );
        let _ = writeln!(
            self.0,
            r#"<rect class="bar" x="{x0}" y="{bar_top}" width="{}" height="{bar_h}" fill="{c}"/>"#,
            (x1 - x0).max(1)
        );
        let mid = bar_top + bar_h / 2;
        let mut end = x1;
        if let Some((lo, hi)) = whisker {
            let _ = writeln!(
                self.0,
                r#"<path class="whisker" d="M{lo} {mid}L{hi} {mid}M{lo} {}L{lo} {}M{hi} {}L{hi} {}" fill="none" stroke="black" stroke-width="1.5"/>"#,
                mid - 6,
                mid + 6,
                mid - 6,
                mid + 6
            );
            end = end.max(hi);
        }
        self.text(end + 6, mid + 6, LEGEND_PX, "start", &human(value), "value");
        self.0.push_str("</g>\n");
    }

    pub fn text(&mut self, x: i32, y: i32, px: f64, anchor: &str, text: &str, class: &str) {
        let _ = writeln!(
            self.0,
            r##"<text class="{class}" x="{x}" y="{y}" font-family="sans-serif" font-size="{px}" text-anchor="{anchor}" fill="#000000">{}</text>"##,
            esc(text)
        );
    }

    /// The legend below the panels, an entry per row: line sample with marker, then label.
    pub fn legend(&mut self, entries: &[LegendEntry], top: i32) {
        if entries.is_empty() {
            return;
        }
        self.0.push_str("<g class=\"legend\">\n");
        let mut row_top = top + 12;
        for e in entries {
            let y = row_top + LEGEND_ROW_H as i32 / 2;
            self.group("legend-entry", &e.label, e.style);
            self.line(&[(PAD, y), (PAD + 48, y)], e.style, e.reference);
            if !e.reference {
                self.0
                    .push_str(&marker(e.style).svg(PAD + 24, y, colour(e.style)));
                self.0.push('\n');
            }
            for (i, line) in e.lines.iter().enumerate() {
                let line_y = y + 6 + LEGEND_LINE_H as i32 * i as i32;
                self.text(LEGEND_TEXT_X, line_y, LEGEND_PX, "start", line, "label");
            }
            self.0.push_str("</g>\n");
            row_top += e.height() as i32;
        }
        self.0.push_str("</g>\n");
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
