//! The wiring diagram turned on its side, for topologies too many nodes wide for a page (a
//! bus of 16 nodes): nodes down the left, one vertical line per segment, a stub and a dot
//! where a node attaches, switches joining their segments above them.

use std::fmt::Write as _;

use crate::spec::topology::Medium;

use super::super::graph::{Network, Segment, Topology};
use super::parts::{
    BOND, BOX_H, BOX_W, BUS, Legend, ModeLabel, SWITCH_EDGE, SWITCH_FILL, esc, header, medium,
    node_box,
};

/// The first node's centre, and the rows' and segments' spacing.
const NODE_X: f64 = 50.0;
const TOP: f64 = 110.0;
const ROW_H: f64 = 32.0;
const FIRST_SEG_X: f64 = 120.0;
const SEG_W: f64 = 44.0;
/// Room under the segments for their labels, written downwards.
const LABEL_H: f64 = 160.0;

fn node_y(i: usize) -> f64 {
    TOP + i as f64 * ROW_H
}

fn seg_x(i: usize) -> f64 {
    FIRST_SEG_X + i as f64 * SEG_W
}

/// The diagram of `t`.
pub fn svg(t: &Topology) -> String {
    let bottom = node_y(t.nodes.len().saturating_sub(1)) + ROW_H / 2.0;
    let height = bottom + LABEL_H + 40.0;
    // No room beside the boxes: the legend names the bond modes.
    let (legend, legend_w) = Legend::of(t).with_modes(t).render(height - 14.0);
    let width = (seg_x(t.segments.len()) + 20.0).max(legend_w).max(360.0);
    let mut s = String::new();
    header(&mut s, t, width, height);
    for (si, seg) in t.segments.iter().enumerate() {
        segment(&mut s, t, seg, seg_x(si), bottom);
    }
    for net in t.networks.iter().filter(|n| n.switch.is_some()) {
        switch(&mut s, t, net);
    }
    for (ni, n) in t.nodes.iter().enumerate() {
        node_box(&mut s, n, NODE_X, node_y(ni), ModeLabel::InLegend);
    }
    s.push_str(&legend);
    s.push_str("</svg>\n");
    s
}

/// A segment: a vertical line at `x`, dashed when switched, its label under it written
/// downwards; a stub and a dot for each member, in the bond's colour for a bond's interface.
fn segment(s: &mut String, t: &Topology, seg: &Segment, x: f64, bottom: f64) {
    let ys: Vec<f64> = seg
        .members
        .iter()
        .filter_map(|p| t.node_index(&p.node))
        .map(node_y)
        .collect();
    let y0 = ys.iter().cloned().fold(f64::MAX, f64::min) - 10.0;
    let dash = if seg.medium == Medium::Switched {
        r#" stroke-dasharray="6 3""#
    } else {
        ""
    };
    let _ = writeln!(
        s,
        r##"<line class="bus" x1="{x:.1}" y1="{y0:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="{BUS}" stroke-width="3"{dash}/>"##,
    );
    let _ = writeln!(
        s,
        r#"<text x="{x:.1}" y="{:.1}" transform="rotate(90 {x:.1} {:.1})" dy="4">{} · {} {}</text>"#,
        bottom + 6.0,
        bottom + 6.0,
        esc(seg.name.as_str()),
        seg.rate.paper_form(),
        medium(seg.medium)
    );
    for p in &seg.members {
        let Some(ni) = t.node_index(&p.node) else {
            continue;
        };
        let y = node_y(ni);
        let (colour, w) = if t.nodes[ni].is_bond_slave(&p.interface) {
            (BOND, 2)
        } else {
            ("#999", 1)
        };
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{x:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="{w}"/>"##,
            NODE_X + BOX_W / 2.0
        );
        let _ = writeln!(
            s,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{BUS}"><title>{}:{}</title></circle>"##,
            esc(p.node.as_str()),
            esc(p.interface.as_str())
        );
    }
}

/// A switch: a bar above the segments it joins, a stub down to each.
fn switch(s: &mut String, t: &Topology, net: &Network) {
    let xs: Vec<f64> = net
        .segments
        .iter()
        .filter_map(|n| t.segments.iter().position(|s| &s.name == n))
        .map(seg_x)
        .collect();
    let (x0, x1) = (
        xs.iter().cloned().fold(f64::MAX, f64::min),
        xs.iter().cloned().fold(f64::MIN, f64::max),
    );
    let y = TOP - BOX_H - 30.0;
    let _ = writeln!(
        s,
        r##"<rect class="switch" x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="{SWITCH_FILL}" stroke="{SWITCH_EDGE}"/>"##,
        x0 - 6.0,
        y - 7.0,
        x1 - x0 + 12.0
    );
    for x in &xs {
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{SWITCH_EDGE}" stroke-width="2"/>"##,
            y + 7.0,
            TOP - 10.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
        x0 - 12.0,
        y + 4.0,
        esc(net.switch.as_ref().expect("filtered").as_str())
    );
}

#[cfg(test)]
mod tests {
    use super::super::parts::PAGE_UNITS;
    use super::super::wiring;
    use super::*;
    use crate::spec::SourceFile;

    #[test]
    fn a_bus_too_wide_for_a_page_is_drawn_on_its_side_with_its_bond_mode_in_the_legend() {
        let text = "name = \"b\"\n[generator]\nkind = \"bus\"\nnodes = 16\nbuses = 2\n\
                    rate = \"10mbit\"\nmedium = \"shared\"\nbond = { mode = \"balance-rr\" }\n";
        let t = crate::topology::from_source(&SourceFile::new("t.toml", text)).unwrap();
        assert!(
            wiring::width(&t) > PAGE_UNITS,
            "the case this layout is for"
        );
        let svg = svg(&t);
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let buses: Vec<roxmltree::Node<'_, '_>> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("bus"))
            .collect();
        assert_eq!(buses.len(), 2);
        assert!(buses.iter().all(|b| b.attribute("x1") == b.attribute("x2")));
        let boxes = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("node"))
            .count();
        assert_eq!(boxes, 16);
        assert!(svg.contains("bonded interface (balance-rr)"), "{svg}");
        // No mode under each node: the legend says it once.
        assert_eq!(svg.matches(">balance-rr<").count(), 0);
        let width: f64 = doc
            .root_element()
            .attribute("width")
            .unwrap()
            .trim_end_matches("in")
            .parse()
            .unwrap();
        assert!(width <= 7.0, "{width} in");
    }
}
