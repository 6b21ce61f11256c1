//! Host addresses, unless given by hand. Where every node of the topology fits in a subnet,
//! node i is host i + 1 on every subnet it is on (n05 is .5 everywhere, easy to read); in a
//! topology with more nodes than a subnet has hosts, a subnet numbers its own stations in the
//! order they are on it, so a subnet of up to 254 stations fits a /24 whatever the node
//! count. Either way the next free host is taken where the preferred one is in use.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::spec::{IfName, SpecErrors};
use crate::topology::draft::Draft;
use crate::topology::graph::{Link, Subnet};

use super::errors::Errors;
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
        let numbering = Numbering::for_subnet(draft.nodes.len(), prefix);
        let mut used: BTreeSet<Ipv4Addr> = group
            .links
            .iter()
            .filter_map(|l| overrides.of(l).map(|(a, _)| a.addr()))
            .collect();
        let mut links = Vec::new();
        for (station, l) in group.links.iter().enumerate() {
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
                None => {
                    let preferred = match numbering {
                        Numbering::ByNode => l.node,
                        Numbering::ByStation => station,
                    };
                    next_free_host(
                        draft,
                        l,
                        preferred,
                        group.links.len(),
                        prefix,
                        &mut used,
                        errs,
                    )
                }
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
        report_duplicates(&links, &group.links, overrides, prefix, errs);
        addressing.subnets.push(Subnet {
            prefix,
            networks: group.networks.clone(),
            links,
        });
    }
    errs.check()?;
    Ok(addressing)
}

/// How a subnet picks its stations' preferred host numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Numbering {
    /// Node i is host i + 1.
    ByNode,
    /// The subnet's k-th station is host k + 1.
    ByStation,
}

impl Numbering {
    fn for_subnet(nodes: usize, prefix: Ipv4Net) -> Numbering {
        // Hosts 1 ..= 2^bits - 2; the last node is host `nodes`.
        let hosts = (1u64 << (32 - u32::from(prefix.prefix_len()))).saturating_sub(2);
        if nodes as u64 <= hosts {
            Numbering::ByNode
        } else {
            Numbering::ByStation
        }
    }
}

/// Host `preferred + 1` on `prefix`, or the first free one after it; marks it used. Past the
/// end of the subnet, reports that its `stations` do not fit (once per subnet) and gives the
/// network address as a stand-in.
fn next_free_host(
    draft: &Draft,
    link: &LinkRef,
    preferred: usize,
    stations: usize,
    prefix: Ipv4Net,
    used: &mut BTreeSet<Ipv4Addr>,
    errs: &mut Errors,
) -> Ipv4Addr {
    let last = u32::from(prefix.broadcast());
    let mut host = u32::from(prefix.network()).saturating_add(preferred as u32 + 1);
    while host < last {
        let cand = Ipv4Addr::from(host);
        if used.insert(cand) {
            return cand;
        }
        host += 1;
    }
    if used.insert(prefix.network()) {
        report_no_room(draft, link.node, stations, prefix, errs);
    }
    prefix.network()
}

/// Node `node` has no host address left on `prefix`, which has `stations` stations: points
/// at the `prefix` key if it was given, else at where the node was listed, and says what
/// prefix would fit them all.
fn report_no_room(draft: &Draft, node: usize, stations: usize, prefix: Ipv4Net, errs: &mut Errors) {
    let (name, node_span) = &draft.nodes[node];
    let (base, base_span) = &draft.base;
    // Every station a host, plus the network and broadcast addresses.
    let needed = stations as u64 + 2;
    let bits = 64 - (needed - 1).leading_zeros();
    let fits = 32u32.saturating_sub(bits) as u8;
    let help = if fits >= base.prefix_len() {
        format!(
            "set `prefix = {fits}` (or lower) under [addressing]: a /{fits} subnet holds all \
             {stations} stations"
        )
    } else {
        format!(
            "a /{fits} subnet would hold all {stations} stations, which needs a larger `base` \
             under [addressing] than {base}, and `prefix = {fits}`"
        )
    };
    let span = [&draft.prefix.1, base_span, node_span]
        .into_iter()
        .find(|s| !s.is_empty())
        .cloned()
        .unwrap_or(0..0);
    let room = (1u64 << (32 - u32::from(prefix.prefix_len()))).saturating_sub(2);
    errs.push_help(
        &span,
        format!(
            "subnet {prefix} has no room for node {name}: it has {stations} stations and room \
             for {room} hosts"
        ),
        help,
    );
}

/// Addresses given by hand may coincide (the others avoid them); reported where the second
/// was given.
fn report_duplicates(
    links: &[Link],
    refs: &[LinkRef],
    overrides: &Overrides,
    prefix: Ipv4Net,
    errs: &mut Errors,
) {
    let mut seen = BTreeSet::new();
    // Only addresses given by hand can coincide: the others avoid every address in use.
    for (l, r) in links.iter().zip(refs) {
        let Some((_, span)) = overrides.of(r) else {
            continue;
        };
        if !seen.insert(l.address) {
            errs.push(
                span,
                format!("address {} is used twice on {prefix}", l.address),
            );
        }
    }
}
