//! Helpers for the userspace bond's tests: two network namespaces joined by veth pairs (the
//! slave wires, with no addresses), a bond process in each, and TCP between the bonds'
//! addresses from threads that enter a namespace. Needs root (tests/common/need.rs).
//! All traffic stays between the test's own namespaces.

#![allow(dead_code)]

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_orchestrate-worker");
pub const A_ADDR: &str = "10.111.0.1";
pub const B_ADDR: &str = "10.111.0.2";

pub fn sh(cmd: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces, `<tag>a` and `<tag>b`, joined by `wires` veth pairs: `a1`..`aN` in the
/// first, `b1`..`bN` in the second, up, without addresses. Deleted on drop.
pub struct Wires {
    pub a: String,
    pub b: String,
}

impl Wires {
    pub fn new(tag: &str, wires: usize) -> Wires {
        let tag = format!("obt{}{tag}", std::process::id() % 10000);
        let w = Wires {
            a: format!("{tag}a"),
            b: format!("{tag}b"),
        };
        for ns in [&w.a, &w.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            sh(&format!("ip netns add {ns} && ip -n {ns} link set lo up"));
        }
        for i in 1..=wires {
            sh(&format!(
                "ip link add a{i} netns {a} type veth peer name b{i} netns {b} && \
                 ip -n {a} link set a{i} up && ip -n {b} link set b{i} up",
                a = w.a,
                b = w.b
            ));
        }
        w
    }

    /// Sets `dev` (a slave in namespace `ns`) up or down.
    pub fn set(&self, ns: &str, dev: &str, up: bool) {
        sh(&format!(
            "ip -n {ns} link set {dev} {}",
            if up { "up" } else { "down" }
        ));
    }

    pub fn link_exists(&self, ns: &str, dev: &str) -> bool {
        Command::new("ip")
            .args(["-n", ns, "link", "show", dev])
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

impl Drop for Wires {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// `nodes` namespaces on `buses` shared segments, each a Linux bridge in a switch namespace:
/// node `i` (from 1) is namespace `nodes[i-1]` and reaches bus `w` through its `e<w>`.
/// Deleted on drop.
pub struct Bus {
    pub nodes: Vec<String>,
    switch: String,
}

impl Bus {
    pub fn new(tag: &str, nodes: usize, buses: usize) -> Bus {
        let tag = format!("obb{}{tag}", std::process::id() % 10000);
        let bus = Bus {
            nodes: (1..=nodes).map(|i| format!("{tag}n{i}")).collect(),
            switch: format!("{tag}sw"),
        };
        for ns in bus.nodes.iter().chain([&bus.switch]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
            sh(&format!("ip netns add {ns} && ip -n {ns} link set lo up"));
        }
        let sw = &bus.switch;
        for w in 1..=buses {
            sh(&format!(
                "ip -n {sw} link add br{w} type bridge && ip -n {sw} link set br{w} up"
            ));
            for (i, ns) in bus.nodes.iter().enumerate() {
                sh(&format!(
                    "ip link add e{w} netns {ns} type veth peer name p{i}w{w} netns {sw} && \
                     ip -n {sw} link set p{i}w{w} master br{w} up && ip -n {ns} link set e{w} up"
                ));
            }
        }
        bus
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        for ns in self.nodes.iter().chain([&self.switch]) {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// A running `orchestrate-worker bond`, stopped on drop.
pub struct BondProc {
    child: Child,
    lines: Receiver<String>,
    pub events: Vec<Value>,
    stderr: JoinHandle<String>,
}

impl BondProc {
    /// Starts a bond in `ns` and waits for its `ready` line.
    pub fn start(ns: &str, args: &[&str]) -> BondProc {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, BIN, "bond"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start bond");
        let out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut b = BondProc {
            child,
            lines,
            events: Vec::new(),
            stderr,
        };
        if b.wait_event(|e| e["event"] == "ready", Duration::from_secs(10))
            .is_none()
        {
            let err = b.finish();
            panic!("bond in {ns} did not become ready: {err}");
        }
        b
    }

    /// Waits for an event matching `pred`, keeping every event seen.
    pub fn wait_event(&mut self, pred: impl Fn(&Value) -> bool, within: Duration) -> Option<Value> {
        if let Some(e) = self.events.iter().find(|e| pred(e)) {
            return Some(e.clone());
        }
        let end = Instant::now() + within;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            let l = self.lines.recv_timeout(left).ok()?;
            let v: Value = serde_json::from_str(&l).unwrap_or_else(|_| panic!("not JSON: {l}"));
            self.events.push(v.clone());
            if pred(&v) {
                return Some(v);
            }
        }
        None
    }

    /// Waits until the bond has heard `peer` on each of `slaves`.
    pub fn wait_peers(&mut self, peer: &str, slaves: &[&str]) {
        for s in slaves {
            self.wait_event(
                |e| e["event"] == "peer" && e["slave"] == *s && e["peer"] == peer,
                Duration::from_secs(5),
            )
            .unwrap_or_else(|| panic!("bond never heard {peer} on {s}"));
        }
    }

    /// Current counters, asked for with SIGUSR1.
    pub fn stats(&mut self) -> Value {
        let seen = self.events.len();
        unsafe { libc::kill(self.child.id() as i32, libc::SIGUSR1) };
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(e) = self.events[seen..].iter().find(|e| e["event"] == "stats") {
                return e.clone();
            }
            let left = end
                .checked_duration_since(Instant::now())
                .expect("stats within 5 s");
            let l = self.lines.recv_timeout(left).expect("stats line");
            self.events
                .push(serde_json::from_str(&l).expect("JSON line"));
        }
    }

    /// Stops the bond with SIGTERM; returns its `exit` event.
    pub fn stop(&mut self) -> Value {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let exit = self.wait_event(|e| e["event"] == "exit", Duration::from_secs(5));
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "bond exited with {status}");
        exit.expect("exit line with the final counters")
    }

    fn finish(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(&mut self.stderr, std::thread::spawn(String::new))
            .join()
            .unwrap_or_default()
    }
}

impl Drop for BondProc {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Slave `name`'s counters in a stats or exit event.
pub fn slave<'a>(stats: &'a Value, name: &str) -> &'a Value {
    stats["slaves"]
        .as_array()
        .expect("slaves")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no slave {name} in {stats}"))
}

pub fn count(stats: &Value, name: &str, key: &str) -> u64 {
    slave(stats, name)[key].as_u64().expect("counter")
}

/// Runs `f` on a thread inside network namespace `ns`.
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on this thread only; the descriptor is valid.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// The byte at offset `i` of a test stream: not periodic at any power of two, so a
/// misplaced segment shows.
pub fn pattern(i: u64) -> u8 {
    (i % 251) as u8 ^ (i >> 13) as u8
}

/// Listens in `ns` on `addr`; returns the accept thread's result: bytes received, whether
/// every byte matched the pattern, and the longest gap between two reads.
pub fn receiver(ns: &str, addr: SocketAddr) -> (JoinHandle<(u64, bool, Duration)>, Receiver<()>) {
    let (ready_tx, ready) = channel();
    let h = in_netns(ns, move || {
        let l = TcpListener::bind(addr).expect("bind in namespace");
        ready_tx.send(()).unwrap();
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = vec![0u8; 65536];
        let (mut total, mut ok, mut gap) = (0u64, true, Duration::ZERO);
        let mut last = Instant::now();
        loop {
            let n = s.read(&mut buf).expect("read (a stall over 10 s fails)");
            let now = Instant::now();
            if total > 0 {
                gap = gap.max(now - last);
            }
            last = now;
            if n == 0 {
                break;
            }
            ok &= buf[..n]
                .iter()
                .enumerate()
                .all(|(k, &b)| b == pattern(total + k as u64));
            total += n as u64;
        }
        (total, ok, gap)
    });
    (h, ready)
}

/// Connects from `ns` to `to` and sends `bytes` of the pattern in `chunk`-byte writes,
/// pausing `pace` between writes; returns the local port used.
pub fn sender(
    ns: &str,
    to: SocketAddr,
    bytes: u64,
    chunk: usize,
    pace: Duration,
) -> JoinHandle<u16> {
    in_netns(ns, move || {
        let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).expect("connect");
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
        let port = s.local_addr().unwrap().port();
        let mut sent = 0u64;
        let mut buf = vec![0u8; chunk];
        while sent < bytes {
            let n = chunk.min((bytes - sent) as usize);
            for (k, b) in buf[..n].iter_mut().enumerate() {
                *b = pattern(sent + k as u64);
            }
            s.write_all(&buf[..n]).expect("write");
            sent += n as u64;
            if !pace.is_zero() {
                std::thread::sleep(pace);
            }
        }
        port
    })
}
