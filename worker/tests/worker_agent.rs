//! The agent: a server and a client driven through one stdin/stdout pair, the start barrier
//! fed through it, clock probes, the run's secret handed to children outside their command
//! lines, and every child stopped when the controller goes away.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{EVENT_LIMIT, PROCESS_SLACK};

use orchestrate_worker::agent::{AgentEvent, Request};
use orchestrate_worker::auth::Secret;
use orchestrate_worker::record::{Record, Role};

struct Agent {
    child: std::process::Child,
    events: mpsc::Receiver<AgentEvent>,
}

impl Agent {
    fn start() -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrate-worker"))
            .arg("agent")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let line = line.unwrap();
                tx.send(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}")))
                    .ok();
            }
        });
        Agent { child, events }
    }

    fn send(&mut self, r: &Request) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{}", serde_json::to_string(r).unwrap()).unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> AgentEvent {
        self.events
            .recv_timeout(EVENT_LIMIT)
            .unwrap_or_else(|e| panic!("no event within {EVENT_LIMIT:?}: {e}"))
    }
}

/// Processes whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The parent is the second field after the command in parentheses.
            let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
            after.split_whitespace().nth(1) == Some(&parent.to_string())
        })
        .collect()
}

/// `pid`'s command line does not show `secret`; its environment, readable only by its owner,
/// is where it is if anywhere.
fn secret_only_in_environment(pid: u32, secret: &Secret) {
    let hex = secret.to_hex();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains(&hex),
        "the secret is on the command line of {pid}"
    );
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let has =
        String::from_utf8_lossy(&environ).contains(&format!("ORCHESTRATE_WORKER_SECRET={hex}"));
    let is_agent = String::from_utf8_lossy(&cmdline).split('\0').nth(1) == Some("agent");
    assert_eq!(has, !is_agent, "environment of {pid}");
}

fn unix_now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Waits for `pid` to be gone, failing after `within`.
fn gone_within(pid: u32, within: Duration, what: &str) {
    let deadline = Instant::now() + within;
    while pid_alive(pid) {
        assert!(
            Instant::now() < deadline,
            "{what} {pid} still alive after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn serves_and_measures_through_one_channel_and_cleans_up_when_closed() {
    let mut a = Agent::start();
    let secret = Secret::generate();
    a.send(&Request::Spawn {
        id: 1,
        args: vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into()],
        secret: Some(secret.clone()),
    });
    let addr = match a.next() {
        AgentEvent::Line { id: 1, line } => {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            v["listening"].as_str().unwrap().to_owned()
        }
        e => panic!("expected the listening line, got {e:?}"),
    };
    let args = [
        "token",
        "--connect",
        &addr,
        "--size",
        "512",
        "--exchanges",
        "300",
        "--trials",
        "1",
        "--go",
        "stdin",
    ];
    a.send(&Request::Spawn {
        id: 2,
        args: args.iter().map(|s| s.to_string()).collect(),
        secret: Some(secret.clone()),
    });
    match a.next() {
        AgentEvent::Line { id: 2, line } => assert!(line.contains("\"ready\":true"), "{line}"),
        e => panic!("expected ready, got {e:?}"),
    }
    // Both children hold the secret (the client just proved it), and neither shows it.
    let children = children_of(a.child.id());
    assert_eq!(children.len(), 2, "a server and a client: {children:?}");
    for pid in children {
        secret_only_in_environment(pid, &secret);
    }
    secret_only_in_environment(a.child.id(), &Secret::generate());
    let go_ns = unix_now_ns();
    a.send(&Request::Input {
        id: 2,
        line: "go".into(),
    });
    let mut records = Vec::new();
    loop {
        match a.next() {
            AgentEvent::Line { id: 2, line } => {
                records.push(serde_json::from_str::<Record>(&line).unwrap())
            }
            AgentEvent::Exit {
                id: 2,
                code,
                stderr,
            } => {
                assert_eq!(code, Some(0), "{stderr}");
                break;
            }
            e => panic!("unexpected {e:?}"),
        }
    }
    let client = records
        .iter()
        .find(|r| r.role == Role::Client)
        .expect("client record");
    let server = records
        .iter()
        .find(|r| r.role == Role::Server)
        .expect("server record");
    assert_eq!(client.messages, 300);
    assert_eq!(server.bytes, 300 * 512, "the server saw every token");
    // The barrier held: the trial started after the go line went in (same clock).
    assert!(
        client.start_unix_ns >= go_ns,
        "the client started {} ns before its go line",
        go_ns - client.start_unix_ns
    );

    // The agent reads the same clock between the test's two reads.
    let before = unix_now_ns();
    a.send(&Request::Time { id: 9 });
    match a.next() {
        AgentEvent::Time { id: 9, unix_ns } => {
            let after = unix_now_ns();
            assert!(
                (before..=after).contains(&unix_ns),
                "agent time {unix_ns} outside {before}..={after}"
            );
        }
        e => panic!("expected time, got {e:?}"),
    }
    a.send(&Request::Input {
        id: 42,
        line: "x".into(),
    });
    assert!(
        matches!(a.next(), AgentEvent::Error { id: 42, .. }),
        "input to an unknown child is an error"
    );

    // The server's pid, then close the agent's stdin: the server must be gone soon after.
    let server_pid = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let cmd = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmd.contains("serve") && cmd.contains("orchestrate-worker") && {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                stat.split_whitespace().nth(3) == Some(&a.child.id().to_string())
            }
        })
        .expect("the agent's server child");
    drop(a.child.stdin.take());
    let status = a.child.wait().unwrap();
    assert!(status.success());
    // The agent exits only once its children are reaped or sent SIGKILL: what is left is
    // the end of a process.
    gone_within(server_pid, PROCESS_SLACK, "server, after its agent exited,");
}

#[test]
fn a_killed_agent_takes_its_children_with_it() {
    let mut a = Agent::start();
    a.send(&Request::Spawn {
        id: 1,
        args: vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into()],
        secret: Some(Secret::generate()),
    });
    assert!(matches!(a.next(), AgentEvent::Line { id: 1, .. }));
    let agent_pid = a.child.id();
    let child_pid = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.split_whitespace().nth(3) == Some(&agent_pid.to_string())
        })
        .expect("the agent's child");
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    // The kernel sends the server SIGTERM as its agent dies; serve sees it within a poll and
    // has no session to finish.
    let poll = Duration::from_millis(orchestrate_worker::gate::POLL_MS as u64);
    gone_within(child_pid, poll + PROCESS_SLACK, "child of a killed agent");
}

#[test]
fn a_server_without_a_secret_does_not_start() {
    let mut a = Agent::start();
    a.send(&Request::Spawn {
        id: 1,
        args: vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into()],
        secret: None,
    });
    match a.next() {
        AgentEvent::Exit {
            id: 1,
            code,
            stderr,
        } => {
            assert_eq!(code, Some(2));
            assert!(stderr.contains("no secret"), "{stderr}");
        }
        e => panic!("expected the server to exit, got {e:?}"),
    }
    drop(a.child.stdin.take());
    assert!(a.child.wait().unwrap().success());
}

#[test]
fn a_malformed_request_is_not_echoed_when_it_carries_a_secret() {
    let mut a = Agent::start();
    let stdin = a.child.stdin.as_mut().unwrap();
    let line = r#"{"op":"spawn","id":1,"args":"serve","secret":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}"#;
    writeln!(stdin, "{line}").unwrap();
    stdin.flush().unwrap();
    match a.next() {
        AgentEvent::Error { message, .. } => {
            assert!(message.contains("not shown"), "{message}");
            assert!(!message.contains("0123456789abcdef"), "{message}");
        }
        e => panic!("expected an error, got {e:?}"),
    }
    drop(a.child.stdin.take());
    assert!(a.child.wait().unwrap().success());
}
