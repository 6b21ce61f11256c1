//! Resolution: a [`Draft`] checked for meaning and turned into a [`Topology`] with networks,
//! subnets, addresses, routes and forwarding worked out. Every problem is reported with the
//! span it came from; nothing half-resolved escapes.
//!
//! Resolution runs in stages, one file each, in the order [`resolve`] calls them. A stage that
//! finds problems ends resolution with everything it found: later stages assume earlier ones
//! held.

mod assemble;
mod bonds;
mod hosts;
mod links;
mod nodes;
mod overrides;
mod prefixes;
mod reachability;
mod routes;
mod wiring;

use crate::spec::{SourceFile, SpecError, SpecErrors, best_match};

use super::draft::{Draft, Span};
use super::graph::Topology;

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

/// The problems found so far, each located in the topology file's text.
struct Errors<'a> {
    source: &'a SourceFile,
    list: Vec<SpecError>,
}

impl<'a> Errors<'a> {
    fn new(source: &'a SourceFile) -> Self {
        Errors {
            source,
            list: Vec::new(),
        }
    }
    fn push(&mut self, span: &Span, message: impl Into<String>) {
        self.list
            .push(self.source.error(span.clone(), message, None));
    }
    fn push_help(&mut self, span: &Span, message: impl Into<String>, help: String) {
        self.list
            .push(self.source.error(span.clone(), message, Some(help)));
    }
    /// Ends a stage: later stages assume earlier ones held.
    fn check(&mut self) -> Result<(), SpecErrors> {
        if self.list.is_empty() {
            Ok(())
        } else {
            Err(SpecErrors::new(std::mem::take(&mut self.list)))
        }
    }
}

fn suggest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match best_match(word, candidates) {
        Some(m) => format!("did you mean `{m}`?"),
        None => "check the spelling against the names defined in this file".into(),
    }
}
