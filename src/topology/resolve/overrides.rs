//! Addresses given by hand, each to a known plain interface or bond, once.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use crate::spec::{IfName, SpecErrors};
use crate::topology::draft::{Draft, DraftAddress, Span};

use super::bonds::Bonds;
use super::errors::{Errors, suggest};
use super::links::LinkRef;
use super::nodes::NodeIndex;
use super::wiring::Wiring;

/// The address given to each link, with where it was given.
pub(super) struct Overrides {
    by_link: BTreeMap<(usize, IfName), (Ipv4Net, Span)>,
}

impl Overrides {
    pub(super) fn of(&self, link: &LinkRef) -> Option<&(Ipv4Net, Span)> {
        self.by_link.get(&(link.node, link.interface.clone()))
    }

    /// Where the first override (by node, then interface) on one of `links` was given.
    pub(super) fn first_span_among(&self, links: &[LinkRef]) -> Option<Span> {
        self.by_link
            .iter()
            .find(|((n, ifn), _)| links.iter().any(|l| l.node == *n && &l.interface == ifn))
            .map(|(_, (_, s))| s.clone())
    }
}

pub(super) fn read_overrides(
    draft: &Draft,
    nodes: &NodeIndex,
    wiring: &Wiring,
    bonds: &Bonds,
    errs: &mut Errors,
) -> Result<Overrides, SpecErrors> {
    let mut overrides = Overrides {
        by_link: BTreeMap::new(),
    };
    for a in &draft.addresses {
        let (node, nspan) = &a.node;
        let Some(ni) = nodes.find(node, nspan, errs) else {
            continue;
        };
        if names_an_addressed_link(a, ni, wiring, bonds, errs)
            && overrides
                .by_link
                .insert(
                    (ni, a.interface.0.clone()),
                    (a.address.0, a.address.1.clone()),
                )
                .is_some()
        {
            errs.push(
                &a.address.1,
                format!("{node}:{} is given an address twice", a.interface.0),
            );
        }
    }
    errs.check()?;
    Ok(overrides)
}

/// Whether the override names a plain interface or a bond of its node; if not, says why.
fn names_an_addressed_link(
    a: &DraftAddress,
    ni: usize,
    wiring: &Wiring,
    bonds: &Bonds,
    errs: &mut Errors,
) -> bool {
    let node = &a.node.0;
    let (ifname, ispan) = &a.interface;
    let is_bond = bonds.per_node[ni].iter().any(|b| &b.name == ifname);
    if let Some(master) = bonds.master(ni, ifname) {
        errs.push(
            ispan,
            format!(
                "{node}:{ifname} is a slave of bond `{master}`; give the address to `{master}`"
            ),
        );
        false
    } else if !is_bond && !wiring.interfaces[ni].contains_key(ifname) {
        let mut have: Vec<&str> = wiring.interfaces[ni].keys().map(|i| i.as_str()).collect();
        have.extend(bonds.per_node[ni].iter().map(|b| b.name.as_str()));
        errs.push_help(
            ispan,
            format!("{node} has no interface `{ifname}`"),
            suggest(ifname.as_str(), have),
        );
        false
    } else {
        true
    }
}
