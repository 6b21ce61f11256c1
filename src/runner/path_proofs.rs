//! Proving each planned pair's path before measuring: a ping with TTL = hops reaches the
//! target, and (for paths through forwarding nodes) one with TTL = hops - 1 does not.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use anyhow::bail;

use crate::plan::Configuration;
use crate::remote::Sessions;
use crate::spec::NodeName;

use super::node::fanout::{EXEC_TIMEOUT, listed};

/// The program the checks run on each pair's client.
const PING: &str = "ping";

/// What the path checks call on a node, checked with the scripts' own before any change.
pub const PROGRAMS: &[&str] = &[PING];

/// The nodes the path checks run on: every planned pair's client.
pub fn checking_nodes(config: &Configuration) -> BTreeSet<NodeName> {
    config
        .placements
        .iter()
        .flat_map(|e| e.placement.pairs.iter())
        .map(|p| p.client.clone())
        .collect()
}

pub async fn verify_paths(config: &Configuration, cluster: &Sessions) -> anyhow::Result<()> {
    let mut pairs: Vec<(NodeName, Ipv4Addr, usize)> = config
        .placements
        .iter()
        .flat_map(|e| e.placement.pairs.iter())
        .map(|p| (p.client.clone(), p.path.target, p.path.hop_count()))
        .collect();
    pairs.sort();
    pairs.dedup();
    let checks = pairs
        .iter()
        .map(|(client, target, hops)| check(cluster, client, *target, *hops));
    let errors: Vec<String> = futures_util::future::join_all(checks)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if !errors.is_empty() {
        bail!(
            "{}: path checks failed:\n  {}",
            config.topology.name,
            listed(&errors)
        );
    }
    Ok(())
}

async fn check(
    cluster: &Sessions,
    client: &NodeName,
    target: Ipv4Addr,
    hops: usize,
) -> Result<(), String> {
    let ping = |ttl: usize, wait_s: u32| format!("{PING} -n -q -c 1 -W {wait_s} -t {ttl} {target}");
    if let Err(e) = cluster
        .run(client, &ping(hops, 2), None, EXEC_TIMEOUT)
        .await
    {
        return Err(format!(
            "{client} cannot reach {target} in {hops} hop(s): {e}"
        ));
    }
    if hops > 1
        && cluster
            .run(client, &ping(hops - 1, 1), None, EXEC_TIMEOUT)
            .await
            .is_ok()
    {
        return Err(format!(
            "{client} reaches {target} in fewer than {hops} hops: the path is not the planned one"
        ));
    }
    Ok(())
}
