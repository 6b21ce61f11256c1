//! Drawings of a topology: a Graphviz DOT file, and a self-contained SVG diagram. A grid of
//! buses (rows and columns, as the study's meshes) is drawn as a grid ([`grid`]): nodes where
//! their row and column cross, row buses as horizontal lines, column buses as vertical ones,
//! switches beside the buses they join. Anything else is a wiring diagram ([`wiring`]): nodes
//! across the top, one horizontal line per segment, switches joining their segments at the
//! left; turned on its side ([`columns`]) when it would be wider than a page. All mark
//! forwarding nodes and bonds, their legends name only what is drawn, and each declares the
//! size it prints at, text at 8 pt or more.

mod columns;
mod grid;
mod parts;
mod wiring;

use std::fmt::Write as _;

use crate::spec::topology::Medium;

use super::graph::{Attachment, Topology};
use parts::medium;

/// The SVG diagram: a grid when the topology is one, else the wiring diagram, on its side when
/// it would be wider than a page.
pub fn svg(t: &Topology) -> String {
    match grid::Grid::of(t) {
        Some(g) => grid::svg(t, &g),
        None if wiring::width(t) > parts::PAGE_UNITS => columns::svg(t),
        None => wiring::svg(t),
    }
}

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
            seg.rate.paper_form(),
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
