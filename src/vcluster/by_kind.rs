//! The commands that work on either kind of cluster (docker containers or network
//! namespaces): each looks at what the cluster is — the kind asked for, or the one its state
//! file records, or for a cluster whose state is lost what carries its names — and hands it
//! to that kind's own code. Neither kind's code calls back here.

use std::path::Path;

use super::cluster_dir::{ClusterDir, is_netns_cluster};
use super::down::{self as docker_down, DownReport, known_clusters};
use super::error::Result;
use super::names::ClusterName;
use super::netns;
use super::state::{Kind, State};
use super::status::{self as docker_status, Status};
use super::up::{self as docker_up, UpOptions, UpReport};
use super::wires::{Wiring, find_ifbs, remove_ifbs, veth};

/// Brings a cluster of the kind `opts` asks for up.
pub fn up(wiring: &Wiring, opts: &UpOptions) -> Result<UpReport> {
    match opts.kind {
        Kind::Docker => docker_up::up(wiring, opts),
        Kind::Netns | Kind::Vm => netns::up::up(wiring, opts),
    }
}

/// Whether the cluster is a netns cluster: its state says so, or without a state file, its
/// runtime directory is marked so or something named like its namespaces or bridge exists.
fn is_netns(name: &ClusterName, state: Option<&State>) -> bool {
    match state {
        Some(s) => s.kind.is_netns(),
        None => is_netns_cluster(name.as_str()) || netns::down::has_traces(name),
    }
}

/// Removes everything `up` made for the cluster, whatever its kind; safe to run again, and
/// on a cluster only half made or whose files were deleted.
pub fn down(name: &ClusterName, state_dir: &Path) -> Result<DownReport> {
    let dir = ClusterDir::new(state_dir, name);
    let state = State::load(&dir.state_file()).unwrap_or_else(|e| {
        tracing::warn!("{e}");
        None
    });
    if is_netns(name, state.as_ref()) {
        // A netns cluster needs no docker engine.
        netns::down::down(name, &dir, state.as_ref())
    } else {
        docker_down::down(name, state_dir)
    }
}

/// A cluster's members, addresses and emulation, whatever its kind.
pub fn status(name: &ClusterName, state_dir: &Path) -> Result<Status> {
    let dir = ClusterDir::new(state_dir, name);
    match State::load(&dir.state_file())? {
        Some(state) if state.kind.is_netns() => netns::status::status(name, &dir, &state),
        _ => docker_status::status(name, state_dir),
    }
}

/// What `down --all` did for one cluster it found.
#[derive(Debug)]
pub struct DownAll {
    pub cluster: ClusterName,
    pub result: Result<DownReport>,
}

/// Takes down every cluster [`known_clusters`] finds, each on its own: one that fails is
/// reported and the others still go. Then removes the ifb devices, wire ends, network
/// namespaces and management links named like a cluster's whose cluster left no other trace
/// (and whatever runs in those namespaces); returns how many there were.
pub fn down_all(state_dir: &Path) -> Result<(Vec<DownAll>, usize)> {
    let clusters = known_clusters(state_dir)?;
    let done: Vec<DownAll> = clusters
        .into_iter()
        .map(|cluster| {
            let result = down(&cluster, state_dir);
            DownAll { cluster, result }
        })
        .collect();
    let orphans: Vec<String> = find_ifbs(ClusterName::IFB_MARK)?
        .into_iter()
        .filter(|n| ClusterName::is_cluster_ifb(n))
        .collect();
    let removed = remove_ifbs(&orphans)?;
    let wires = veth::remove_left(&veth::find(ClusterName::is_cluster_wire)?)?;
    let netns = netns::down::down_orphans()?;
    Ok((done, removed + wires + netns))
}
