//! `down`: removes everything `up` made for a cluster, and nothing else.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use super::cluster_dir::ClusterDir;
use super::docker::{ContainerInfo, Docker};
use super::error::{Error, Result};
use super::names::ClusterName;
use super::state::State;
use super::wires::{Ns, find_emulators, find_ifbs, ns_links, remove_ifbs, stop_emulators};

/// What `down` removed.
#[derive(Debug, Default)]
pub struct DownReport {
    pub containers: usize,
    pub networks: usize,
    pub ifbs: usize,
    pub files: usize,
    /// Medium emulator processes stopped.
    pub media: usize,
}

/// Removes everything `up` made for the cluster: containers and networks (found by label),
/// ifb devices (from the state file, and by name prefix in case it is gone) and files. Safe to
/// run again, and on a cluster that is only half made or whose files were deleted.
pub fn down(name: &ClusterName, state_dir: &Path) -> Result<DownReport> {
    let docker = Docker::connect()?;
    let dir = ClusterDir::new(state_dir, name);
    let state = State::load(&dir.state_file()).unwrap_or_else(|e| {
        tracing::warn!("{e}");
        None
    });
    let mut report = DownReport {
        // The emulator first: it holds the ports the containers' removal takes away.
        media: stop_emulators(&find_emulators(
            &dir,
            state.as_ref().and_then(|s| s.medium_pid),
        )),
        ..DownReport::default()
    };
    let containers = docker.cluster_containers(name)?;
    report.containers = containers.len();
    let host_ports = host_side_of(&docker.inspect_containers(&containers)?);
    docker.remove_containers(&containers)?;
    wait_gone(&host_ports, Duration::from_secs(60));
    let networks = docker.cluster_networks(name)?;
    report.networks = networks.len();
    // The engine can still hold a removed container's endpoint for a moment and refuses to
    // remove its network ("has active endpoints"): retry what is left for a few seconds.
    let mut left = networks;
    let mut tries = 0;
    let networks_removed = loop {
        match docker.remove_networks(&left) {
            Ok(()) => break Ok(()),
            Err(e) if tries >= 20 => break Err(e),
            // Still refused after ten seconds: the endpoints left belong to no container of
            // ours any more (they are all removed), so detach them by force and try again.
            Err(_) if tries == 10 => {
                tries += 1;
                left = docker.cluster_networks(name)?;
                for network in &left {
                    for endpoint in docker.network_endpoints(network)? {
                        tracing::warn!(network, endpoint, "detaching a stale endpoint");
                        if let Err(e) = docker.force_disconnect(network, &endpoint) {
                            tracing::warn!("{e}");
                        }
                    }
                }
            }
            Err(_) => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(500));
                left = docker.cluster_networks(name)?;
            }
        }
    };
    let mut ifbs: BTreeSet<String> = state.iter().flat_map(|s| s.ifbs.iter().cloned()).collect();
    ifbs.extend(find_ifbs(&name.ifb_prefix())?);
    let ifbs: Vec<String> = ifbs.into_iter().collect();
    report.ifbs = remove_ifbs(&ifbs)?;
    // A network the engine will not let go of even after its stale endpoints were detached is
    // the only thing left; the cluster's files stay, so that `cluster down` can retry it.
    networks_removed?;
    // Files: the known ones only, then the directories if that left them empty.
    let mut nodes: BTreeSet<String> = state
        .iter()
        .flat_map(|s| s.wiring.nodes.iter().map(|n| n.name.clone()))
        .collect();
    if let Ok(rd) = std::fs::read_dir(dir.nodes_dir()) {
        nodes.extend(
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned()),
        );
    }
    let nodes: Vec<String> = nodes.into_iter().collect();
    for f in dir.files(&nodes) {
        match std::fs::remove_file(&f) {
            Ok(()) => report.files += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing a cluster file", f, e)),
        }
    }
    for n in &nodes {
        let _ = std::fs::remove_dir(dir.node_dir(n));
    }
    let _ = std::fs::remove_dir(dir.nodes_dir());
    let _ = std::fs::remove_dir(dir.runtime());
    let _ = std::fs::remove_dir(dir.root());
    if let Some(parent) = dir.root().parent() {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(report)
}

/// Host ifindexes of the containers' veth peers (their host sides).
fn host_side_of(containers: &[ContainerInfo]) -> BTreeSet<u32> {
    containers
        .iter()
        .filter(|c| c.state.running && c.state.pid != 0)
        .filter_map(|c| ns_links(Ns::Pid(c.state.pid)).ok())
        .flatten()
        .filter_map(|l| l.link_index)
        .collect()
}

/// docker removes a container's veths in the background after `docker rm` returns; `down`
/// is only done when they are gone.
fn wait_gone(ifindexes: &BTreeSet<u32>, limit: Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        let Ok(links) = ns_links(Ns::Host) else {
            return;
        };
        let left = links
            .iter()
            .filter(|l| ifindexes.contains(&l.ifindex))
            .count();
        if left == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    tracing::warn!("some of the cluster's host-side veths still exist after {limit:?}");
}
