//! The management network of a netns cluster: a bridge on the host holding the gateway
//! address, and per node a veth whose host end is on the bridge and whose other end is the
//! node's `mgmt0`, made straight in the node's namespace. No NAT and no forwarding: the host
//! reaches its nodes, nothing else is changed.

use crate::vcluster::error::Result;
use crate::vcluster::names::MGMT_IFNAME;
use crate::vcluster::wires::{Ns, ip_batch, veth};

use super::record::NetnsRecord;

/// Makes the bridge with the gateway address and every node's veth, in two `ip -batch`es
/// (the host's ends are kept from speaking IPv6 before they come up).
pub fn create(r: &NetnsRecord) -> Result<()> {
    let what = "making the cluster's management network";
    let mut adds = vec![format!("link add {} type bridge", r.bridge)];
    for m in r.nodes() {
        if let Some(end) = &m.mgmt_end {
            adds.push(format!(
                "link add {end} type veth peer name {MGMT_IFNAME} netns {}",
                m.namespace
            ));
        }
    }
    ip_batch(Ns::Host, what, &adds)?;
    for link in r.mgmt_links() {
        veth::quiet(&link)?;
    }
    let mut ups = vec![
        format!(
            "addr add {}/{} dev {}",
            r.gateway(),
            r.subnet.prefix_len(),
            r.bridge
        ),
        format!("link set dev {} up", r.bridge),
    ];
    for end in r.nodes().filter_map(|m| m.mgmt_end.as_ref()) {
        ups.push(format!("link set dev {end} master {}", r.bridge));
        ups.push(format!("link set dev {end} up"));
    }
    ip_batch(Ns::Host, what, &ups)
}

/// The lines, for `ip -batch` in a node's namespace, that give its `mgmt0` the node's address
/// and bring it up.
pub fn inside_lines(r: &NetnsRecord, node: &str) -> Vec<String> {
    let Some(address) = r.member(node).and_then(|m| m.address) else {
        return Vec::new();
    };
    vec![
        format!(
            "addr add {address}/{} dev {MGMT_IFNAME}",
            r.subnet.prefix_len()
        ),
        format!("link set dev {MGMT_IFNAME} up"),
    ]
}

/// Removes those of the host's links `names` that exist, in one `ip -batch` (a veth's other
/// end goes with it); returns how many.
pub fn remove_links(names: &[String]) -> Result<usize> {
    let present: std::collections::BTreeSet<String> = veth::find(|_| true)?.into_iter().collect();
    let doomed: Vec<String> = names
        .iter()
        .filter(|n| present.contains(*n))
        .map(|n| format!("link del dev {n}"))
        .collect();
    ip_batch(Ns::Host, "removing the cluster's host links", &doomed)?;
    Ok(doomed.len())
}
