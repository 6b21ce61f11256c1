//! The draft's nodes by name: where each sits in the draft's list, which is how the later
//! stages refer to it, and a suggestion for a name that is not there.

use std::collections::BTreeMap;

use crate::spec::NodeName;

use super::errors::{Errors, suggest};
use crate::topology::draft::{Draft, Span};

pub(super) struct NodeIndex<'d> {
    positions: BTreeMap<&'d NodeName, usize>,
    names: Vec<&'d str>,
}

impl<'d> NodeIndex<'d> {
    /// Indexes the draft's nodes, reporting any listed twice.
    pub(super) fn new(draft: &'d Draft, errs: &mut Errors) -> Self {
        let mut positions = BTreeMap::new();
        for (i, (name, span)) in draft.nodes.iter().enumerate() {
            if positions.insert(name, i).is_some() {
                errs.push(span, format!("node `{name}` is listed twice"));
            }
        }
        NodeIndex {
            positions,
            names: draft.nodes.iter().map(|(n, _)| n.as_str()).collect(),
        }
    }

    pub(super) fn contains(&self, name: &NodeName) -> bool {
        self.positions.contains_key(name)
    }

    /// The position of a node already checked to exist.
    pub(super) fn position(&self, name: &NodeName) -> usize {
        self.positions[name]
    }

    /// The position of a node named in the text at `span`, or an error there if it is unknown.
    pub(super) fn find(&self, name: &NodeName, span: &Span, errs: &mut Errors) -> Option<usize> {
        let found = self.positions.get(name).copied();
        if found.is_none() {
            self.report_unknown(name, span, errs);
        }
        found
    }

    pub(super) fn report_unknown(&self, name: &NodeName, span: &Span, errs: &mut Errors) {
        errs.push_help(
            span,
            format!("unknown node `{name}`"),
            suggest(name.as_str(), self.names.iter().copied()),
        );
    }
}
