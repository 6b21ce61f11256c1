//! `cluster ssh`: a shell, or one command, on a node of a running cluster, through the
//! cluster's own `ssh_config` (its key, the node's pinned host key), as `up` prints it.

use std::path::Path;
use std::process::Command;

use super::cluster_dir::ClusterDir;
use super::error::{Error, Result};
use super::names::ClusterName;
use super::state::State;

/// The `ssh` command line that opens a shell on `node` (no `command`) or runs `command` there:
/// `ssh -F <cluster>/ssh_config -- node [command...]`. ssh gives a shell a terminal when its
/// own input is one, and passes the remote command's exit status back.
pub fn ssh_to_node(
    name: &ClusterName,
    state_dir: &Path,
    node: &str,
    command: &[String],
) -> Result<Command> {
    let dir = ClusterDir::new(state_dir, name);
    let not_up = |problem: String| Error::Host {
        problem,
        what_to_do: format!(
            "bring it up with `orchestrate cluster up` (see `orchestrate cluster status --name \
             {name} --state-dir {}`)",
            state_dir.display()
        ),
    };
    let state = State::load(&dir.state_file())?.ok_or_else(|| {
        not_up(format!(
            "no cluster {name} under {} (no {})",
            state_dir.display(),
            dir.state_file().display()
        ))
    })?;
    if !state.wiring.nodes.iter().any(|n| n.name == node) {
        let nodes: Vec<&str> = state.wiring.nodes.iter().map(|n| n.name.as_str()).collect();
        return Err(Error::Host {
            problem: format!("cluster {name} has no node {node:?}"),
            what_to_do: format!("choose one of {}", nodes.join(", ")),
        });
    }
    let config = dir.ssh_config();
    if !config.exists() {
        return Err(not_up(format!(
            "cluster {name} has no {} yet: its bring-up did not reach SSH",
            config.display()
        )));
    }
    let mut ssh = Command::new("ssh");
    ssh.arg("-F").arg(config).arg("--").arg(node).args(command);
    Ok(ssh)
}
