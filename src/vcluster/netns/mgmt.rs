//! The management network of a netns cluster: a bridge on the host holding the gateway
//! address, and per node a veth whose host end is on the bridge and whose other end is the
//! node's `mgmt0`, made straight in the node's namespace. No NAT and no forwarding: the host
//! reaches its nodes, nothing else is changed.

use crate::vcluster::error::Result;
use crate::vcluster::names::MGMT_IFNAME;
use crate::vcluster::wires::{Ns, ip_batch, veth};

use super::record::NetnsRecord;

/// Makes the bridges with their gateway addresses and every node's veth, in two `ip
/// -batch`es (the host's ends are kept from speaking IPv6 before they come up). Each node's
/// address is a permanent neighbour entry on its bridge: the host's neighbour table holds
/// 1024 entries it learns (gc_thresh3), fewer than a large cluster's nodes beside the host's
/// own, and permanent entries are not counted against it; they go with the bridge.
pub fn create(r: &NetnsRecord) -> Result<()> {
    let what = "making the cluster's management network";
    let mut adds: Vec<String> = r
        .bridges
        .iter()
        .map(|b| {
            let address = b
                .mac
                .as_ref()
                .map(|mac| format!(" address {mac}"))
                .unwrap_or_default();
            format!("link add {}{address} type bridge", b.name)
        })
        .collect();
    for m in r.nodes() {
        if let Some(end) = &m.mgmt_end {
            let address = m
                .mac
                .as_ref()
                .map(|mac| format!(" address {mac}"))
                .unwrap_or_default();
            adds.push(format!(
                "link add {end} type veth peer name {MGMT_IFNAME}{address} netns {}",
                m.namespace
            ));
        }
    }
    ip_batch(Ns::Host, what, &adds)?;
    for link in r.mgmt_links() {
        veth::quiet(&link)?;
    }
    let mut ups = Vec::new();
    for b in &r.bridges {
        ups.push(format!(
            "addr add {}/{} dev {}",
            b.gateway(),
            b.subnet.prefix_len(),
            b.name
        ));
        ups.push(format!("link set dev {} up", b.name));
    }
    for m in r.nodes() {
        if let (Some(end), Some(b)) = (&m.mgmt_end, r.bridge_of(m)) {
            ups.push(format!("link set dev {end} master {}", b.name));
            ups.push(format!("link set dev {end} up"));
        }
        if let (Some(address), Some(mac), Some(b)) = (m.address, &m.mac, r.bridge_of(m)) {
            ups.push(format!(
                "neigh replace {address} lladdr {mac} dev {} nud permanent",
                b.name
            ));
        }
    }
    ip_batch(Ns::Host, what, &ups)
}

/// The lines, for `ip -batch` in a node's namespace, that give its `mgmt0` the node's address,
/// bring it up and make its gateway (the bridge) a permanent neighbour.
///
/// Without that entry every node asks for the gateway by ARP broadcast, which the bridge
/// copies to every other port: at 1024 nodes a million frames, more than the receiving
/// CPU's backlog (1000) holds, so that SYNs and their answers were lost and sshds seemed not
/// to answer for a second or two at a time (probing all 1024 took 52 s, 36 of them over 1 s).
pub fn inside_lines(r: &NetnsRecord, node: &str) -> Vec<String> {
    let Some(m) = r.member(node) else {
        return Vec::new();
    };
    let (Some(address), Some(b)) = (m.address, r.bridge_of(m)) else {
        return Vec::new();
    };
    let mut lines = vec![
        format!(
            "addr add {address}/{} dev {MGMT_IFNAME}",
            b.subnet.prefix_len()
        ),
        format!("link set dev {MGMT_IFNAME} up"),
    ];
    if let Some(mac) = &b.mac {
        lines.push(format!(
            "neigh replace {} lladdr {mac} dev {MGMT_IFNAME} nud permanent",
            b.gateway()
        ));
    }
    lines
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

/// Waits until none of the host's links `names` exists (the kernel removes a deleted
/// namespace's veths, and their host ends, in the background), up to `limit`; returns how
/// many are still there.
pub fn wait_gone(names: &[String], limit: std::time::Duration) -> Result<usize> {
    let start = std::time::Instant::now();
    let wanted: std::collections::BTreeSet<&str> = names.iter().map(String::as_str).collect();
    loop {
        let left = veth::find(|l| wanted.contains(l))?.len();
        if left == 0 || start.elapsed() > limit {
            return Ok(left);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::names::ClusterName;
    use crate::vcluster::netns::record::plan;
    use crate::vcluster::wires::{Medium, Wiring};

    #[test]
    fn every_node_holds_its_own_bridges_gateway_as_a_permanent_neighbour() {
        let mut b = Wiring::builder("big").segment("bus", 10_000_000, Medium::Shared);
        for k in 0..1500 {
            b = b.node(format!("n{k}"), [("eth1", "bus")]);
        }
        let w = b.build().unwrap();
        let plan_for = |cluster: &str| {
            let c = ClusterName::parse(cluster).unwrap();
            plan(&c, &w, "10.255.248.0/21".parse().unwrap()).unwrap()
        };
        let r = plan_for("big");
        let macs: Vec<&str> = r.bridges.iter().filter_map(|b| b.mac.as_deref()).collect();
        assert_eq!(macs.len(), 2, "every bridge has its MAC set");
        assert_ne!(macs[0], macs[1]);
        assert_ne!(
            plan_for("other").bridges[0].mac,
            r.bridges[0].mac,
            "another cluster's bridge differs"
        );
        for (node, bridge) in [("n0", 0), ("n999", 0), ("n1000", 1), ("n1499", 1)] {
            let want = format!(
                "neigh replace {} lladdr {} dev {MGMT_IFNAME} nud permanent",
                r.bridges[bridge].gateway(),
                macs[bridge]
            );
            let lines = inside_lines(&r, node);
            assert!(lines.contains(&want), "{node}: {lines:?}");
            let up = lines.iter().position(|l| l.contains(" up")).unwrap();
            let neigh = lines.iter().position(|l| *l == want).unwrap();
            assert!(up < neigh, "the entry is added once mgmt0 is up: {lines:?}");
        }
    }
}
