//! The agent: a server and a client driven through one stdin/stdout pair, the start barrier
//! fed through it, clock probes, and every child stopped when the controller goes away.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use orchestrate_worker::agent::{Event, Request};
use orchestrate_worker::record::{Record, Role};

struct Agent {
    child: std::process::Child,
    events: mpsc::Receiver<Event>,
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

    fn next(&self) -> Event {
        self.events
            .recv_timeout(Duration::from_secs(20))
            .expect("an event within 20 s")
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
    a.send(&Request::Spawn {
        id: 1,
        args: vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into()],
    });
    let addr = match a.next() {
        Event::Line { id: 1, line } => {
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
    });
    match a.next() {
        Event::Line { id: 2, line } => assert!(line.contains("\"ready\":true"), "{line}"),
        e => panic!("expected ready, got {e:?}"),
    }
    let go = Instant::now();
    a.send(&Request::Input {
        id: 2,
        line: "go".into(),
    });
    let mut records = Vec::new();
    loop {
        match a.next() {
            Event::Line { id: 2, line } => {
                records.push(serde_json::from_str::<Record>(&line).unwrap())
            }
            Event::Exit {
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
    assert!(client.start_unix_ns > 0 && go.elapsed() < Duration::from_secs(20));

    a.send(&Request::Time { id: 9 });
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    match a.next() {
        Event::Time { id: 9, unix_ns } => assert!(unix_ns.abs_diff(before) < 5_000_000_000),
        e => panic!("expected time, got {e:?}"),
    }
    a.send(&Request::Input {
        id: 42,
        line: "x".into(),
    });
    assert!(
        matches!(a.next(), Event::Error { id: 42, .. }),
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
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_alive(server_pid) {
        assert!(
            Instant::now() < deadline,
            "server {server_pid} outlived its agent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_agent_takes_its_children_with_it() {
    let mut a = Agent::start();
    a.send(&Request::Spawn {
        id: 1,
        args: vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into()],
    });
    assert!(matches!(a.next(), Event::Line { id: 1, .. }));
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
    let deadline = Instant::now() + Duration::from_secs(5);
    while pid_alive(child_pid) {
        assert!(
            Instant::now() < deadline,
            "child {child_pid} outlived a killed agent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
