//! Helpers for the worker's integration tests: a `serve` process on a free loopback port and a
//! client runner with a hard time limit, both holding the same secret, and the client's half of
//! the authentication for tests that speak the protocol by hand. Everything here talks to
//! 127.0.0.1 only.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod netns;

pub const BIN: &str = env!("CARGO_BIN_EXE_orchestrate-worker");

/// How late this machine may be to wake a thread that has something to do, for a span that
/// starts and ends in processes already running. It is a shared box of 2 cores, often with
/// a build beside the tests: a runnable thread may wait tens of milliseconds for a core, and
/// such a span holds a few such waits. Bounds add it to the time the worker is configured to
/// take; where the code guarantees that time (a timeout cannot fire early, a trial of a
/// duration cannot end before it), the lower bound is that time itself.
pub const WAKE_SLACK: Duration = Duration::from_millis(200);

/// As [`WAKE_SLACK`], for a span that also starts or ends a process (fork, exec, the dynamic
/// loader, exit and reaping add tens of milliseconds more on a loaded machine).
pub const PROCESS_SLACK: Duration = Duration::from_millis(500);

/// How long before an event the test sees (a signal it sent, a line it read) the worker may
/// have started the wait that the event ends: one thread's wait for a core, tens of ms here.
pub const CORE_WAIT: Duration = Duration::from_millis(100);

/// Limit of every wait for an event that is expected at once: only a hang reaches it.
pub const EVENT_LIMIT: Duration = Duration::from_secs(30);

/// The secret every test server and client shares (64 hex digits).
pub const SECRET: &str = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2";

/// The worker binary with the tests' secret in its environment.
pub fn worker() -> Command {
    let mut c = Command::new(BIN);
    c.env(orchestrate_worker::auth::SECRET_ENV, SECRET);
    c
}

/// The worker binary run inside network namespace `ns` (root only), with the tests' secret.
/// `ip netns exec` execs the worker, so the child is the worker itself.
pub fn worker_in(ns: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, BIN])
        .env(orchestrate_worker::auth::SECRET_ENV, SECRET);
    c
}

/// One control frame as the protocol writes it.
pub fn frame(kind: u8, version: u16, body: &[u8]) -> Vec<u8> {
    let mut f = b"OWK\x01".to_vec();
    f.extend_from_slice(&version.to_be_bytes());
    f.push(kind);
    f.extend_from_slice(&(body.len() as u32).to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// Reads the server's challenge and answers it with `secret`'s proof, as a client does.
pub fn authenticate(s: &mut TcpStream, secret: &str) {
    use orchestrate_worker::auth::{Nonce, Secret};
    use orchestrate_worker::protocol::{self, Challenge, Kind, VERSION};
    let f = protocol::read_frame(s, VERSION, "reading the challenge", 5.0).expect("challenge");
    assert_eq!(f.kind, Kind::Challenge);
    let c: Challenge = f.decode().unwrap();
    let server = Nonce::from_hex(&c.nonce).expect("nonce");
    let client = Nonce::random();
    let proof = Secret::from_hex(secret)
        .unwrap()
        .client_proof(&server, &client);
    let body = serde_json::json!({"nonce": client.to_hex(), "proof": hex::encode(proof)});
    s.write_all(&frame(
        Kind::Auth as u8,
        VERSION,
        body.to_string().as_bytes(),
    ))
    .unwrap();
}

/// A running `orchestrate-worker serve`, killed on drop.
pub struct Server {
    pub child: Child,
    pub addr: String,
    /// The line that said where it listens.
    pub first_line: Value,
    /// Lines the server prints on stdout after the first (records with `--records`).
    pub stdout: Receiver<String>,
    pub stderr: Receiver<String>,
}

impl Server {
    pub fn start(extra: &[&str]) -> Server {
        Server::start_with(worker(), "127.0.0.1:0", extra)
    }

    /// `serve --listen listen` run by `cmd` (the worker, or [`worker_in`] a namespace).
    pub fn start_with(mut cmd: Command, listen: &str, extra: &[&str]) -> Server {
        cmd.args(["serve", "--listen", listen]).args(extra);
        let (child, stdout, stderr) = spawn_piped(cmd);
        let first = stdout
            .recv_timeout(Duration::from_secs(10))
            .expect("serve prints where it listens");
        let v: Value = serde_json::from_str(&first).expect("listening line is JSON");
        let addr = v["listening"]
            .as_str()
            .expect("listening address")
            .to_string();
        Server {
            child,
            addr,
            first_line: v,
            stdout,
            stderr,
        }
    }

    /// Wait for a stderr line containing `needle`.
    pub fn wait_log(&self, needle: &str, within: Duration) -> Option<String> {
        wait_line(&self.stderr, needle, within)
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first line from `rx` containing `needle` within `within` (earlier lines are dropped).
pub fn wait_line(rx: &Receiver<String>, needle: &str, within: Duration) -> Option<String> {
    let end = Instant::now() + within;
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(needle) => return Some(l),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Every line `rx` still gives until its writer closes (bounded by [`EVENT_LIMIT`]).
pub fn drain(rx: &Receiver<String>) -> Vec<String> {
    let end = Instant::now() + EVENT_LIMIT;
    let mut v = Vec::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(l) => v.push(l),
            Err(_) => break,
        }
    }
    v
}

/// A client running in the background, its stdout and stderr read line by line (the
/// `--verbose` lines on stderr say when it has started a trial). Killed on drop.
pub struct Spawned {
    pub child: Child,
    pub stdout: Receiver<String>,
    pub stderr: Receiver<String>,
}

impl Spawned {
    /// `orchestrate-worker args` with the tests' secret.
    pub fn start(args: &[&str]) -> Spawned {
        let mut cmd = worker();
        cmd.args(args);
        let (child, stdout, stderr) = spawn_piped(cmd);
        Spawned {
            child,
            stdout,
            stderr,
        }
    }

    /// Waits for the `--verbose` line saying trial `trial` has started (the server accepted
    /// it; the client's first message follows at once); panics after [`EVENT_LIMIT`].
    pub fn wait_trial_started(&self, trial: u32) {
        let needle = format!("trial {trial} at ");
        let end = Instant::now() + EVENT_LIMIT;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(l) if l.contains(&needle) && l.ends_with(": started") => return,
                Ok(_) => {}
                Err(e) => panic!("no start of trial {trial} on the client's stderr: {e}"),
            }
        }
        panic!("trial {trial} did not start within {EVENT_LIMIT:?}");
    }

    /// Waits for the process to exit, killing it after `limit` (which fails the test);
    /// returns its exit code, its stdout and when its exit was seen (polled every 10 ms).
    pub fn finish(mut self, limit: Duration) -> (Option<i32>, String, Instant) {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                let exited = Instant::now();
                let out = drain(&self.stdout).join("\n");
                return (s.code(), out, exited);
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("process still running after {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` with no stdin, its stdout and stderr read line by line.
fn spawn_piped(mut cmd: Command) -> (Child, Receiver<String>, Receiver<String>) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let stdout = lines(child.stdout.take().unwrap());
    let stderr = lines(child.stderr.take().unwrap());
    (child, stdout, stderr)
}

pub fn lines(r: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// Result of a client run.
pub struct Run {
    pub code: Option<i32>,
    pub records: Vec<Value>,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
}

impl Run {
    pub fn role(&self, role: &str) -> Vec<&Value> {
        self.records.iter().filter(|r| r["role"] == role).collect()
    }
    pub fn error(&self) -> Option<String> {
        self.records
            .iter()
            .find_map(|r| r["error"].as_str().map(str::to_string))
    }
}

/// Run a client to completion, killing it if it exceeds `limit` (which fails the test).
pub fn client(args: &[&str], limit: Duration) -> Run {
    run_with(args, Some(SECRET), limit)
}

/// Run a client with `secret` (or none) in its environment, as [`client`] does.
pub fn run_with(args: &[&str], secret: Option<&str>, limit: Duration) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.env_remove(orchestrate_worker::auth::SECRET_ENV);
    if let Some(k) = secret {
        cmd.env(orchestrate_worker::auth::SECRET_ENV, k);
    }
    run_cmd(cmd, args, limit)
}

/// Run a client through `cmd` (the worker, or [`worker_in`] a namespace), as [`client`] does.
pub fn run_cmd(mut cmd: Command, args: &[&str], limit: Duration) -> Run {
    let start = Instant::now();
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start client");
    let out = collect(child.stdout.take().unwrap());
    let err = collect(child.stderr.take().unwrap());
    let code = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("client {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall = start.elapsed();
    let stdout = out.join().unwrap();
    let stderr = err.join().unwrap();
    let records = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("stdout lines are JSON"))
        .collect();
    Run {
        code,
        records,
        stdout,
        stderr,
        wall,
    }
}

fn collect(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

pub fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

pub fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}
