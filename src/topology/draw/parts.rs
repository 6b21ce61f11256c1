//! What both SVG diagrams draw alike: the opening tag with title and description, a node's
//! box, and a legend that names only what the drawing holds.

use std::fmt::Write as _;

use super::super::graph::{Node, Topology};
use crate::spec::topology::Medium;

pub const BUS: &str = "#1f4e79";
pub const BOND: &str = "#c55a11";
pub const FORWARDING_FILL: &str = "#c6e0b4";
const PLAIN_FILL: &str = "#eeeeee";
pub const SWITCH_FILL: &str = "#f2c14e";
pub const SWITCH_EDGE: &str = "#7a5c00";

/// Width and height of a node's box.
pub const BOX_W: f64 = 48.0;
pub const BOX_H: f64 = 28.0;

/// Units per inch in print: a unit prints at 0.75 pt, so the smallest text, 11 units,
/// prints at 8.25 pt.
pub const UNITS_PER_IN: f64 = 96.0;

/// The widest a drawing is laid out to be, the page's 7 in: wider, the wiring diagram turns on
/// its side.
pub const PAGE_UNITS: f64 = 7.0 * UNITS_PER_IN;

/// The opening tag sized `width` × `height` units and declaring its print size, a white
/// background, the title and description.
pub fn header(s: &mut String, t: &Topology, width: f64, height: f64) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.3}in" height="{:.3}in" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#,
        width.round() / UNITS_PER_IN,
        height.round() / UNITS_PER_IN
    );
    let _ = writeln!(s, "<title>Topology {}</title>", esc(t.name.as_str()));
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="15" font-weight="bold">{}</text>"#,
        esc(t.name.as_str())
    );
    if let Some(d) = &t.description {
        let _ = writeln!(
            s,
            r##"<text x="10" y="38" fill="#444">{}</text>"##,
            esc(&crate::spec::escape_control(d))
        );
    }
}

/// Where a node's bond mode is written: under its box, or above it where a bus runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeLabel {
    Below,
    Above,
    /// Not by the node: the legend names the modes ([`Legend::with_modes`]).
    InLegend,
}

/// A node: a box centred on (`x`, `y`), filled when it forwards, its first bond's mode noted
/// beside it.
pub fn node_box(s: &mut String, n: &Node, x: f64, y: f64, mode: ModeLabel) {
    let fill = if n.forwarding {
        FORWARDING_FILL
    } else {
        PLAIN_FILL
    };
    let _ = writeln!(
        s,
        r##"<rect class="node" x="{:.1}" y="{:.1}" width="{BOX_W:.1}" height="{BOX_H:.1}" rx="4" fill="{fill}" stroke="#333"/>"##,
        x - BOX_W / 2.0,
        y - BOX_H / 2.0,
    );
    let _ = writeln!(
        s,
        r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        y + 4.0,
        esc(n.name.as_str())
    );
    if let Some(b) = n.bonds.first() {
        let at = match mode {
            ModeLabel::Below => y + BOX_H / 2.0 + 12.0,
            ModeLabel::Above => y - BOX_H / 2.0 - 3.0,
            ModeLabel::InLegend => return,
        };
        let _ = writeln!(
            s,
            r##"<text x="{x:.1}" y="{at:.1}" text-anchor="middle" font-size="11" fill="{BOND}">{}</text>"##,
            esc(b.mode.as_str())
        );
    }
}

/// What a drawing holds, for its legend.
#[derive(Debug, Default, Clone)]
pub struct Legend {
    pub forwarding: bool,
    pub switch: bool,
    pub shared: bool,
    pub switched: bool,
    pub bond: bool,
    /// The bond modes, where the legend names them instead of each node.
    pub modes: Option<String>,
}

impl Legend {
    pub fn of(t: &Topology) -> Legend {
        Legend {
            forwarding: t.nodes.iter().any(|n| n.forwarding),
            switch: t.networks.iter().any(|n| n.switch.is_some()),
            shared: t.segments.iter().any(|s| s.medium == Medium::Shared),
            switched: t.segments.iter().any(|s| s.medium == Medium::Switched),
            bond: t.nodes.iter().any(|n| !n.bonds.is_empty()),
            modes: None,
        }
    }

    /// The legend naming `t`'s bond modes itself.
    pub fn with_modes(mut self, t: &Topology) -> Legend {
        let mut modes: Vec<&str> = t
            .nodes
            .iter()
            .flat_map(|n| n.bonds.iter().map(|b| b.mode.as_str()))
            .collect();
        modes.sort();
        modes.dedup();
        self.modes = (!modes.is_empty()).then(|| modes.join(", "));
        self
    }

    /// The legend's entries in a row along the baseline `y`, each only when drawn, and the
    /// width they take.
    pub fn render(self, y: f64) -> (String, f64) {
        let mut x = 10.0;
        let mut g = String::new();
        let entry = |g: &mut String, swatch: String, label: &str, x: &mut f64| {
            g.push_str(&swatch);
            let _ = write!(g, r#"<text x="{:.1}" y="{y:.1}">{label}</text>"#, *x + 36.0);
            *x += 36.0 + label.len() as f64 * 6.4 + 18.0;
        };
        if self.forwarding {
            let sw = format!(
                r##"<rect x="{:.1}" y="{:.1}" width="12" height="10" fill="{FORWARDING_FILL}" stroke="#333"/>"##,
                x + 16.0,
                y - 9.0
            );
            entry(&mut g, sw, "forwarding node", &mut x);
        }
        if self.switch {
            let sw = format!(
                r##"<rect x="{:.1}" y="{:.1}" width="12" height="10" fill="{SWITCH_FILL}" stroke="{SWITCH_EDGE}"/>"##,
                x + 16.0,
                y - 9.0
            );
            entry(&mut g, sw, "switch", &mut x);
        }
        let line = |x: f64, extra: &str, colour: &str| {
            format!(
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="3"{extra}/>"##,
                y - 4.0,
                x + 30.0,
                y - 4.0
            )
        };
        if self.shared {
            entry(&mut g, line(x, "", BUS), "shared segment", &mut x);
        }
        if self.switched {
            let dashed = line(x, r#" stroke-dasharray="6 3""#, BUS);
            entry(&mut g, dashed, "switched segment", &mut x);
        }
        if self.bond {
            let label = match &self.modes {
                Some(m) => format!("bonded interface ({})", esc(m)),
                None => "bonded interface (bond mode by the node)".to_owned(),
            };
            entry(&mut g, line(x, "", BOND), &label, &mut x);
        }
        (format!("<g class=\"legend\" font-size=\"11\">{g}</g>\n"), x)
    }
}

/// A switch as a bar at `x` spanning the buses at heights `ys`, each joined to it by a stub
/// reaching `to_x`, its name under the bar.
pub fn switch_beside(s: &mut String, x: f64, ys: &[f64], to_x: f64, name: &str) {
    let (y0, y1) = (
        ys.iter().cloned().fold(f64::MAX, f64::min),
        ys.iter().cloned().fold(f64::MIN, f64::max),
    );
    let _ = writeln!(
        s,
        r##"<rect class="switch" x="{:.1}" y="{:.1}" width="14" height="{:.1}" fill="{SWITCH_FILL}" stroke="{SWITCH_EDGE}"/>"##,
        x - 7.0,
        y0 - 6.0,
        y1 - y0 + 12.0
    );
    for y in ys {
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{to_x:.1}" y2="{y:.1}" stroke="{SWITCH_EDGE}" stroke-width="2"/>"##,
            x + 7.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
        y1 + 20.0,
        esc(name)
    );
}

/// A segment's medium in words.
pub fn medium(m: Medium) -> &'static str {
    match m {
        Medium::Shared => "shared",
        Medium::Switched => "switched",
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
