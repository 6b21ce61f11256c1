//! Reaching a configuration's nodes: the inventory read, one SSH session per node.

use std::path::Path;
use std::time::Duration;

use crate::remote::{ConnectOptions, Inventory, Sessions};
use crate::spec::NodeName;

use super::fanout::{FANOUT, listed};

/// Reads an inventory and connects to `nodes`; every problem is listed under `what`.
pub async fn connect(inventory: &Path, nodes: &[NodeName], what: &str) -> anyhow::Result<Sessions> {
    let inv = Inventory::load(inventory).map_err(|e| {
        let errors: Vec<String> = e.errors.iter().map(|x| x.to_string()).collect();
        anyhow::anyhow!("{}", listed(&errors))
    })?;
    let opts = ConnectOptions {
        idle_exit: idle_exit(nodes.len()),
        ..ConnectOptions::default()
    };
    Sessions::connect(&inv, nodes, &opts).await.map_err(|errs| {
        let errors: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        anyhow::anyhow!("{what}:\n  {}", listed(&errors))
    })
}

/// How long a master may sit without a session before it exits on its own (which is what a
/// killed controller's masters do): a minute, or half a minute for every round of
/// [`FANOUT`] nodes, the longest a node waits for its turn at anything. While the run is
/// alive, `Sessions` runs `true` over masters idle for a quarter of it; at 1024 nodes with a
/// minute's idle exit that was some 900 sessions every 7.5 s, more than two cores could
/// serve, and the masters exited under it ("the connection was terminated" on 802 nodes).
fn idle_exit(nodes: usize) -> Duration {
    let rounds = nodes.div_ceil(FANOUT) as u32;
    Duration::from_secs(60).max(Duration::from_secs(30) * rounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_master_outlives_the_longest_wait_for_a_turn() {
        assert_eq!(idle_exit(1), Duration::from_secs(60));
        assert_eq!(idle_exit(128), Duration::from_secs(60));
        assert_eq!(idle_exit(256), Duration::from_secs(120));
        assert_eq!(idle_exit(1024), Duration::from_secs(480));
    }
}
