//! Drawings of a topology: a Graphviz DOT file, and a self-contained SVG wiring diagram
//! (nodes across the top, one horizontal line per segment, a dot where a node attaches,
//! switches joining their segments at the left, bonds and forwarding nodes marked).

use std::fmt::Write as _;

use crate::spec::topology::Medium;

use super::graph::{Attachment, Network, Node, Segment, Topology};

/// Graphviz DOT: nodes as boxes (double-bordered when they forward), segments as ellipses
/// (dashed when switched), switches as diamonds, bonds as edge labels.
pub fn dot(t: &Topology) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "graph \"{}\" {{", t.name);
    let _ = writeln!(
        s,
        "  label=\"{}\"; labelloc=t; fontname=\"sans-serif\";",
        t.name
    );
    let _ = writeln!(
        s,
        "  node [fontname=\"sans-serif\"]; edge [fontname=\"sans-serif\", fontsize=9];"
    );
    for n in &t.nodes {
        let peripheries = if n.forwarding { 2 } else { 1 };
        let _ = writeln!(
            s,
            "  \"{}\" [shape=box, peripheries={peripheries}];",
            n.name
        );
    }
    for seg in &t.segments {
        let style = match seg.medium {
            Medium::Shared => "solid",
            Medium::Switched => "dashed",
        };
        let _ = writeln!(
            s,
            "  \"seg:{0}\" [label=\"{0}\\n{1} {2}\", shape=ellipse, style={style}];",
            seg.name,
            seg.rate,
            medium(seg.medium)
        );
    }
    for net in &t.networks {
        if let Some(sw) = &net.switch {
            let _ = writeln!(s, "  \"sw:{sw}\" [label=\"{sw}\", shape=diamond];");
            for seg in &net.segments {
                let _ = writeln!(s, "  \"sw:{sw}\" -- \"seg:{seg}\" [penwidth=2];");
            }
        }
    }
    for n in &t.nodes {
        for i in &n.interfaces {
            let label = match &i.attachment {
                Attachment::Address(a) => format!("{} {}", i.name, a),
                Attachment::BondSlave(b) => {
                    let bond = n.bonds.iter().find(|x| &x.name == b).expect("bond exists");
                    format!("{} in {} ({}) {}", i.name, b, bond.mode, bond.address)
                }
            };
            let _ = writeln!(
                s,
                "  \"{}\" -- \"seg:{}\" [label=\"{}\"];",
                n.name, i.segment, label
            );
        }
    }
    s.push_str("}\n");
    s
}

fn medium(m: Medium) -> &'static str {
    match m {
        Medium::Shared => "shared",
        Medium::Switched => "switched",
    }
}

const NODE_W: f64 = 56.0;
const TOP: f64 = 70.0;
const ROW_H: f64 = 34.0;
const LEFT: f64 = 190.0;

/// The SVG wiring diagram.
pub fn svg(t: &Topology) -> String {
    let mut s = String::new();
    let height = seg_y(t.segments.len()) + 40.0;
    svg_header(&mut s, t, height);
    for (si, seg) in t.segments.iter().enumerate() {
        svg_segment(&mut s, t, seg, seg_y(si));
    }
    for net in t.networks.iter().filter(|n| n.switch.is_some()) {
        svg_switch(&mut s, t, net);
    }
    for (ni, n) in t.nodes.iter().enumerate() {
        svg_node(&mut s, n, node_x(ni));
    }
    svg_legend(&mut s, height);
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

/// The opening tag sized to the topology, a white background, the title and description.
fn svg_header(s: &mut String, t: &Topology, height: f64) {
    let width = LEFT + t.nodes.len() as f64 * NODE_W + 30.0;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="11">"#
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

/// A segment: a line at height `y`, labelled with rate and medium, dashed when switched; a
/// drop and a dot for each member.
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
        r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#1f4e79" stroke-width="3"{dash}/>"##,
        x0 - 10.0,
        x1 + 10.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{} · {} {}</text>"#,
        LEFT - 50.0,
        y + 4.0,
        esc(seg.name.as_str()),
        seg.rate,
        medium(seg.medium)
    );
    for p in &seg.members {
        let Some(ni) = t.node_index(&p.node) else {
            continue;
        };
        let x = node_x(ni);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{y:.1}" stroke="#999" stroke-width="1"/>"##,
            TOP + 14.0
        );
        let _ = writeln!(
            s,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="#1f4e79"><title>{}:{}</title></circle>"##,
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
    let (y0, y1) = (
        ys.iter().cloned().fold(f64::MAX, f64::min),
        ys.iter().cloned().fold(f64::MIN, f64::max),
    );
    let x = LEFT - 35.0;
    let _ = writeln!(
        s,
        r##"<rect x="{:.1}" y="{:.1}" width="14" height="{:.1}" fill="#f2c14e" stroke="#7a5c00"/>"##,
        x - 7.0,
        y0 - 6.0,
        y1 - y0 + 12.0
    );
    for y in &ys {
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#7a5c00" stroke-width="2"/>"##,
            x + 7.0,
            LEFT - 8.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"#,
        x,
        y1 + 20.0,
        esc(net.switch.as_ref().expect("filtered").as_str())
    );
}

/// A node: a box across the top at column `x`, filled when it forwards, its first bond's mode
/// noted under the name.
fn svg_node(s: &mut String, n: &Node, x: f64) {
    let fill = if n.forwarding { "#c6e0b4" } else { "#eeeeee" };
    let _ = writeln!(
        s,
        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="28" rx="4" fill="{fill}" stroke="#333"/>"##,
        x - NODE_W / 2.0 + 4.0,
        TOP - 14.0,
        NODE_W - 8.0
    );
    let _ = writeln!(
        s,
        r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        TOP + 4.0,
        esc(n.name.as_str())
    );
    if let Some(b) = n.bonds.first() {
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="9">{}</text>"#,
            TOP + 26.0,
            esc(b.mode.as_str())
        );
    }
}

/// The legend along the bottom edge.
fn svg_legend(s: &mut String, height: f64) {
    let ly = height - 14.0;
    let _ = writeln!(
        s,
        r##"<g font-size="10"><rect x="10" y="{:.1}" width="12" height="10" fill="#c6e0b4" stroke="#333"/><text x="26" y="{ly:.1}">forwarding node</text><rect x="130" y="{:.1}" width="12" height="10" fill="#f2c14e" stroke="#7a5c00"/><text x="146" y="{ly:.1}">switch</text><line x1="200" y1="{:.1}" x2="230" y2="{:.1}" stroke="#1f4e79" stroke-width="3"/><text x="236" y="{ly:.1}">shared segment</text><line x1="330" y1="{:.1}" x2="360" y2="{:.1}" stroke="#1f4e79" stroke-width="3" stroke-dasharray="6 3"/><text x="366" y="{ly:.1}">switched segment</text></g>"##,
        ly - 9.0,
        ly - 9.0,
        ly - 4.0,
        ly - 4.0,
        ly - 4.0,
        ly - 4.0
    );
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
