//! `status`: a cluster's containers, addresses and emulation devices, and the list of clusters.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::cluster_dir::{ClusterDir, RUNTIME_ROOT, is_netns_cluster};
use super::cmd::Cmd;
use super::docker::{Docker, MGMT_NETWORK_KEY};
use super::error::Result;
use super::names::{ClusterName, LABEL_CLUSTER, LABEL_NAME, LABEL_ROLE};
use super::state::{Kind, State};
use super::wires::{Wiring, find_ifbs};

/// One container (or, in a netns cluster, namespace) of a cluster, as `status` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberStatus {
    pub name: String,
    pub role: String,
    pub container: String,
    pub state: String,
    pub address: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    pub cluster: String,
    /// Containers or network namespaces.
    pub kind: Kind,
    pub directory: PathBuf,
    pub topology: Option<String>,
    pub source: Option<String>,
    pub image: Option<String>,
    pub members: Vec<MemberStatus>,
    pub networks: usize,
    pub ifbs: Vec<String>,
    /// The wires the cluster was built with, if its state file is readable.
    pub wiring: Option<Wiring>,
    /// The medium emulator, when the cluster has one.
    pub medium: Option<MediumStatus>,
}

/// The medium emulator as `status` finds it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MediumStatus {
    pub pid: u32,
    /// It answered on its control socket.
    pub answering: bool,
    pub realtime_priority: bool,
    /// Segments it carries, and the worst p99 lateness among them since it started (µs).
    pub segments: usize,
    pub worst_p99_lateness_us: f64,
}

pub(super) fn medium_status(dir: &ClusterDir, pid: u32) -> MediumStatus {
    use orchestrate_medium::realtime::control::{Request, query};
    match query(&dir.medium_socket(), Request::Total) {
        Ok(Some(s)) => MediumStatus {
            pid,
            answering: true,
            realtime_priority: s.realtime_priority,
            segments: s.segments.len(),
            worst_p99_lateness_us: s
                .segments
                .iter()
                .map(|g| g.lateness.p99_us)
                .fold(0.0, f64::max),
        },
        _ => MediumStatus {
            pid,
            answering: false,
            realtime_priority: false,
            segments: 0,
            worst_p99_lateness_us: 0.0,
        },
    }
}

/// A docker cluster's status (`by_kind::status` hands a netns cluster to `netns::status`).
pub fn status(name: &ClusterName, state_dir: &Path) -> Result<Status> {
    let dir = ClusterDir::new(state_dir, name);
    let state = State::load(&dir.state_file())?;
    let docker = Docker::connect()?;
    let containers = docker.inspect_containers(&docker.cluster_containers(name)?)?;
    let mgmt = name.network_name(MGMT_NETWORK_KEY);
    let mut members: Vec<MemberStatus> = containers
        .iter()
        .map(|ci| MemberStatus {
            name: ci.label(LABEL_NAME).unwrap_or("?").to_owned(),
            role: ci.label(LABEL_ROLE).unwrap_or("?").to_owned(),
            container: ci.name.trim_start_matches('/').to_owned(),
            state: ci.state.status.clone(),
            address: ci
                .network_settings
                .networks
                .get(&mgmt)
                .map(|e| e.ip_address.clone()),
        })
        .collect();
    members.sort_by(|a, b| (&a.role, &a.name).cmp(&(&b.role, &b.name)));
    Ok(Status {
        cluster: name.to_string(),
        kind: Kind::Docker,
        directory: dir.root().to_owned(),
        topology: state.as_ref().map(|s| s.wiring.topology.clone()),
        wiring: state.as_ref().map(|s| s.wiring.clone()),
        medium: state
            .as_ref()
            .and_then(|s| s.medium_pid)
            .map(|pid| medium_status(&dir, pid)),
        source: state.as_ref().map(|s| s.source.clone()),
        image: state.as_ref().map(|s| s.image.clone()),
        members,
        networks: docker.cluster_networks(name)?.len(),
        ifbs: find_ifbs(&name.ifb_prefix())?,
    })
}

/// The names of the clusters that exist: containers with the cluster label, and netns
/// clusters' marked runtime directories. A host without docker may have only the latter.
pub fn list_clusters() -> Result<Vec<String>> {
    let netns: BTreeSet<String> = std::fs::read_dir(RUNTIME_ROOT)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| is_netns_cluster(n))
                .collect()
        })
        .unwrap_or_default();
    if let Err(e) = Docker::connect() {
        if netns.is_empty() {
            return Err(e);
        }
        return Ok(netns.into_iter().collect());
    }
    let out = Cmd::new("docker", "listing clusters")
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label={LABEL_CLUSTER}"),
            "--format",
        ])
        .arg(format!("{{{{.Label \"{LABEL_CLUSTER}\"}}}}"))
        .run()?;
    let mut set: BTreeSet<String> = out.split_whitespace().map(str::to_owned).collect();
    set.extend(netns);
    Ok(set.into_iter().collect())
}
