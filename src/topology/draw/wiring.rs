//! The wiring diagram: nodes across the top, one horizontal line per segment, a dot where a
//! node attaches, switches joining their segments at the left. For topologies a page wide at
//! most; wider ones are drawn on their side ([`super::columns`]).

use std::fmt::Write as _;

use crate::spec::topology::Medium;

use super::super::graph::{Network, Segment, Topology};
use super::parts::{BOND, BUS, Legend, ModeLabel, esc, header, medium, node_box, switch_beside};

const NODE_W: f64 = 64.0;
const TOP: f64 = 70.0;
const ROW_H: f64 = 34.0;
const LEFT: f64 = 190.0;

/// How wide the diagram's nodes and segments make it.
pub fn width(t: &Topology) -> f64 {
    LEFT + t.nodes.len() as f64 * NODE_W + 30.0
}

/// The wiring diagram of `t`.
pub fn svg(t: &Topology) -> String {
    let mut s = String::new();
    let height = seg_y(t.segments.len()) + 40.0;
    let (legend, legend_w) = Legend::of(t).render(height - 14.0);
    header(&mut s, t, width(t).max(legend_w), height);
    for (si, seg) in t.segments.iter().enumerate() {
        svg_segment(&mut s, t, seg, seg_y(si));
    }
    for net in t.networks.iter().filter(|n| n.switch.is_some()) {
        svg_switch(&mut s, t, net);
    }
    for (ni, n) in t.nodes.iter().enumerate() {
        node_box(&mut s, n, node_x(ni), TOP, ModeLabel::Below);
    }
    s.push_str(&legend);
    s.push_str("</svg>\n");
    s
}

/// Where the `i`th segment's line runs.
fn seg_y(i: usize) -> f64 {
    TOP + 60.0 + i as f64 * ROW_H
}

/// Where the `i`th node's column stands.
fn node_x(i: usize) -> f64 {
    LEFT + i as f64 * NODE_W + NODE_W / 2.0
}

/// A segment: a line at height `y`, labelled with rate and medium, dashed when switched; a
/// drop and a dot for each member, in the bond's colour where the interface is a bond's.
fn svg_segment(s: &mut String, t: &Topology, seg: &Segment, y: f64) {
    let xs: Vec<f64> = seg
        .members
        .iter()
        .filter_map(|p| t.node_index(&p.node))
        .map(node_x)
        .collect();
    let (x0, x1) = (
        xs.iter().cloned().fold(f64::MAX, f64::min),
        xs.iter().cloned().fold(f64::MIN, f64::max),
    );
    let dash = if seg.medium == Medium::Switched {
        r#" stroke-dasharray="6 3""#
    } else {
        ""
    };
    let _ = writeln!(
        s,
        r##"<line class="bus" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{BUS}" stroke-width="3"{dash}/>"##,
        x0 - 10.0,
        x1 + 10.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{} · {} {}</text>"#,
        LEFT - 50.0,
        y + 4.0,
        esc(seg.name.as_str()),
        seg.rate.paper_form(),
        medium(seg.medium)
    );
    for p in &seg.members {
        let Some(ni) = t.node_index(&p.node) else {
            continue;
        };
        let x = node_x(ni);
        let (colour, width) = if t.nodes[ni].is_bond_slave(&p.interface) {
            (BOND, 2)
        } else {
            ("#999", 1)
        };
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="{width}"/>"##,
            TOP + 14.0
        );
        let _ = writeln!(
            s,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{BUS}"><title>{}:{}</title></circle>"##,
            esc(p.node.as_str()),
            esc(p.interface.as_str())
        );
    }
}

/// A switch: a bracket at the left joining its network's segments.
fn svg_switch(s: &mut String, t: &Topology, net: &Network) {
    let ys: Vec<f64> = net
        .segments
        .iter()
        .filter_map(|sn| t.segments.iter().position(|s| &s.name == sn))
        .map(seg_y)
        .collect();
    let name = net.switch.as_ref().expect("filtered").as_str();
    switch_beside(s, LEFT - 35.0, &ys, LEFT - 8.0, name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SourceFile;

    fn topology(text: &str) -> Topology {
        crate::topology::from_source(&SourceFile::new("t.toml", text)).unwrap()
    }

    #[test]
    fn buses_that_are_not_a_grid_get_the_wiring_diagram_with_the_bonds_in_colour() {
        let bonded = "name = \"b\"\n[generator]\nkind = \"bus\"\nnodes = 4\nbuses = 2\n\
                      rate = \"10mbit\"\nmedium = \"shared\"\nbond = { mode = \"balance-rr\" }\n";
        let t = topology(bonded);
        assert_eq!(super::super::grid::Grid::of(&t), None);
        let svg = svg(&t);
        assert!(!svg.contains("class=\"bus row\""));
        assert_eq!(
            svg.matches(&format!("stroke=\"{BOND}\" stroke-width=\"2\""))
                .count(),
            8
        );
        assert!(svg.contains("bonded interface"));
        assert!(!svg.contains(">switch<") && !svg.contains(">forwarding node<"));
    }
}
