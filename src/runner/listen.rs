//! Where a node's workers listen: on its experiment addresses only.

use std::net::SocketAddr;

use anyhow::bail;

use crate::spec::NodeName;
use crate::topology::Topology;

/// `ADDR:PORT` of every experiment address of `node`, where its server listens: clients reach
/// a server only at those, so it listens nowhere else (not on the control network, not on the
/// wildcard).
pub(super) fn listen_addresses(
    topology: &Topology,
    node: &NodeName,
    port: u16,
) -> anyhow::Result<Vec<String>> {
    // Under ECMP clients reach a server at its node address on lo.
    let Some(addrs) = topology
        .node(node)
        .map(|n| n.addresses().into_iter().chain(n.node_address()))
    else {
        bail!("{node}: not a node of {}", topology.name);
    };
    Ok(addrs
        .into_iter()
        .map(|a| SocketAddr::from((a, port)).to_string())
        .collect())
}
