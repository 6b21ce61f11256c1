//! SSH sessions to every node: one multiplexed master per node through the system ssh client
//! (so the user's ssh config, agent and jump hosts keep working), host keys checked strictly,
//! control sockets in a short private directory, masters that exit when idle if the
//! controller dies, and are kept from that exit while it lives.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use openssh::{ControlPersist, KnownHosts, Session, SessionBuilder, Stdio};
use tokio::io::AsyncWriteExt;

use crate::spec::NodeName;

use super::inventory::{Host, Inventory};

/// What went wrong on which node, running what.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{node}: cannot connect to {address}: {cause}")]
    Connect {
        node: NodeName,
        address: String,
        cause: String,
    },
    #[error("{node}: `{command}` failed{}: {stderr}", exit_text(.status))]
    Failed {
        node: NodeName,
        command: String,
        status: Option<i32>,
        stderr: String,
    },
    #[error("{node}: `{command}` did not finish within {timeout:?}")]
    Timeout {
        node: NodeName,
        command: String,
        timeout: Duration,
    },
    #[error("{node}: `{command}`: {cause}")]
    Transport {
        node: NodeName,
        command: String,
        cause: String,
    },
    #[error("{node} is not in the inventory")]
    Unknown { node: NodeName },
}

fn exit_text(status: &Option<i32>) -> String {
    match status {
        Some(c) => format!(" (exit {c})"),
        None => " (killed by a signal)".into(),
    }
}

/// The whole chain of an error: openssh's Display alone is generic, ssh's own words are in
/// the sources.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub connect_timeout: Duration,
    /// Masters exit after this long without a session, so a killed controller leaves none.
    pub idle_exit: Duration,
    /// At most this many connection attempts at once.
    pub parallel: usize,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(10),
            idle_exit: Duration::from_secs(60),
            parallel: 16,
        }
    }
}

/// Output of a command that succeeded.
#[derive(Debug, Clone)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// Live sessions to a set of nodes.
pub struct Sessions {
    sessions: BTreeMap<NodeName, (Arc<Session>, Host)>,
    activity: BTreeMap<NodeName, Arc<Activity>>,
    /// Keeps idle masters from their idle exit while these sessions live.
    keeper: Option<tokio::task::JoinHandle<()>>,
    _control_dir: tempfile::TempDir,
}

/// When a node's master last carried a command, and how many it carries now.
struct Activity {
    epoch: Instant,
    /// Commands and channels open on the node.
    in_use: AtomicUsize,
    /// When the last one ended (or the keeper last touched the node), in ms since `epoch`.
    last_ms: AtomicU64,
}

impl Activity {
    fn new(epoch: Instant) -> Activity {
        let a = Activity {
            epoch,
            in_use: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
        };
        a.touch();
        a
    }

    fn touch(&self) {
        let ms = self
            .epoch
            .elapsed()
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Idle for at least `d`: nothing open, nothing ended within `d`.
    fn idle_for(&self, d: Duration) -> bool {
        let since = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.in_use.load(Ordering::Relaxed) == 0 && self.epoch.elapsed() >= since + d
    }
}

/// A command or channel in use on a node, for as long as this lives.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: &Arc<Activity>) -> Busy {
        activity.in_use.fetch_add(1, Ordering::Relaxed);
        Busy(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_use.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs `true` over every master idle for a quarter of its idle exit, so that none exits
/// while the controller still needs it. Nodes done a few at a time (`on_all`'s fan-out) wait their
/// turn, and at 256 nodes on two cores a turn came after the 60 s idle exit: the masters of
/// the last nodes had gone ("the connection was terminated"). A killed controller takes this
/// task with it, and the masters still exit when idle.
fn keep_alive(
    nodes: Vec<(Arc<Session>, Arc<Activity>)>,
    idle_exit: Duration,
) -> tokio::task::JoinHandle<()> {
    use futures_util::StreamExt;
    // ssh counts its idle exit in whole seconds from a truncated clock, so it may come up to
    // a second early: a node is touched at most 3/8 of the idle exit after its last use.
    let every = idle_exit / 8;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let idle = nodes.iter().filter(|(_, a)| a.idle_for(idle_exit / 4));
            futures_util::stream::iter(idle)
                .for_each_concurrent(16, |(session, activity)| async move {
                    let _busy = Busy::new(activity);
                    // A master already gone is the next real command's error to report.
                    let _ = tokio::time::timeout(every, session.command("true").status()).await;
                })
                .await;
        }
    })
}

impl Sessions {
    /// Connects to `nodes` in parallel. Fails, naming every node that could not be reached,
    /// before anything is run on any of them.
    pub async fn connect(
        inventory: &Inventory,
        nodes: &[NodeName],
        opts: &ConnectOptions,
    ) -> Result<Sessions, Vec<RemoteError>> {
        // Unix socket paths are limited to ~107 bytes: keep the control directory short.
        let control_dir = tempfile::Builder::new()
            .prefix("orch-")
            .tempdir_in("/tmp")
            .map_err(|e| {
                vec![RemoteError::Transport {
                    node: "controller".parse().expect("valid"),
                    command: "mkdir control dir".into(),
                    cause: e.to_string(),
                }]
            })?;
        let missing = inventory.missing(nodes);
        if !missing.is_empty() {
            return Err(missing
                .into_iter()
                .map(|n| RemoteError::Unknown { node: n.clone() })
                .collect());
        }
        let limit = Arc::new(tokio::sync::Semaphore::new(opts.parallel.max(1)));
        let mut tasks = tokio::task::JoinSet::new();
        for n in nodes {
            let host = inventory.hosts[n].clone();
            let builder = builder(&host, control_dir.path(), opts).map_err(|cause| {
                vec![RemoteError::Transport {
                    node: host.node.clone(),
                    command: "write the ssh config for its jump host".into(),
                    cause,
                }]
            })?;
            let limit = limit.clone();
            tasks.spawn(async move {
                let _permit = limit.acquire_owned().await.expect("semaphore open");
                let result = builder.connect_mux(&host.address).await;
                (host, result)
            });
        }
        let mut sessions = BTreeMap::new();
        let mut errors = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            let (host, result) = joined.expect("connect task does not panic");
            match result {
                Ok(s) => {
                    sessions.insert(host.node.clone(), (Arc::new(s), host));
                }
                Err(e) => errors.push(RemoteError::Connect {
                    node: host.node.clone(),
                    address: host.address.clone(),
                    cause: chain(&e),
                }),
            }
        }
        if errors.is_empty() {
            let epoch = Instant::now();
            let activity: BTreeMap<NodeName, Arc<Activity>> = sessions
                .keys()
                .map(|n| (n.clone(), Arc::new(Activity::new(epoch))))
                .collect();
            let kept = sessions
                .iter()
                .map(|(n, (s, _))| (s.clone(), activity[n].clone()))
                .collect();
            Ok(Sessions {
                sessions,
                activity,
                keeper: Some(keep_alive(kept, opts.idle_exit)),
                _control_dir: control_dir,
            })
        } else {
            errors.sort_by_key(|e| e.to_string());
            for (_, (s, _)) in sessions {
                if let Ok(s) = Arc::try_unwrap(s) {
                    let _ = s.close().await;
                }
            }
            Err(errors)
        }
    }

    pub fn nodes(&self) -> impl Iterator<Item = &NodeName> {
        self.sessions.keys()
    }

    /// The control socket of `node`'s master connection: another ssh (`ssh -S SOCKET`, or
    /// `ControlPath` in a config) reaches the node through it, as logged in already, without
    /// credentials of its own.
    pub fn control_socket(&self, node: &NodeName) -> Option<&std::path::Path> {
        self.sessions.get(node).map(|(s, _)| s.control_socket())
    }

    fn session(&self, node: &NodeName) -> Result<&(Arc<Session>, Host), RemoteError> {
        self.sessions
            .get(node)
            .ok_or_else(|| RemoteError::Unknown { node: node.clone() })
    }

    fn busy(&self, node: &NodeName) -> Option<Busy> {
        self.activity.get(node).map(Busy::new)
    }

    /// Runs a shell command line on `node` (through `sudo -n` where the inventory says so),
    /// with `stdin` fed to it, and waits at most `timeout`. A non-zero exit is an error that
    /// names the node, the command and what it printed on stderr.
    pub async fn run(
        &self,
        node: &NodeName,
        command: &str,
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Output, RemoteError> {
        let (session, host) = self.session(node)?;
        let _busy = self.busy(node);
        let line = if host.sudo {
            format!(
                "sudo -n sh -c {}",
                shlex::try_quote(command).map_err(|e| RemoteError::Transport {
                    node: node.clone(),
                    command: command.into(),
                    cause: e.to_string()
                })?
            )
        } else {
            command.to_owned()
        };
        let transport = |cause: String| RemoteError::Transport {
            node: node.clone(),
            command: command.to_owned(),
            cause,
        };
        let work = async {
            let mut cmd = session.raw_command(&line);
            cmd.stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            let mut child = cmd.spawn().await.map_err(|e| transport(chain(&e)))?;
            if let Some(bytes) = stdin {
                let mut w = child.stdin().take().expect("piped");
                w.write_all(bytes)
                    .await
                    .map_err(|e| transport(e.to_string()))?;
                w.shutdown().await.map_err(|e| transport(e.to_string()))?;
            }
            child
                .wait_with_output()
                .await
                .map_err(|e| transport(chain(&e)))
        };
        let out =
            tokio::time::timeout(timeout, work)
                .await
                .map_err(|_| RemoteError::Timeout {
                    node: node.clone(),
                    command: command.to_owned(),
                    timeout,
                })??;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            Ok(Output { stdout, stderr })
        } else {
            Err(RemoteError::Failed {
                node: node.clone(),
                command: command.to_owned(),
                status: out.status.code(),
                stderr: stderr.trim().to_owned(),
            })
        }
    }

    /// Starts a long-lived command on `node` with piped stdin and stdout: a channel for many
    /// small exchanges, where a new exec per exchange would cost ~100 ms each.
    pub async fn channel(&self, node: &NodeName, command: &str) -> Result<Channel, RemoteError> {
        let (session, host) = self.session(node)?;
        let line = if host.sudo {
            format!("sudo -n {command}")
        } else {
            command.to_owned()
        };
        let mut cmd = session.clone().arc_raw_command(&line);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().await.map_err(|e| RemoteError::Transport {
            node: node.clone(),
            command: command.to_owned(),
            cause: chain(&e),
        })?;
        let stdin = child.stdin().take().expect("piped");
        let stdout = child.stdout().take().expect("piped");
        let stderr = child.stderr().take().expect("piped");
        Ok(Channel {
            child,
            stdin,
            stdout,
            stderr,
            _busy: self.busy(node),
        })
    }

    /// Runs `command` on every node at once; results in node order.
    pub async fn run_all(
        &self,
        command: &str,
        timeout: Duration,
    ) -> Vec<(NodeName, Result<Output, RemoteError>)> {
        let futures = self
            .sessions
            .keys()
            .map(|n| async move { (n.clone(), self.run(n, command, None, timeout).await) });
        futures_util::future::join_all(futures).await
    }

    /// Closes every master. Dropping a session would block; this is the clean way out.
    pub async fn close(mut self) {
        if let Some(keeper) = self.keeper.take() {
            keeper.abort();
            // Its hold on the sessions goes with it.
            let _ = keeper.await;
        }
        for (_, (s, _)) in std::mem::take(&mut self.sessions) {
            if let Ok(s) = Arc::try_unwrap(s) {
                let _ = s.close().await;
            }
        }
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        if let Some(keeper) = self.keeper.take() {
            keeper.abort();
        }
    }
}

/// A long-lived remote command and its pipes. Closing stdin tells it to finish; `wait` reaps it.
pub struct Channel {
    pub child: openssh::Child<Arc<Session>>,
    pub stdin: openssh::ChildStdin,
    pub stdout: openssh::ChildStdout,
    pub stderr: openssh::ChildStderr,
    /// The node is in use while the channel is open: its master needs no keeping alive.
    _busy: Option<Busy>,
}

/// The ssh options for `host`. The `openssh` crate builds the master's command line itself and
/// puts the destination last with no `--` before it (`ssh ... -J jump -o ... address`), so it
/// cannot be told to stop option parsing: what keeps an address from being read as an option
/// is the inventory's check (`inventory::rules`), which refuses any user, address or jump
/// host starting with `-`, and every character beyond names and IP literals (so no `ssh://`
/// form either, which the crate would take apart). User and jump host reach ssh as the
/// arguments of `-l` and `-J`, never as options of their own. Commands then travel over the
/// control socket (native mux), not on a command line.
fn builder(
    host: &Host,
    control_dir: &Path,
    opts: &ConnectOptions,
) -> Result<SessionBuilder, String> {
    let mut b = SessionBuilder::default();
    b.known_hosts_check(KnownHosts::Strict)
        .control_directory(control_dir)
        .connect_timeout(opts.connect_timeout)
        .server_alive_interval(Duration::from_secs(5))
        .control_persist(ControlPersist::IdleFor(
            NonZeroUsize::new(opts.idle_exit.as_secs().max(1) as usize).expect("non-zero"),
        ));
    if let Some(u) = &host.user {
        b.user(u.clone());
    }
    if let Some(p) = host.port {
        b.port(p);
    }
    if let Some(k) = &host.identity {
        b.keyfile(k);
    }
    if let Some(k) = &host.known_hosts {
        b.user_known_hosts_file(k);
    }
    if let Some(j) = &host.jump {
        b.jump_hosts([j]);
        if let Some(config) = jump_config(host)? {
            let path = control_dir.join(format!("{}.ssh_config", host.node));
            std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
            b.config_file(path);
        }
    }
    Ok(b)
}

/// ssh hands none of its command-line options (`-i`, `-o UserKnownHostsFile`) to a jump
/// host: the `ssh -W` it starts for the hop gets only the file of `-F`. So where the inventory
/// names an identity or a known_hosts file for a node reached through a jump host, they go
/// into a config file of the session's own, and the jump host is reached with the same key
/// and checked as strictly against the same pinned keys. The user's and the system's configs
/// follow it, so their `Host` blocks still apply to everything the inventory leaves unset
/// (ssh keeps the first value it reads). `None` when the inventory sets neither.
fn jump_config(host: &Host) -> Result<Option<String>, String> {
    if host.identity.is_none() && host.known_hosts.is_none() {
        return Ok(None);
    }
    // A value in double quotes may hold spaces but no quote; `%` starts ssh's tokens.
    let quoted = |p: &Path| -> Result<String, String> {
        let s = p.to_str().ok_or_else(|| format!("{p:?} is not UTF-8"))?;
        if s.contains(['"', '\n']) {
            return Err(format!(
                "{s:?}: ssh's config cannot hold a path with a quote"
            ));
        }
        Ok(format!("\"{}\"", s.replace('%', "%%")))
    };
    let mut config =
        String::from("# The inventory's settings, for the node and its jump host alike.\n");
    if let Some(k) = &host.identity {
        config += &format!("IdentityFile {}\n", quoted(k)?);
    }
    if let Some(k) = &host.known_hosts {
        config += &format!(
            "UserKnownHostsFile {}\nStrictHostKeyChecking yes\n",
            quoted(k)?
        );
    }
    config += "Include ~/.ssh/config\nInclude /etc/ssh/ssh_config\n";
    Ok(Some(config))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn host(identity: Option<&str>, known_hosts: Option<&str>) -> Host {
        Host {
            node: "n1".parse().unwrap(),
            address: "10.0.0.1".into(),
            port: None,
            user: Some("lab".into()),
            identity: identity.map(PathBuf::from),
            known_hosts: known_hosts.map(PathBuf::from),
            jump: Some("gw".into()),
            sudo: true,
        }
    }

    #[test]
    fn a_jump_host_gets_the_inventorys_key_and_pinned_host_keys() {
        let config = jump_config(&host(Some("/keys/my key"), Some("/etc/100%/known")))
            .unwrap()
            .unwrap();
        let lines: Vec<&str> = config.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                r#"IdentityFile "/keys/my key""#,
                r#"UserKnownHostsFile "/etc/100%%/known""#,
                "StrictHostKeyChecking yes",
                "Include ~/.ssh/config",
                "Include /etc/ssh/ssh_config",
            ]
        );
        assert_eq!(jump_config(&host(None, None)).unwrap(), None);
        let quote = jump_config(&host(Some("/k\"ey"), None)).unwrap_err();
        assert!(quote.contains("quote"), "{quote}");
    }
}
