//! A grid of buses drawn as a grid: node (r, c) where row bus r crosses column bus c, row buses
//! as horizontal lines under their nodes, column buses as vertical lines beside them, a switch
//! joining the row buses at their left and one joining the column buses above them.

use std::fmt::Write as _;

use crate::spec::topology::Medium;

use super::super::graph::{Network, Segment, Topology};
use super::parts::{
    BOND, BOX_H, BOX_W, BUS, Legend, ModeLabel, SWITCH_EDGE, SWITCH_FILL, esc, header, medium,
    node_box, switch_beside,
};

/// Which segments are rows and columns, and where each node sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    /// Row buses, top to bottom, as indices into the topology's segments.
    pub rows: Vec<usize>,
    /// Column buses, left to right.
    pub cols: Vec<usize>,
    /// Per node (in the topology's order): its row and column.
    pub at: Vec<(usize, usize)>,
}

impl Grid {
    /// The grid `t` is, if it is one: every node on exactly two segments, one of each family;
    /// segments of a family share no node; every row meets every column in exactly one node;
    /// at least two rows and two columns; and no switch joins a row to a column. The family
    /// of the first segment is the rows (the grid generator names rows first).
    pub fn of(t: &Topology) -> Option<Grid> {
        let mut on: Vec<Vec<usize>> = vec![Vec::new(); t.nodes.len()];
        for (si, seg) in t.segments.iter().enumerate() {
            for p in &seg.members {
                on[t.node_index(&p.node)?].push(si);
            }
        }
        if on.iter().any(|segs| segs.len() != 2 || segs[0] == segs[1]) {
            return None;
        }
        // Two-colour the segments: two that share a node are of different families.
        let mut family: Vec<Option<bool>> = vec![None; t.segments.len()];
        family[0] = Some(true);
        let mut changed = true;
        while changed {
            changed = false;
            for segs in &on {
                let (a, b) = (segs[0], segs[1]);
                match (family[a], family[b]) {
                    (Some(x), Some(y)) if x == y => return None,
                    (Some(x), None) => {
                        family[b] = Some(!x);
                        changed = true;
                    }
                    (None, Some(y)) => {
                        family[a] = Some(!y);
                        changed = true;
                    }
                    _ => {}
                }
            }
        }
        let pick = |want: bool| -> Option<Vec<usize>> {
            let mut v = Vec::new();
            for (si, f) in family.iter().enumerate() {
                if (*f)? == want {
                    v.push(si);
                }
            }
            Some(v)
        };
        let (rows, cols) = (pick(true)?, pick(false)?);
        if rows.len() < 2 || cols.len() < 2 || rows.len() * cols.len() != t.nodes.len() {
            return None;
        }
        let mut at = Vec::with_capacity(t.nodes.len());
        let mut taken = vec![false; t.nodes.len()];
        for segs in &on {
            let (r, c) = if family[segs[0]] == Some(true) {
                (segs[0], segs[1])
            } else {
                (segs[1], segs[0])
            };
            let r = rows.iter().position(|x| *x == r)?;
            let c = cols.iter().position(|x| *x == c)?;
            let cell = &mut taken[r * cols.len() + c];
            if *cell {
                return None;
            }
            *cell = true;
            at.push((r, c));
        }
        let mixed = |net: &Network| {
            let families: Vec<Option<bool>> = net
                .segments
                .iter()
                .filter_map(|n| t.segments.iter().position(|s| &s.name == n))
                .map(|si| family[si])
                .collect();
            families.windows(2).any(|w| w[0] != w[1])
        };
        if t.networks.iter().any(|n| n.switch.is_some() && mixed(n)) {
            return None;
        }
        Some(Grid { rows, cols, at })
    }
}

const CELL: f64 = 96.0;
const X0: f64 = 130.0;
const Y0: f64 = 140.0;
/// How far a bus runs past its first and last node.
const OVERHANG: f64 = 40.0;
/// A row bus runs this far below its nodes' centres, a column bus this far to their right.
const ROW_BUS_DY: f64 = BOX_H / 2.0 + 12.0;
const COL_BUS_DX: f64 = BOX_W / 2.0 + 14.0;
/// Room for a bus's label (name, rate, medium) at 11 px.
const LABEL_W: f64 = 150.0;

fn node_x(c: usize) -> f64 {
    X0 + c as f64 * CELL
}

fn node_y(r: usize) -> f64 {
    Y0 + r as f64 * CELL
}

/// The grid diagram of `t`.
pub fn svg(t: &Topology, g: &Grid) -> String {
    let (nr, nc) = (g.rows.len(), g.cols.len());
    let right = node_x(nc - 1) + COL_BUS_DX + OVERHANG;
    let bottom = node_y(nr - 1) + ROW_BUS_DY + OVERHANG;
    let height = bottom + LABEL_W + 40.0;
    let (legend, legend_w) = Legend::of(t).render(height - 14.0);
    let width = (right + LABEL_W).max(legend_w);
    let mut s = String::new();
    header(&mut s, t, width, height);
    for (r, &si) in g.rows.iter().enumerate() {
        let y = node_y(r) + ROW_BUS_DY;
        bus(
            &mut s,
            &t.segments[si],
            "row",
            (X0 - OVERHANG, y),
            (right, y),
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            right + 6.0,
            y + 4.0,
            label(&t.segments[si])
        );
    }
    for (c, &si) in g.cols.iter().enumerate() {
        let x = node_x(c) + COL_BUS_DX;
        bus(
            &mut s,
            &t.segments[si],
            "column",
            (x, Y0 - OVERHANG),
            (x, bottom),
        );
        let _ = writeln!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" transform="rotate(90 {x:.1} {:.1})" dy="4">{}</text>"#,
            bottom + 6.0,
            bottom + 6.0,
            label(&t.segments[si])
        );
    }
    for net in t.networks.iter().filter(|n| n.switch.is_some()) {
        switch(&mut s, t, g, net);
    }
    // The drops from each node to its two buses, then the boxes over them.
    for (ni, n) in t.nodes.iter().enumerate() {
        let (r, c) = g.at[ni];
        let (x, y) = (node_x(c), node_y(r));
        for i in &n.interfaces {
            let Some(si) = t.segments.iter().position(|s| s.name == i.segment) else {
                continue;
            };
            let (colour, w) = if n.is_bond_slave(&i.name) {
                (BOND, 2)
            } else {
                ("#999", 1)
            };
            let (x1, y1, x2, y2) = if g.rows.contains(&si) {
                (x, y + BOX_H / 2.0, x, y + ROW_BUS_DY)
            } else {
                (x + BOX_W / 2.0, y, x + COL_BUS_DX, y)
            };
            let _ = writeln!(
                s,
                r##"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{colour}" stroke-width="{w}"/>"##
            );
            let _ = writeln!(
                s,
                r##"<circle cx="{x2:.1}" cy="{y2:.1}" r="3.5" fill="{BUS}"><title>{}:{}</title></circle>"##,
                esc(n.name.as_str()),
                esc(i.name.as_str())
            );
        }
        // The row bus runs under the box: the bond mode goes above it.
        node_box(&mut s, n, x, y, ModeLabel::Above);
    }
    s.push_str(&legend);
    s.push_str("</svg>\n");
    s
}

fn label(seg: &Segment) -> String {
    format!(
        "{} · {} {}",
        esc(seg.name.as_str()),
        seg.rate.paper_form(),
        medium(seg.medium)
    )
}

/// A bus from `a` to `b`, dashed when switched.
fn bus(s: &mut String, seg: &Segment, family: &str, a: (f64, f64), b: (f64, f64)) {
    let dash = if seg.medium == Medium::Switched {
        r#" stroke-dasharray="6 3""#
    } else {
        ""
    };
    let _ = writeln!(
        s,
        r##"<line class="bus {family}" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{BUS}" stroke-width="3"{dash}><title>{}</title></line>"##,
        a.0,
        a.1,
        b.0,
        b.1,
        esc(seg.name.as_str())
    );
}

/// A switch: a bar left of the row buses it joins, or above the column buses.
fn switch(s: &mut String, t: &Topology, g: &Grid, net: &Network) {
    let segs: Vec<usize> = net
        .segments
        .iter()
        .filter_map(|n| t.segments.iter().position(|s| &s.name == n))
        .collect();
    let name = net.switch.as_ref().expect("filtered").as_str().to_owned();
    let rows: Vec<f64> = g
        .rows
        .iter()
        .enumerate()
        .filter(|(_, si)| segs.contains(si))
        .map(|(r, _)| node_y(r) + ROW_BUS_DY)
        .collect();
    let cols: Vec<f64> = g
        .cols
        .iter()
        .enumerate()
        .filter(|(_, si)| segs.contains(si))
        .map(|(c, _)| node_x(c) + COL_BUS_DX)
        .collect();
    let span = |v: &[f64]| {
        (
            v.iter().cloned().fold(f64::MAX, f64::min),
            v.iter().cloned().fold(f64::MIN, f64::max),
        )
    };
    if !rows.is_empty() {
        switch_beside(s, X0 - OVERHANG - 30.0, &rows, X0 - OVERHANG, &name);
    } else if !cols.is_empty() {
        let (x0, x1) = span(&cols);
        let y = Y0 - OVERHANG - 30.0;
        let _ = writeln!(
            s,
            r##"<rect class="switch" x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="{SWITCH_FILL}" stroke="{SWITCH_EDGE}"/>"##,
            x0 - 6.0,
            y - 7.0,
            x1 - x0 + 12.0
        );
        for x in &cols {
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="{SWITCH_EDGE}" stroke-width="2"/>"##,
                y + 7.0,
                Y0 - OVERHANG
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
            x0 - 12.0,
            y + 4.0,
            esc(&name)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SourceFile;

    fn topology(text: &str) -> Topology {
        crate::topology::from_source(&SourceFile::new("t.toml", text)).unwrap()
    }

    fn grid_toml(rows: u32, cols: u32, interconnect: &str) -> String {
        format!(
            "name = \"g\"\n[generator]\nkind = \"grid\"\nrows = {rows}\ncols = {cols}\n\
             interconnect = \"{interconnect}\"\nrate = \"10mbit\"\nmedium = \"shared\"\n"
        )
    }

    /// The buses of one family as (x1, y1, x2, y2).
    fn buses(svg: &str, family: &str) -> Vec<[f64; 4]> {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(&format!("bus {family}")))
            .map(|n| {
                let a = |k: &str| n.attribute(k).unwrap().parse::<f64>().unwrap();
                [a("x1"), a("y1"), a("x2"), a("y2")]
            })
            .collect()
    }

    #[test]
    fn a_4x4_mesh_is_drawn_as_four_row_buses_across_four_column_buses() {
        let t = topology(&grid_toml(4, 4, "routed"));
        let g = Grid::of(&t).expect("a grid");
        assert_eq!((g.rows.len(), g.cols.len()), (4, 4));
        let svg = svg(&t, &g);
        let rows = buses(&svg, "row");
        let cols = buses(&svg, "column");
        assert_eq!((rows.len(), cols.len()), (4, 4), "{svg}");
        // Rows horizontal and one under another; columns vertical, side by side; each row
        // crosses every column.
        for r in &rows {
            assert_eq!(r[1], r[3]);
            for c in &cols {
                assert_eq!(c[0], c[2]);
                assert!(r[0] < c[0] && c[0] < r[2] && c[1] < r[1] && r[1] < c[3]);
            }
        }
        let ys: Vec<f64> = rows.iter().map(|r| r[1]).collect();
        assert!(ys.windows(2).all(|w| w[0] < w[1]), "{ys:?}");
        // A routed mesh has no switch: none drawn, none in the legend.
        assert!(!svg.contains("class=\"switch\""));
        assert!(!svg.contains(">switch<"), "{svg}");
        assert!(svg.contains(">forwarding node<"));
    }

    #[test]
    fn the_switched_mesh_has_a_switch_for_its_rows_and_one_for_its_columns() {
        let t = topology(&grid_toml(4, 4, "switched"));
        let svg = svg(&t, &Grid::of(&t).expect("a grid"));
        assert_eq!(svg.matches("class=\"switch\"").count(), 2, "{svg}");
        assert!(svg.contains(">switch<"));
        assert!(!svg.contains(">forwarding node<"));
    }

    #[test]
    fn every_node_sits_where_its_row_and_column_cross() {
        let t = topology(&grid_toml(3, 5, "routed"));
        let g = Grid::of(&t).expect("a grid");
        assert_eq!((g.rows.len(), g.cols.len()), (3, 5));
        for (ni, n) in t.nodes.iter().enumerate() {
            let (r, c) = g.at[ni];
            let on: Vec<&str> = n.interfaces.iter().map(|i| i.segment.as_str()).collect();
            assert!(
                on.contains(&t.segments[g.rows[r]].name.as_str()),
                "{}",
                n.name
            );
            assert!(
                on.contains(&t.segments[g.cols[c]].name.as_str()),
                "{}",
                n.name
            );
        }
    }
}
