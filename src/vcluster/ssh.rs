//! Running a command on a node over SSH exactly as the inventory says, with the host key
//! checked against the cluster's known_hosts (never accepted blindly).

use std::time::{Duration, Instant};

use super::cmd::Cmd;
use super::error::Result;
use super::inventory::Host;

/// An `ssh` invocation of `remote` (one shell command line) on `host`. The user's own ssh
/// config is not read (`-F /dev/null`): the inventory says everything.
pub fn command(host: &Host, what: &str, remote: &str) -> Cmd {
    Cmd::new("ssh", what)
        .args(["-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", host.known_hosts.display()))
        .args([
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "ConnectTimeout=5",
            "-o",
            "LogLevel=ERROR",
            "-i",
        ])
        .arg(host.identity_file.display().to_string())
        .args(["-p", &host.port.to_string(), "-l", &host.user, &host.host, "--", remote])
        .hint("is the cluster up (`orchestrate cluster status`)? ssh -v with the same options tells more")
}

/// Waits until `true` runs on the node over SSH (sshd starts with the container, a moment
/// after it).
pub fn wait_ready(host: &Host, name: &str, limit: Duration) -> Result<()> {
    let start = Instant::now();
    loop {
        let attempt = command(host, &format!("reaching node {name} over SSH"), "true")
            .timeout(Duration::from_secs(15))
            .run();
        match attempt {
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() > limit => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}
