//! Running a command on a node over SSH exactly as the inventory says, with the host key
//! checked against the cluster's known_hosts (never accepted blindly).

use std::time::{Duration, Instant};

use crate::remote::Host;
use crate::vcluster::cmd::Cmd;
use crate::vcluster::error::Result;

/// An `ssh` invocation of `remote` (one shell command line) on `host`. The user's own ssh
/// config is not read (`-F /dev/null`): the inventory says everything (a cluster's inventory
/// gives every node its user, port, key and known_hosts).
pub fn command(host: &Host, what: &str, remote: &str) -> Cmd {
    let mut cmd = Cmd::new("ssh", what).args([
        "-F",
        "/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
    ]);
    if let Some(known_hosts) = &host.known_hosts {
        cmd = cmd
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known_hosts.display()));
    }
    cmd = cmd.args([
        "-o",
        "GlobalKnownHostsFile=/dev/null",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "ConnectTimeout=5",
        "-o",
        "LogLevel=ERROR",
        // The post-quantum hybrid key exchange OpenSSH prefers costs 70 ms of client CPU per
        // login here, 2.5 times curve25519's: probing 256 nodes took 16 s of both cores. The
        // management network never leaves this machine.
        "-o",
        "KexAlgorithms=curve25519-sha256",
    ]);
    if let Some(identity) = &host.identity {
        cmd = cmd.arg("-i").arg(identity.display().to_string());
    }
    if let Some(port) = host.port {
        cmd = cmd.args(["-p", &port.to_string()]);
    }
    if let Some(user) = &host.user {
        cmd = cmd.args(["-l", user]);
    }
    // `--` before the destination: whatever the address is, ssh reads it as the host, and
    // everything after it as the remote command.
    cmd.args(["--", host.address.as_str(), remote]).hint(
        "is the cluster up (`orchestrate cluster status`)? ssh -v with the same options tells more",
    )
}

/// Waits until `true` runs on the node over SSH (sshd starts with the container, a moment
/// after it).
pub fn wait_ready(host: &Host, limit: Duration) -> Result<()> {
    let start = Instant::now();
    loop {
        let attempt = command(
            host,
            &format!("reaching node {} over SSH", host.node),
            "true",
        )
        .timeout(Duration::from_secs(15))
        .run();
        match attempt {
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() > limit => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_of_the_inventory_reaches_ssh() {
        let host = Host {
            node: "n01".parse().unwrap(),
            address: "172.20.0.2".into(),
            port: Some(22),
            user: Some("root".into()),
            identity: Some("/c/id_ed25519".into()),
            known_hosts: Some("/c/known_hosts".into()),
            jump: None,
            sudo: false,
        };
        assert_eq!(
            command(&host, "testing", "true").display(),
            "ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes \
             -o UserKnownHostsFile=/c/known_hosts -o GlobalKnownHostsFile=/dev/null \
             -o IdentitiesOnly=yes -o ConnectTimeout=5 -o LogLevel=ERROR \
             -o KexAlgorithms=curve25519-sha256 -i /c/id_ed25519 \
             -p 22 -l root -- 172.20.0.2 true"
        );
    }
}
