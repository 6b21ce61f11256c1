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

use super::mgmt::{self, remove_links};
use super::namespaces;
use super::sshd;

/// How long the processes in the namespaces have to die after SIGKILL.
const KILL_LIMIT: Duration = Duration::from_secs(10);
/// How long the kernel has to remove the host's ends of the veths of deleted namespaces.
const LINKS_LIMIT: Duration = Duration::from_secs(30);

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
    let t = std::time::Instant::now();
    let mut report = DownReport {
        // The emulator first: it holds the wires' host ends.
        media: stop_emulators(&find_emulators(dir, state.and_then(|s| s.medium_pid))),
        ..DownReport::default()
    };
    tracing::debug!("emulator stopped after {:?}", t.elapsed());
    report.processes = record.map(|r| sshd::stop(&r.sshd)).unwrap_or(0);
    let template: Vec<_> = record.iter().filter_map(|r| r.template.clone()).collect();
    report.processes += sshd::stop(&template);
    tracing::debug!("emulator and sshds stopped after {:?}", t.elapsed());
    let mut spaces: BTreeSet<String> = record.iter().flat_map(|r| r.namespaces()).collect();
    spaces.extend(
        namespaces::list()
            .into_iter()
            .filter(|n| name.owns_namespace(n)),
    );
    let spaces: Vec<String> = spaces.into_iter().collect();
    report.processes += namespaces::kill_all_in(&spaces, KILL_LIMIT);
    tracing::debug!("namespaces emptied after {:?}", t.elapsed());

    // Deleted namespaces take their ends of the veths with them, all in one batch of the
    // kernel's; deleting the host's ends one by one first would cost a grace period each
    // (13 s for 769 links).
    let mut links: BTreeSet<String> = record.iter().flat_map(|r| r.mgmt_links()).collect();
    links.extend(state.iter().flat_map(|s| s.wires.iter().cloned()));
    links.extend(veth::find(|l| name.owns_mgmt_link(l) || name.owns_wire(l))?);
    let links: Vec<String> = links.into_iter().collect();
    // The bridges (whatever their number) are no veths: they stay until removed.
    let veths: Vec<String> = links
        .iter()
        .filter(|l| {
            !l.strip_prefix(&name.ifb_prefix())
                .is_some_and(|rest| rest.starts_with('b'))
        })
        .cloned()
        .collect();
    let had = veth::find(|l| veths.iter().any(|v| v == l))?.len();
    report.namespaces = namespaces::delete(&spaces)?;
    tracing::debug!("namespaces deleted after {:?}", t.elapsed());
    let left = mgmt::wait_gone(&veths, LINKS_LIMIT)?;
    // What is left (the bridge, and any end the kernel has not removed in time) goes here.
    report.wires = had - left + remove_links(&links)?;
    tracing::debug!("host links removed after {:?}", t.elapsed());
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
