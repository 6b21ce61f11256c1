//! Hook for topology drawings in the report.
//!
//! The drawings come from the topology model (nodes, buses, switches, bonds, forwarding
//! nodes), which this module does not know. Whatever can draw a topology implements
//! [`DrawTopology`]; [`super::ReportOptions::topology`] carries it into the report, which then
//! writes `figures/topology-<name>.svg` and shows it in `report.md`. `plan --graph` is meant to
//! use the same implementation.

/// Draws a named topology of the run as a standalone SVG document.
pub trait DrawTopology {
    /// `None` when the topology is unknown to the drawer; the report then goes without it.
    fn draw_svg(&self, topology: &str) -> Option<String>;
}

/// Drawings of `topologies` in their order, skipping those the drawer does not know.
pub fn drawings(drawer: Option<&dyn DrawTopology>, topologies: &[String]) -> Vec<(String, String)> {
    let Some(d) = drawer else {
        return Vec::new();
    };
    topologies
        .iter()
        .filter_map(|t| d.draw_svg(t).map(|svg| (t.clone(), svg)))
        .collect()
}
