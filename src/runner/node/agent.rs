//! The controller's side of a node's agent (`orchestrate-worker agent`): one SSH channel per
//! node for the whole run, requests written as JSON lines, events routed to whoever asked by
//! the request's id. Every command started through it gets the secret of the servers it
//! serves or reaches, over that channel, never on a command line.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use orchestrate_worker::agent::{AgentEvent, Request};
use orchestrate_worker::auth::Secret;
use orchestrate_worker::invocation::Invocation;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};

use crate::remote::{RemoteError, Sessions};
use crate::spec::NodeName;

use super::worker_install::InstalledWorker;

type Routes = Arc<std::sync::Mutex<HashMap<u64, mpsc::UnboundedSender<AgentEvent>>>>;

pub struct Agent {
    pub node: NodeName,
    stdin: Mutex<openssh::ChildStdin>,
    routes: Routes,
    next_id: AtomicU64,
    child: Mutex<Option<openssh::Child<Arc<openssh::Session>>>>,
    stderr: Arc<std::sync::Mutex<String>>,
    /// What the node's servers and clients prove to each other.
    secret: Secret,
    private_dir: String,
}

/// A command started through an agent, and its events.
pub struct Task {
    pub id: u64,
    pub events: mpsc::UnboundedReceiver<AgentEvent>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error("{node}: the agent's channel closed{}", if .stderr.is_empty() { String::new() } else { format!(": {}", .stderr) })]
    Closed { node: NodeName, stderr: String },
    #[error("{node}: no answer from the agent within {timeout:?}")]
    Timeout { node: NodeName, timeout: Duration },
}

impl Agent {
    /// Starts `worker agent` on `node` and the task that routes its events; every command it
    /// starts gets `secret`.
    pub async fn open(
        cluster: &Sessions,
        node: &NodeName,
        worker: &InstalledWorker,
        secret: Secret,
    ) -> Result<Agent, AgentError> {
        let ch = cluster
            .channel(node, &worker.command(&Invocation::Agent))
            .await?;
        let routes: Routes = Arc::default();
        let stderr = Arc::new(std::sync::Mutex::new(String::new()));
        {
            let routes = routes.clone();
            let mut lines = BufReader::new(ch.stdout).lines();
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    let Ok(event) = serde_json::from_str::<AgentEvent>(&line) else {
                        tracing::warn!("agent sent an unreadable line: {line}");
                        continue;
                    };
                    let id = match &event {
                        AgentEvent::Line { id, .. }
                        | AgentEvent::Exit { id, .. }
                        | AgentEvent::Time { id, .. }
                        | AgentEvent::Error { id, .. } => *id,
                    };
                    let done = matches!(event, AgentEvent::Exit { .. } | AgentEvent::Time { .. });
                    let mut map = routes.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(tx) = map.get(&id) {
                        let _ = tx.send(event);
                    }
                    if done {
                        map.remove(&id);
                    }
                }
                // Channel gone: every waiting task sees its receiver end.
                routes.lock().unwrap_or_else(|p| p.into_inner()).clear();
            });
        }
        {
            let stderr = stderr.clone();
            let mut err = ch.stderr;
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let _ = (&mut err).take(64 * 1024).read_to_end(&mut buf).await;
                *stderr.lock().unwrap_or_else(|p| p.into_inner()) =
                    String::from_utf8_lossy(&buf).trim().to_owned();
            });
        }
        Ok(Agent {
            node: node.clone(),
            stdin: Mutex::new(ch.stdin),
            routes,
            next_id: AtomicU64::new(1),
            child: Mutex::new(Some(ch.child)),
            stderr,
            secret,
            private_dir: worker.dir().to_owned(),
        })
    }

    /// The node's private directory, where the worker it runs may write files (filecopy's
    /// spool): nobody else on the node can read or plant anything there.
    pub fn private_dir(&self) -> &str {
        &self.private_dir
    }

    fn closed(&self) -> AgentError {
        AgentError::Closed {
            node: self.node.clone(),
            stderr: self
                .stderr
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    async fn send(&self, r: &Request) -> Result<(), AgentError> {
        let mut line = serde_json::to_string(r).expect("requests serialize");
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|_| self.closed())?;
        stdin.flush().await.map_err(|_| self.closed())
    }

    fn route(&self) -> (u64, mpsc::UnboundedReceiver<AgentEvent>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        (id, rx)
    }

    /// Starts `orchestrate-worker <args>` on the node, with the secret in its environment.
    pub async fn spawn(&self, args: Vec<String>) -> Result<Task, AgentError> {
        let (id, events) = self.route();
        let secret = Some(self.secret.clone());
        self.send(&Request::Spawn { id, args, secret }).await?;
        Ok(Task { id, events })
    }

    pub async fn input(&self, id: u64, line: &str) -> Result<(), AgentError> {
        self.send(&Request::Input {
            id,
            line: line.to_owned(),
        })
        .await
    }

    pub async fn kill(&self, id: u64) -> Result<(), AgentError> {
        self.send(&Request::Kill { id }).await
    }

    /// The node's clock minus ours, in ns, and the round trip it was measured over: the best
    /// of a few probes, since the shortest round trip bounds the error best.
    pub async fn clock_offset(&self) -> Result<(i64, u64), AgentError> {
        let mut best: Option<(i64, u64)> = None;
        for _ in 0..5 {
            let (id, mut rx) = self.route();
            let sent = now_ns();
            self.send(&Request::Time { id }).await?;
            let ev = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .map_err(|_| AgentError::Timeout {
                    node: self.node.clone(),
                    timeout: Duration::from_secs(10),
                })?
                .ok_or_else(|| self.closed())?;
            let got = now_ns();
            if let AgentEvent::Time { unix_ns, .. } = ev {
                let rtt = got.saturating_sub(sent);
                let offset = unix_ns as i64 - (sent + rtt / 2) as i64;
                if best.is_none_or(|(_, r)| rtt < r) {
                    best = Some((offset, rtt));
                }
            }
        }
        best.ok_or_else(|| self.closed())
    }

    /// Closes the channel: the agent stops every child it started and exits.
    pub async fn close(&self) {
        {
            let mut stdin = self.stdin.lock().await;
            let _ = stdin.shutdown().await;
        }
        if let Some(child) = self.child.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        }
    }
}

pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Task {
    /// The next line the command printed, or its exit.
    pub async fn next(
        &mut self,
        node: &NodeName,
        timeout: Duration,
    ) -> Result<AgentEvent, AgentError> {
        match tokio::time::timeout(timeout, self.events.recv()).await {
            Ok(Some(e)) => Ok(e),
            Ok(None) => Err(AgentError::Closed {
                node: node.clone(),
                stderr: String::new(),
            }),
            Err(_) => Err(AgentError::Timeout {
                node: node.clone(),
                timeout,
            }),
        }
    }
}
