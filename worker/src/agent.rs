//! `agent`: one long-lived process per node that the controller drives over a single SSH
//! channel. A new SSH exec costs about 100 ms on a busy node; a line over a channel that is
//! already open costs about 1 ms. So the controller opens one channel per node for the whole
//! run, and everything a measurement point needs goes through it:
//!
//! - `{"id":1,"op":"spawn","args":["token","--connect","10.111.0.2:7171",...],"secret":"..."}`
//!   starts this same binary with those arguments as a child, the run's secret (if given) in
//!   its environment as `ORCHESTRATE_WORKER_SECRET` — the secret arrives over the SSH channel
//!   and goes only where its owner can read it, never onto a command line `ps` shows; each
//!   line the child prints comes back as
//!   `{"id":1,"event":"line","line":"..."}` and its end as
//!   `{"id":1,"event":"exit","code":0,"stderr":"..."}`;
//! - `{"id":1,"op":"input","line":"go"}` writes a line to child 1's stdin (the start barrier);
//! - `{"id":1,"op":"kill"}` stops child 1 (SIGTERM);
//! - `{"id":7,"op":"time"}` answers `{"id":7,"event":"time","unix_ns":...}` for clock skew.
//!
//! When the agent's stdin closes — the controller finished, died, or lost its connection —
//! every child is stopped, and children are told by the kernel to stop if the agent itself is
//! killed, so nothing outlives a run.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::auth::{SECRET_ENV, Secret};

/// A request from the controller.
#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Request {
    Spawn {
        id: u64,
        args: Vec<String>,
        /// The run's secret, for the child's environment.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secret: Option<Secret>,
    },
    Input {
        id: u64,
        line: String,
    },
    Kill {
        id: u64,
    },
    Time {
        id: u64,
    },
}

/// What the agent reports.
#[derive(Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "lowercase")]
pub enum AgentEvent {
    Line {
        id: u64,
        line: String,
    },
    Exit {
        id: u64,
        code: Option<i32>,
        stderr: String,
    },
    Time {
        id: u64,
        unix_ns: u64,
    },
    Error {
        id: u64,
        message: String,
    },
}

/// Most stderr kept per child: enough for any error message, bounded for a chatty child.
const STDERR_CAP: usize = 64 * 1024;

type Out = Arc<Mutex<std::io::Stdout>>;

fn emit(out: &Out, e: &AgentEvent) {
    let mut line = serde_json::to_string(e).expect("events serialize");
    line.push('\n');
    let mut o = lock(out);
    // A closed stdout means the controller is gone; the stdin side notices and cleans up.
    let _ = o.write_all(line.as_bytes());
    let _ = o.flush();
}

struct Running {
    pid: u32,
    stdin: Option<ChildStdin>,
}

/// Children still running, by the id the controller gave them; their watcher threads remove
/// them when they exit.
type Children = Arc<Mutex<HashMap<u64, Running>>>;

/// Locks even if a thread panicked holding the lock: what it guards stays usable either way.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the agent until its stdin closes. Returns the process exit status.
pub fn run() -> i32 {
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            emit_error(&out, 0, format!("cannot find own executable: {e}"));
            return 1;
        }
    };
    let agent = Agent {
        exe,
        out,
        children: Children::default(),
    };
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(req) => agent.handle(req),
            Err(e) => emit_error(&agent.out, 0, bad_request(&line, &e)),
        }
    }
    agent.stop_children();
    0
}

/// Why a request was not understood, without echoing a secret it may carry.
fn bad_request(line: &str, e: &serde_json::Error) -> String {
    if line.contains("\"secret\"") {
        format!(
            "bad request ({} bytes, not shown: it carries a secret): {:?} error at column {}",
            line.len(),
            e.classify(),
            e.column()
        )
    } else {
        format!("bad request {line:?}: {e}")
    }
}

fn emit_error(out: &Out, id: u64, message: String) {
    emit(out, &AgentEvent::Error { id, message });
}

/// What serves the controller's requests.
struct Agent {
    /// This binary, which every child runs.
    exe: PathBuf,
    out: Out,
    children: Children,
}

impl Agent {
    fn handle(&self, req: Request) {
        match req {
            Request::Time { id } => emit(
                &self.out,
                &AgentEvent::Time {
                    id,
                    unix_ns: now_ns(),
                },
            ),
            Request::Spawn { id, args, secret } => match spawn(&self.exe, &args, secret.as_ref()) {
                Ok(child) => watch(id, child, &self.out, &self.children),
                Err(e) => emit_error(&self.out, id, format!("cannot start {args:?}: {e}")),
            },
            Request::Input { id, line } => self.input(id, &line),
            Request::Kill { id } => self.kill(id),
        }
    }

    /// Writes one line to a child's stdin.
    fn input(&self, id: u64, line: &str) {
        let mut map = lock(&self.children);
        let written = map.get_mut(&id).and_then(|r| r.stdin.as_mut()).map(|w| {
            w.write_all(format!("{line}\n").as_bytes())
                .and_then(|()| w.flush())
        });
        drop(map);
        if !matches!(written, Some(Ok(()))) {
            emit_error(
                &self.out,
                id,
                "no such running child, or its stdin is closed".into(),
            );
        }
    }

    fn kill(&self, id: u64) {
        let pid = lock(&self.children).get(&id).map(|r| r.pid);
        match pid {
            Some(pid) => terminate(pid),
            None => emit_error(&self.out, id, "no such running child".into()),
        }
    }

    /// The controller is gone: stop everything, give it a moment, then insist.
    fn stop_children(&self) {
        let pids: Vec<u32> = lock(&self.children).values().map(|r| r.pid).collect();
        pids.iter().for_each(|p| terminate(*p));
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while std::time::Instant::now() < deadline && !lock(&self.children).is_empty() {
            std::thread::sleep(Duration::from_millis(20));
        }
        for r in lock(&self.children).values() {
            // SAFETY: plain kill(2) on a pid this process spawned and has not reaped.
            unsafe { libc::kill(r.pid as libc::pid_t, libc::SIGKILL) };
        }
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn terminate(pid: u32) {
    // SAFETY: plain kill(2) on a pid this process spawned and has not reaped.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
}

fn spawn(
    exe: &std::path::Path,
    args: &[String],
    secret: Option<&Secret>,
) -> std::io::Result<Child> {
    let mut cmd = Command::new(exe);
    // Only the secret the controller gave with this request, never one left in our own
    // environment.
    cmd.env_remove(SECRET_ENV);
    if let Some(s) = secret {
        cmd.env(SECRET_ENV, s.to_hex());
    }
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to send SIGTERM to the child
    // when this agent dies, so a killed agent leaves no servers or clients behind.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Relays a child's stdout lines, then its exit and stderr, from threads of its own.
fn watch(id: u64, mut child: Child, out: &Out, children: &Children) {
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    lock(children).insert(
        id,
        Running {
            pid: child.id(),
            stdin: child.stdin.take(),
        },
    );
    let err_buf = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = (&mut stderr).take(STDERR_CAP as u64).read_to_end(&mut buf);
        // Drain the rest so the child never blocks on a full pipe.
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        String::from_utf8_lossy(&buf).into_owned()
    });
    let out = out.clone();
    let children = children.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            emit(&out, &AgentEvent::Line { id, line });
        }
        let code = child.wait().ok().and_then(|s| s.code());
        let stderr = err_buf.join().unwrap_or_default();
        lock(&children).remove(&id);
        emit(&out, &AgentEvent::Exit { id, code, stderr });
    });
}
