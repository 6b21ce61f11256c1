//! `status` of a netns cluster: its members from the state file, each node running while its
//! recorded sshd does (and a VM node's guest), each switch while its namespace exists.

use crate::vcluster::cluster_dir::ClusterDir;
use crate::vcluster::error::Result;
use crate::vcluster::names::ClusterName;
use crate::vcluster::state::State;
use crate::vcluster::status::{MemberStatus, Status, medium_status};
use crate::vcluster::wires::find_ifbs;

use super::namespaces;
use super::record::Role;
use super::sshd;

/// A netns cluster's status, from its state file and what runs.
pub fn status(name: &ClusterName, dir: &ClusterDir, state: &State) -> Result<Status> {
    let present = namespaces::list();
    let members = state
        .netns
        .iter()
        .flat_map(|r| {
            r.members.iter().map(|m| {
                let running = match m.role {
                    // A VM node runs while its guest's QEMU does too.
                    Role::Node => {
                        r.sshd
                            .iter()
                            .find(|s| s.node == m.name)
                            .is_some_and(sshd::is_that)
                            && state.vm.as_ref().is_none_or(|vm| {
                                vm.guests.iter().any(|g| {
                                    g.node == m.name && crate::vcluster::process::alive(g.pid)
                                })
                            })
                    }
                    Role::Switch => present.contains(&m.namespace),
                };
                MemberStatus {
                    name: m.name.clone(),
                    role: match m.role {
                        Role::Node => "node".into(),
                        Role::Switch => "switch".into(),
                    },
                    container: m.namespace.clone(),
                    state: if running { "running" } else { "stopped" }.into(),
                    address: m.address.map(|a| a.to_string()),
                }
            })
        })
        .collect();
    Ok(Status {
        cluster: name.to_string(),
        kind: state.kind,
        directory: dir.root().to_owned(),
        topology: Some(state.wiring.topology.clone()),
        wiring: Some(state.wiring.clone()),
        medium: state.medium_pid.map(|pid| medium_status(dir, pid)),
        source: Some(state.source.clone()),
        image: None,
        members,
        networks: 0,
        ifbs: find_ifbs(&name.ifb_prefix())?,
    })
}
