//! Resolution: a [`Draft`] checked for meaning and turned into a [`Topology`] with networks,
//! subnets, addresses, routes and forwarding worked out. Every problem is reported with the
//! span it came from; nothing half-resolved escapes.
//!
//! Resolution runs in stages, one file each, in the order [`resolve`] calls them. A stage that
//! finds problems ends resolution with everything it found: later stages assume earlier ones
//! held.

mod assemble;
mod bonds;
mod errors;
mod hosts;
mod links;
mod nodes;
mod overrides;
mod prefixes;
mod reachability;
mod routes;
mod wiring;

use crate::spec::{SourceFile, SpecErrors};

use super::draft::Draft;
use super::graph::Topology;
use errors::Errors;

pub fn resolve(draft: Draft, source: &SourceFile) -> Result<Topology, SpecErrors> {
    let mut errs = Errors::new(source);
    let nodes = nodes::NodeIndex::new(&draft, &mut errs);
    let wiring = wiring::wire(&draft, &nodes, &mut errs)?;
    let bonds = bonds::check_bonds(&draft, &nodes, &wiring, &mut errs)?;
    bonds::check_single_attachment(&draft, &wiring, &bonds, &mut errs)?;
    let groups = links::group_links(&wiring, &bonds);
    let overrides = overrides::read_overrides(&draft, &nodes, &wiring, &bonds, &mut errs)?;
    let prefixes = prefixes::assign_prefixes(&draft, &groups, &overrides, &mut errs)?;
    let addressing = hosts::assign_hosts(&draft, &groups, &prefixes, &overrides, &mut errs)?;
    let mut topology = assemble::assemble(&draft, wiring, &bonds, addressing);
    let route_spans = routes::route(&draft, &nodes, &mut topology, &mut errs)?;
    reachability::check_paths(&draft, &topology, &route_spans, &mut errs)?;
    Ok(topology)
}
