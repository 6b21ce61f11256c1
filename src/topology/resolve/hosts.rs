//! Host addresses: node i gets host i+1 on every subnet (the next free one if that is taken),
//! unless its address was given by hand.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::spec::{IfName, SpecErrors};
use crate::topology::draft::Draft;
use crate::topology::graph::{Link, Subnet};

use super::Errors;
use super::links::{LinkGroup, LinkRef};
use super::overrides::Overrides;

/// The addressed subnets, and each link's address with its prefix length.
pub(super) struct Addressing {
    pub(super) subnets: Vec<Subnet>,
    pub(super) address_of: BTreeMap<(usize, IfName), Ipv4Net>,
}

pub(super) fn assign_hosts(
    draft: &Draft,
    groups: &[LinkGroup],
    prefixes: &[Ipv4Net],
    overrides: &Overrides,
    errs: &mut Errors,
) -> Result<Addressing, SpecErrors> {
    let mut addressing = Addressing {
        subnets: Vec::new(),
        address_of: BTreeMap::new(),
    };
    for (group, &prefix) in groups.iter().zip(prefixes) {
        let mut used: BTreeSet<Ipv4Addr> = group
            .links
            .iter()
            .filter_map(|l| overrides.of(l).map(|(a, _)| a.addr()))
            .collect();
        let mut links = Vec::new();
        for l in &group.links {
            let addr = match overrides.of(l) {
                Some((a, span)) => {
                    if a.addr() == prefix.network() || a.addr() == prefix.broadcast() {
                        errs.push(
                            span,
                            format!(
                                "{} is the network or broadcast address of {prefix}",
                                a.addr()
                            ),
                        );
                    }
                    a.addr()
                }
                None => next_free_host(draft, l, prefix, &mut used, errs),
            };
            let net = Ipv4Net::new(addr, prefix.prefix_len()).expect("valid length");
            addressing
                .address_of
                .insert((l.node, l.interface.clone()), net);
            links.push(Link {
                node: draft.nodes[l.node].0.clone(),
                interface: l.interface.clone(),
                address: addr,
            });
        }
        report_duplicates(&links, prefix, errs);
        addressing.subnets.push(Subnet {
            prefix,
            networks: group.networks.clone(),
            links,
        });
    }
    errs.check()?;
    Ok(addressing)
}

/// Host (node position + 1) on `prefix`, or the first free one after it; marks it used. Past
/// the end of the subnet, reports that the node does not fit.
fn next_free_host(
    draft: &Draft,
    link: &LinkRef,
    prefix: Ipv4Net,
    used: &mut BTreeSet<Ipv4Addr>,
    errs: &mut Errors,
) -> Ipv4Addr {
    let mut host = link.node as u32 + 1;
    loop {
        let cand = Ipv4Addr::from(u32::from(prefix.network()) + host);
        if !prefix.contains(&cand) || cand == prefix.broadcast() {
            errs.push(
                &draft.prefix.1,
                format!(
                    "subnet {prefix} has no room for node {}",
                    draft.nodes[link.node].0
                ),
            );
            return cand;
        }
        if used.insert(cand) {
            return cand;
        }
        host += 1;
    }
}

/// Addresses given by hand may coincide (the others avoid them); reported without a span.
fn report_duplicates(links: &[Link], prefix: Ipv4Net, errs: &mut Errors) {
    let mut seen = BTreeSet::new();
    for l in links {
        if !seen.insert(l.address) {
            errs.push(
                &(0..0),
                format!("address {} is used twice on {prefix}", l.address),
            );
        }
    }
}
