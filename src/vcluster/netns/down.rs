//! `down` for a netns cluster: the medium emulator, the recorded sshds (each only while it
//! still is that process), whatever else runs in the cluster's namespaces, the host's ends of
//! the management veths and wires and the bridge, the namespaces, and the files. Everything
//! is found from the state file and, in case it is gone, by the cluster's names.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::vcluster::cluster_dir::ClusterDir;
use crate::vcluster::down::{DownReport, remove_files};
use crate::vcluster::error::Result;
use crate::vcluster::names::ClusterName;
use crate::vcluster::state::State;
use crate::vcluster::wires::{find_emulators, stop_emulators, veth};

use super::mgmt::remove_links;
use super::namespaces;
use super::sshd;

/// How long the processes in the namespaces have to die after SIGKILL.
const KILL_LIMIT: Duration = Duration::from_secs(10);

/// Whether anything of a netns cluster named `name` is on this host: one of its namespaces,
/// its bridge or a management veth.
pub fn has_traces(name: &ClusterName) -> bool {
    namespaces::list().iter().any(|n| name.owns_namespace(n))
        || veth::find(|l| name.owns_mgmt_link(l)).is_ok_and(|l| !l.is_empty())
}

/// Removes all of the netns cluster `name`; idempotent, and complete after an `up` that died
/// half-way or a state file that was lost.
pub fn down(name: &ClusterName, dir: &ClusterDir, state: Option<&State>) -> Result<DownReport> {
    let record = state.and_then(|s| s.netns.as_ref());
    let mut report = DownReport {
        // The emulator first: it holds the wires' host ends.
        media: stop_emulators(&find_emulators(dir, state.and_then(|s| s.medium_pid))),
        ..DownReport::default()
    };
    report.processes = record.map(|r| sshd::stop(&r.sshd)).unwrap_or(0);
    let mut spaces: BTreeSet<String> = record.iter().flat_map(|r| r.namespaces()).collect();
    spaces.extend(
        namespaces::list()
            .into_iter()
            .filter(|n| name.owns_namespace(n)),
    );
    let spaces: Vec<String> = spaces.into_iter().collect();
    report.processes += namespaces::kill_all_in(&spaces, KILL_LIMIT);

    let mut links: BTreeSet<String> = record.iter().flat_map(|r| r.mgmt_links()).collect();
    links.extend(state.iter().flat_map(|s| s.wires.iter().cloned()));
    links.extend(veth::find(|l| name.owns_mgmt_link(l) || name.owns_wire(l))?);
    let links: Vec<String> = links.into_iter().collect();
    let removed = remove_links(&links)?;
    // The wires a docker `up` would leave are counted as such; the management links here.
    report.wires = removed;
    report.namespaces = namespaces::delete(&spaces)?;
    report.files = remove_files(dir, state)?;
    Ok(report)
}

/// What `down --all` removes after every cluster it knows of: namespaces and management links
/// named like a netns cluster's whose cluster left no other trace (and whatever runs in those
/// namespaces). Returns how many things it removed.
pub fn down_orphans() -> Result<usize> {
    let spaces: Vec<String> = namespaces::list()
        .into_iter()
        .filter(|n| ClusterName::is_cluster_namespace(n))
        .collect();
    namespaces::kill_all_in(&spaces, KILL_LIMIT);
    let links = remove_links(&veth::find(ClusterName::is_cluster_mgmt_link)?)?;
    Ok(links + namespaces::delete(&spaces)?)
}
