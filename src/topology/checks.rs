//! Checks on a topology spec's values that need no resolution: addresses a node cannot use,
//! route destinations with host bits set, wires too slow to measure, and lists longer than the
//! caps in [`crate::spec::limits`]. Each error points at the value at fault.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use toml::Spanned;

use crate::spec::limits::{MAX_INTERFACES_PER_NODE, MAX_ITEMS, MIN_RATE};
use crate::spec::topology::TopologySpec;
use crate::spec::{IfName, Rate, SourceFile, SpecError};

/// Every problem of these kinds in `spec`, in file order of the kinds.
pub(super) fn check(spec: &TopologySpec, source: &SourceFile, errors: &mut Vec<SpecError>) {
    let mut push = |span: std::ops::Range<usize>, message: String, help: Option<String>| {
        errors.push(source.error(span, message, help));
    };
    list_lengths(spec, &mut push);
    let base = &spec.addressing.base;
    if let Some(why) = reserved_overlap(base.get_ref()) {
        push(
            base.span(),
            format!("addressing base {} {why}", base.get_ref()),
            Some("use a private range such as 10.111.0.0/16".into()),
        );
    }
    for a in &spec.address {
        if let Some(why) = unusable_host(a.address.get_ref().addr()) {
            push(
                a.address.span(),
                format!("address {} {why}", a.address.get_ref()),
                None,
            );
        }
    }
    for r in &spec.route {
        route_values(&r.to, &r.via, &mut push);
    }
    loopback_interfaces(spec, &mut push);
    for seg in &spec.segment {
        rate_floor(&seg.rate, &mut push);
    }
    if let Some(rate) = spec
        .generator
        .as_ref()
        .and_then(|g| g.get_ref().rate.as_ref())
    {
        rate_floor(rate, &mut push);
    }
}

type Push<'a> = dyn FnMut(std::ops::Range<usize>, String, Option<String>) + 'a;

/// A route's destination is a network (no host bits) and its next hop a usable address.
fn route_values(to: &Spanned<Ipv4Net>, via: &Spanned<Ipv4Addr>, push: &mut Push) {
    let net = to.get_ref();
    if net.addr() != net.network() {
        push(
            to.span(),
            format!("route destination {net} has host bits set"),
            Some(format!(
                "a destination is a network: did you mean {}?",
                net.trunc()
            )),
        );
    }
    if let Some(why) = unusable_host(*via.get_ref()) {
        push(
            via.span(),
            format!("next hop {} {why}", via.get_ref()),
            None,
        );
    }
}

/// `lo` named where a topology means a wire or a bond: as a bond, a bond's slave or primary,
/// or the interface of a hand-given address. (A segment member `lo` is refused where members
/// are read.) `lo` reaches no other node, and the tool puts its own addresses on it (ECMP's
/// node address).
fn loopback_interfaces(spec: &TopologySpec, push: &mut Push) {
    let mut refuse = |name: &Spanned<IfName>, role: &str| {
        if name.get_ref().is_loopback() {
            push(
                name.span(),
                format!(
                    "`lo` cannot be {role}: it is the node's loopback interface, which reaches no other node"
                ),
                Some("name an interface that a segment's `members` wires, such as eth1".into()),
            );
        }
    };
    for b in &spec.bond {
        refuse(&b.name, "a bond");
        for slave in &b.slaves {
            refuse(slave, "a bond's slave");
        }
        if let Some(primary) = &b.primary {
            refuse(primary, "a bond's primary");
        }
    }
    for a in &spec.address {
        refuse(&a.interface, "given an address");
    }
}

fn rate_floor(rate: &Spanned<Rate>, push: &mut Push) {
    if *rate.get_ref() < MIN_RATE {
        push(
            rate.span(),
            format!(
                "rate {} is below the {MIN_RATE} floor: a full-size frame would take longer \
                 than the worker's 10 s socket timeout",
                rate.get_ref()
            ),
            None,
        );
    }
}

/// No list is longer than its cap; a bond has no more slaves than a node may have interfaces.
fn list_lengths(spec: &TopologySpec, push: &mut Push) {
    let lists: [(&str, Option<std::ops::Range<usize>>, usize); 5] = [
        (
            "segment",
            spec.segment.get(MAX_ITEMS).map(|s| s.name.span()),
            spec.segment.len(),
        ),
        (
            "switch",
            spec.switch.get(MAX_ITEMS).map(|s| s.name.span()),
            spec.switch.len(),
        ),
        (
            "bond",
            spec.bond.get(MAX_ITEMS).map(|s| s.name.span()),
            spec.bond.len(),
        ),
        (
            "route",
            spec.route.get(MAX_ITEMS).map(|s| s.node.span()),
            spec.route.len(),
        ),
        (
            "address",
            spec.address.get(MAX_ITEMS).map(|s| s.node.span()),
            spec.address.len(),
        ),
    ];
    for (what, first_over, len) in lists {
        if let Some(span) = first_over {
            push(
                span,
                format!("{len} [[{what}]] tables; at most {MAX_ITEMS} are allowed"),
                None,
            );
        }
    }
    for seg in &spec.segment {
        if let Some(m) = seg.members.get(MAX_ITEMS) {
            push(
                m.span(),
                format!(
                    "segment `{}` lists {} members; at most {MAX_ITEMS} are allowed",
                    seg.name.get_ref(),
                    seg.members.len()
                ),
                None,
            );
        }
    }
    for b in &spec.bond {
        if let Some(s) = b.slaves.get(MAX_INTERFACES_PER_NODE) {
            push(
                s.span(),
                format!(
                    "bond `{}` has {} slaves; at most {MAX_INTERFACES_PER_NODE} are allowed",
                    b.name.get_ref(),
                    b.slaves.len()
                ),
                None,
            );
        }
    }
}

/// Why a node cannot hold `addr` on an experiment interface, if it cannot.
pub(crate) fn unusable_host(addr: Ipv4Addr) -> Option<&'static str> {
    if addr.is_unspecified() {
        Some("is the unspecified address 0.0.0.0, which no interface can hold")
    } else if addr.is_loopback() {
        Some("is a loopback address (127.0.0.0/8): traffic to it never leaves the node")
    } else if addr.is_link_local() {
        Some("is link-local (169.254.0.0/16): the kernel neither routes nor forwards it")
    } else if addr.is_multicast() {
        Some("is a multicast address (224.0.0.0/4), not a host's")
    } else if addr.is_broadcast() {
        Some("is the broadcast address 255.255.255.255")
    } else if addr.octets()[0] == 0 {
        Some("is in 0.0.0.0/8 (\"this network\"), which no host may use")
    } else if addr.octets()[0] >= 240 {
        Some("is in the reserved range 240.0.0.0/4")
    } else {
        None
    }
}

/// Why subnets carved from `base` could not all be used, if they could not: it overlaps a
/// range no host may use.
fn reserved_overlap(base: &Ipv4Net) -> Option<&'static str> {
    const RESERVED: [(&str, &str); 5] = [
        (
            "0.0.0.0/8",
            "overlaps 0.0.0.0/8 (\"this network\"), which no host may use",
        ),
        ("127.0.0.0/8", "overlaps the loopback range 127.0.0.0/8"),
        (
            "169.254.0.0/16",
            "overlaps the link-local range 169.254.0.0/16",
        ),
        ("224.0.0.0/4", "overlaps the multicast range 224.0.0.0/4"),
        ("240.0.0.0/4", "overlaps the reserved range 240.0.0.0/4"),
    ];
    RESERVED.iter().find_map(|(net, why)| {
        let net: Ipv4Net = net.parse().expect("valid");
        (net.contains(&base.network()) || base.contains(&net.network())).then_some(*why)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_a_node_cannot_hold_are_named() {
        for bad in [
            "0.0.0.0",
            "127.0.0.1",
            "169.254.1.1",
            "224.0.0.1",
            "255.255.255.255",
            "0.1.2.3",
            "250.0.0.1",
        ] {
            assert!(unusable_host(bad.parse().unwrap()).is_some(), "{bad}");
        }
        for good in ["10.0.0.1", "192.0.2.5", "172.16.0.1"] {
            assert_eq!(unusable_host(good.parse().unwrap()), None, "{good}");
        }
    }

    #[test]
    fn bases_overlapping_reserved_ranges_are_refused() {
        for bad in [
            "127.0.0.0/16",
            "0.0.0.0/0",
            "224.0.0.0/8",
            "169.254.0.0/24",
            "128.0.0.0/1",
        ] {
            assert!(reserved_overlap(&bad.parse().unwrap()).is_some(), "{bad}");
        }
        assert_eq!(reserved_overlap(&"10.111.0.0/16".parse().unwrap()), None);
    }
}
