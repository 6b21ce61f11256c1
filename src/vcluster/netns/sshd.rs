//! Each node's sshd: started in the node's network namespace with a UTS namespace (its
//! hostname) and a mount namespace of its own, where /run, /root, /tmp and /var/tmp are fresh tmpfs
//! and `orchestrate-worker` is on the PATH as in the docker kind's image (made by the child
//! before it becomes sshd: [`super::enter`]). Every session the controller opens is a child
//! of it, so it sees the node as the node's own programs would.

use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::vcluster::error::{Error, Result};
use crate::vcluster::process::{alive, reap};

use super::enter::{Prepared, SSHD_CONFIG, SshdFiles, Start};
use super::record::Sshd;

/// The sshd every node runs: this host's.
pub const SSHD: &str = "/usr/sbin/sshd";

/// sshd's configuration, the same for every node (copied into its private /run): only the
/// cluster's key logs in, as root, as into the docker kind's nodes.
pub fn config() -> String {
    "# sshd configuration of a netns cluster's nodes, written by `orchestrate cluster up`.\n\
     # Each node's sshd reads a copy in its private /run.\n\
     HostKey /run/node/ssh_host_ed25519_key\n\
     AuthorizedKeysFile /run/node/authorized_keys\n\
     PidFile none\n\
     PermitRootLogin prohibit-password\n\
     PubkeyAuthentication yes\n\
     PasswordAuthentication no\n\
     KbdInteractiveAuthentication no\n\
     StrictModes no\n\
     UsePAM no\n\
     UseDNS no\n\
     X11Forwarding no\n\
     PrintMotd no\n\
     PrintLastLog no\n\
     LogLevel ERROR\n\
     MaxSessions 32\n\
     MaxStartups 64:30:128\n\
     ClientAliveInterval 30\n\
     AcceptEnv LANG LC_*\n\
     Subsystem sftp internal-sftp\n"
        .to_owned()
}

/// Starts the node's sshd (its output appended to `log`) in a process group of its own, so
/// that a Ctrl-C in the terminal does not take a cluster that stays up with it: a forked
/// child enters the node (see [`enter`](super::enter)) and becomes `sshd`. Returns its pid
/// and start time, for the state file.
pub fn start(
    s: &Start,
    files: &SshdFiles,
    template: &Template,
    log: &std::fs::File,
) -> Result<Sshd> {
    let clone_log = || {
        log.try_clone()
            .map_err(|e| Error::io("opening the sshd log", "sshd.log", e))
    };
    let what = || format!("starting node {}'s sshd", s.node);
    let prepared = Prepared::new(s, template.0.pid, files).map_err(|e| Error::Spawn {
        what: what(),
        program: SSHD.into(),
        source: e,
        hint: Some(format!(
            "its namespace /run/netns/{} and the template's (pid {}) must exist",
            s.namespace, template.0.pid
        )),
    })?;
    let mut cmd = Command::new(SSHD);
    cmd.args(["-D", "-e", "-f", SSHD_CONFIG])
        .env_clear()
        .env("PATH", NODE_PATH)
        .stdin(Stdio::null())
        .stdout(clone_log()?)
        .stderr(clone_log()?)
        .process_group(0);
    // SAFETY: `enter` makes system calls only and allocates nothing (see its module).
    unsafe { cmd.pre_exec(move || prepared.enter()) };
    let child = cmd.spawn().map_err(|e| Error::Spawn {
        what: what(),
        program: SSHD.into(),
        source: e,
        hint: Some("the cluster's sshd.log says which step failed".into()),
    })?;
    let pid = child.id();
    // The child becomes sshd. It is reaped when `down` stops it (or by init once this
    // program exits).
    drop(child);
    Ok(Sshd {
        node: s.node.to_owned(),
        pid,
        started: start_time(pid).unwrap_or(0),
    })
}

/// The PATH of a node's sshd, whose environment is otherwise empty: nothing of the caller's
/// (a `RUST_LOG`, a proxy) reaches the nodes, and sshd makes its sessions' own.
const NODE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The mount namespace every node's is copied from: the host's, without the namespaces'
/// entries under /run/netns. A copy of the host's own would hold every node's entry (a
/// thousand nodes, a million mounts, and every copy serialised on the kernel's mount lock:
/// half of 1024 nodes' sshds were still waiting for theirs after a minute). A process
/// (`sh` waiting on a `sleep`, bounded in time) holds it while the nodes start; `up` stops
/// it when they have.
pub struct Template(pub Sshd);

/// How long the template may outlive an `up` that dies without stopping it.
const TEMPLATE_LIFE: &str = "600";

impl Template {
    /// Starts the template and waits until its mount namespace is ready.
    pub fn start() -> Result<Template> {
        let script = "if mountpoint -q /run/netns; then umount -l /run/netns; fi; \
                      echo ready; exec sleep \"$1\"";
        let mut child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", script])
            .args(["orchestrate-node", TEMPLATE_LIFE])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .map_err(|e| Error::Spawn {
                what: "making the nodes' template mount namespace".into(),
                program: "unshare".into(),
                source: e,
                hint: Some("util-linux (unshare) is needed for netns nodes".into()),
            })?;
        let pid = child.id();
        let started = start_time(pid).unwrap_or(0);
        let mut line = String::new();
        let out = child.stdout.take().expect("piped");
        BufReader::new(out).read_line(&mut line).ok();
        if line.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Host {
                problem: "the nodes' template mount namespace could not be made".into(),
                what_to_do: "check that unshare --mount works here as root".into(),
            });
        }
        // Reaped in `stop`, or by init if this program exits first.
        drop(child);
        Ok(Template(Sshd {
            node: "(template)".into(),
            pid,
            started,
        }))
    }
}

/// Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    // After the command's closing parenthesis: field 3 (state) is the first word.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the recorded sshd still runs as that process: same pid, same start time, and it is
/// sshd (or, an instant after its start, the shell about to become it).
pub fn is_that(s: &Sshd) -> bool {
    if !alive(s.pid) || start_time(s.pid) != Some(s.started) {
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{}/cmdline", s.pid)) else {
        return false;
    };
    // sshd rewrites its command line (`sshd: /usr/sbin/sshd -D ... [listener] ...`); before
    // the exec, the launcher's carries the script's name for itself.
    let mut words = cmdline.split(|&b| b == 0);
    let first = String::from_utf8_lossy(words.next().unwrap_or_default()).into_owned();
    let rest: Vec<&[u8]> = words.collect();
    first.starts_with("sshd")
        || first.ends_with("/sshd")
        || (first == "sleep" && rest.contains(&TEMPLATE_LIFE.as_bytes()))
        || rest.contains(&&b"orchestrate-node"[..])
}

/// Stops the recorded sshds that still are themselves (SIGTERM, then SIGKILL after 3 s);
/// returns how many were running.
pub fn stop(all: &[Sshd]) -> usize {
    let ours: Vec<&Sshd> = all.iter().filter(|s| is_that(s)).collect();
    for s in &ours {
        // SAFETY: signalling a process checked above to be the recorded sshd.
        unsafe { libc::kill(s.pid as i32, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    for s in &ours {
        while alive(s.pid) && Instant::now() < deadline {
            reap(s.pid);
            std::thread::sleep(Duration::from_millis(10));
        }
        if is_that(s) {
            // SAFETY: as above.
            unsafe { libc::kill(s.pid as i32, libc::SIGKILL) };
        }
        reap(s.pid);
    }
    ours.len()
}

/// Waits until every node's sshd greets on port 22 (its `SSH-2.0-` banner), trying `width`
/// nodes at once; an error names the nodes that never did.
pub fn wait_listening(nodes: &[(String, Ipv4Addr)], limit: Duration, width: usize) -> Result<()> {
    wait_listening_within(nodes, limit, width, Duration::from_secs(2))
}

/// As [`wait_listening`], each connection waiting up to `banner` for the banner before the
/// next is tried: a slow node (a VM guest short of CPU) must not be handed a new connection,
/// and with it a new sshd to start, every few milliseconds.
pub fn wait_listening_within(
    nodes: &[(String, Ipv4Addr)],
    limit: Duration,
    width: usize,
    banner: Duration,
) -> Result<()> {
    let start = Instant::now();
    let silent: Vec<String> = std::thread::scope(|s| {
        let chunks: Vec<&[(String, Ipv4Addr)]> = nodes
            .chunks(nodes.len().div_ceil(width.max(1)).max(1))
            .collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter(|(_, addr)| !greets_within(*addr, start, limit, banner))
                        .map(|(n, a)| format!("{n} ({a})"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("probing does not panic"))
            .collect()
    });
    if silent.is_empty() {
        return Ok(());
    }
    Err(Error::Host {
        problem: format!(
            "{} node(s) did not answer on port 22 within {limit:?}: {}",
            silent.len(),
            silent
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ),
        what_to_do: "see the sshd log in the cluster's /run/orchestrate/<name>/ directory".into(),
    })
}

/// Whether sshd at `addr`:22 sends its banner before `start + limit`; asked at least once,
/// so that a node probed after a slow one still gets its chance.
fn greets_within(addr: Ipv4Addr, start: Instant, limit: Duration, banner: Duration) -> bool {
    let to = SocketAddr::from((addr, 22));
    loop {
        if let Ok(stream) = TcpStream::connect_timeout(&to, Duration::from_secs(1)) {
            let _ = stream.set_read_timeout(Some(banner));
            let mut line = String::new();
            if BufReader::new(stream).read_line(&mut line).is_ok() && line.starts_with("SSH-") {
                return true;
            }
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_not_taken_for_an_sshd_and_a_stale_record_is_not_ours() {
        let me = std::process::id();
        let started = start_time(me).expect("this process has a start time");
        assert!(started > 0);
        let record = Sshd {
            node: "n1".into(),
            pid: me,
            started,
        };
        // Same pid and start time, but not sshd: never signalled.
        assert!(!is_that(&record));
        let gone = Sshd {
            pid: u32::MAX - 1,
            ..record
        };
        assert!(!is_that(&gone));
        assert_eq!(stop(&[gone]), 0);
    }

    #[test]
    fn the_config_logs_in_with_keys_only() {
        let c = config();
        assert!(c.contains("PasswordAuthentication no"));
        assert!(c.contains("AuthorizedKeysFile /run/node/authorized_keys"));
        assert!(c.contains("HostKey /run/node/ssh_host_ed25519_key"));
    }
}
