//! `down`: removes everything `up` made for a cluster, and nothing else.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use super::cluster_dir::{ClusterDir, RUNTIME_ROOT, is_netns_cluster};
use super::docker::{ContainerInfo, Docker};
use super::error::{Error, Result};
use super::names::ClusterName;
use super::state::State;
use super::wires::veth;
use super::wires::{Ns, find_emulators, find_ifbs, ns_links, remove_ifbs, stop_emulators};

/// What `down` removed.
#[derive(Debug, Default)]
pub struct DownReport {
    pub containers: usize,
    pub networks: usize,
    pub ifbs: usize,
    /// The tool's wires an `up` that died left on the host (each goes with its container).
    pub wires: usize,
    pub files: usize,
    /// Medium emulator processes stopped.
    pub media: usize,
    /// A netns cluster's namespaces deleted.
    pub namespaces: usize,
    /// Processes stopped in a netns cluster's namespaces (its sshds and their sessions).
    pub processes: usize,
}

/// Removes everything a docker `up` made for the cluster: containers and networks (found by label),
/// wire ends and ifb devices (from the state file, and by name prefix in case it is gone) and
/// files. Safe to run again, and on a cluster that is only half made or whose files were
/// deleted.
pub fn down(name: &ClusterName, state_dir: &Path) -> Result<DownReport> {
    let dir = ClusterDir::new(state_dir, name);
    let state = State::load(&dir.state_file()).unwrap_or_else(|e| {
        tracing::warn!("{e}");
        None
    });
    let docker = Docker::connect()?;
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
    let networks_removed = remove_networks(&docker, name, networks);
    let mut wires: BTreeSet<String> = state.iter().flat_map(|s| s.wires.iter().cloned()).collect();
    wires.extend(veth::find(|n| name.owns_wire(n))?);
    report.wires = veth::remove_left(&wires.into_iter().collect::<Vec<_>>())?;
    let mut ifbs: BTreeSet<String> = state.iter().flat_map(|s| s.ifbs.iter().cloned()).collect();
    ifbs.extend(find_ifbs(&name.ifb_prefix())?);
    let ifbs: Vec<String> = ifbs.into_iter().collect();
    report.ifbs = remove_ifbs(&ifbs)?;
    // A network the engine will not let go of even after its stale endpoints were detached is
    // the only thing left; the cluster's files stay, so that `cluster down` can retry it.
    networks_removed?;
    report.files = remove_files(&dir, state.as_ref())?;
    Ok(report)
}

/// Removes the cluster's files: the known ones only, then the directories if that left them
/// empty. Returns how many files.
pub(super) fn remove_files(dir: &ClusterDir, state: Option<&State>) -> Result<usize> {
    let mut removed = 0;
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
            Ok(()) => removed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing a cluster file", f, e)),
        }
    }
    for n in &nodes {
        let _ = std::fs::remove_dir(dir.node_dir(n));
    }
    let _ = std::fs::remove_dir(dir.nodes_dir());
    let _ = std::fs::remove_dir(dir.worker_bin_dir());
    let _ = std::fs::remove_dir(dir.runtime());
    let _ = std::fs::remove_dir(dir.root());
    if let Some(parent) = dir.root().parent() {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(removed)
}

/// Every cluster the tool has anything of on this host, found by what carries its names: the
/// cluster label on containers and networks, a directory under `<state dir>/clusters/`, and
/// one under `/run/orchestrate/`. For a person who lost the state directory, or forgot which
/// clusters are up.
pub fn known_clusters(state_dir: &Path) -> Result<Vec<ClusterName>> {
    let mut names: BTreeSet<String> = match Docker::connect() {
        Ok(docker) => docker.labelled_clusters()?.into_iter().collect(),
        // A host without docker can still have netns clusters, found by their directories.
        Err(e) if has_netns_clusters() => {
            tracing::warn!("{e}");
            BTreeSet::new()
        }
        Err(e) => return Err(e),
    };
    for root in [
        ClusterDir::clusters_root(state_dir),
        Path::new(RUNTIME_ROOT).to_owned(),
    ] {
        if let Ok(rd) = std::fs::read_dir(&root) {
            names.extend(
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.file_name().to_string_lossy().into_owned()),
            );
        }
    }
    // A directory whose name is no cluster name was not made by the tool: left alone.
    Ok(names
        .iter()
        .filter_map(|n| ClusterName::parse(n).ok())
        .collect())
}

/// Whether this host has anything of a netns cluster: a marked runtime directory, or a
/// namespace named like a cluster's.
pub(super) fn has_netns_clusters() -> bool {
    let marked = std::fs::read_dir(RUNTIME_ROOT).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| is_netns_cluster(&e.file_name().to_string_lossy()))
    });
    marked
        || std::fs::read_dir("/run/netns").is_ok_and(|rd| {
            rd.flatten()
                .any(|e| ClusterName::is_cluster_namespace(&e.file_name().to_string_lossy()))
        })
}

/// Removes the cluster's networks. The engine can still hold a removed container's endpoint
/// for a moment and refuses a network with one ("has active endpoints"), so what is left is
/// retried for a few seconds; then the endpoints that belong to no container (the engine lost
/// track of them) are detached by force, its own way of clearing them. An endpoint of a
/// container that still exists is not ours to cut: the network is named with that container
/// and the command that frees it, and the caller keeps the cluster's state for the next
/// `down`.
fn remove_networks(docker: &Docker, name: &ClusterName, networks: Vec<String>) -> Result<()> {
    const TRIES: u32 = 20;
    const FORCE_AT: u32 = 10;
    let mut left = networks;
    let mut held: Vec<(String, String)> = Vec::new();
    for attempt in 1..=TRIES {
        let Err(refused) = docker.remove_networks(&left) else {
            return Ok(());
        };
        left = docker.cluster_networks(name)?;
        if left.is_empty() {
            return Ok(());
        }
        if attempt == TRIES {
            return Err(if held.is_empty() {
                refused_networks(name, &left, refused)
            } else {
                held_networks(name, &held)
            });
        }
        if attempt == FORCE_AT {
            held.clear();
            for network in &left {
                for endpoint in docker.network_endpoints(network)? {
                    if docker.container_exists(&endpoint) {
                        held.push((docker.network_name(network)?, endpoint));
                        continue;
                    }
                    tracing::warn!(network, endpoint, "detaching a stale endpoint");
                    if let Err(e) = docker.force_disconnect(network, &endpoint) {
                        tracing::warn!("{e}");
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    unreachable!("the last attempt returns")
}

/// Networks still attached to containers that are not the cluster's (its own are removed by
/// then), each with the command that frees it.
fn held_networks(name: &ClusterName, held: &[(String, String)]) -> Error {
    let listed: Vec<String> = held
        .iter()
        .map(|(n, c)| format!("network {n} is still attached to container {c}"))
        .collect();
    let commands: Vec<String> = held
        .iter()
        .map(|(n, c)| format!("`docker network disconnect {n} {c}`"))
        .collect();
    Error::Host {
        problem: format!(
            "cluster {name} is down but for its networks: {} (a container that is not the \
             cluster's); its state is kept",
            listed.join("; ")
        ),
        what_to_do: format!(
            "free them ({}), then run `orchestrate cluster down --name {name}` again",
            commands.join(", ")
        ),
    }
}

/// Networks the engine refuses to remove although nothing it knows of is attached: the
/// engine's own bookkeeping holds them until it restarts.
fn refused_networks(name: &ClusterName, left: &[String], refused: Error) -> Error {
    Error::Host {
        problem: format!(
            "cluster {name} is down but for {} network(s) the docker engine refuses to remove \
             though no container is attached ({refused}); its state is kept",
            left.len()
        ),
        what_to_do: format!(
            "restart the docker engine (`systemctl restart docker`), then run `orchestrate \
             cluster down --name {name}` again"
        ),
    }
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
