//! The control socket against a running loop: `ping`, `total` and `interval` answered as
//! documented in [`super::super::control`], anything else refused by name, and the loop
//! unharmed by it.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::super::control::{self, Request, Snapshot};
use super::super::fake::{Rig, Running};
use super::super::start_control_thread;
use super::*;

/// A private directory for one test's socket, removed when dropped.
struct SocketDir(PathBuf);

impl SocketDir {
    fn new(test: &str) -> SocketDir {
        let d = std::env::temp_dir().join(format!("medium-loop-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        SocketDir(d)
    }

    fn socket(&self) -> PathBuf {
        self.0.join("medium.sock")
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The loop running on its own thread, answering on `socket`.
fn serve(socket: &Path) -> Running {
    let rig = Rig::new(bus_and_switch());
    start_control_thread(control::bind(socket).unwrap(), rig.shared.clone()).unwrap();
    rig.spawn()
}

fn ask(socket: &Path, r: Request) -> Snapshot {
    control::query(socket, r).unwrap().expect("a snapshot")
}

/// Sends `request` as it is and returns the answer.
fn raw(socket: &Path, request: &[u8]) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    s.write_all(request).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

/// A broadcast of `len` bytes from port 0 at `t`, carried to ports 1 and 2 on time; returns
/// when it was due, once the loop has written it.
fn one_frame(running: &Running, t: Nanos, len: usize) -> Nanos {
    let due = t + wire_ns(len);
    running.arrive(t, 0, frame(BROADCAST, 0, len, 1));
    running.at(due);
    running.settle();
    due
}

#[test]
fn ping_total_and_interval_answer_as_documented() {
    let dir = SocketDir::new("documented");
    let socket = dir.socket();
    let running = serve(&socket);
    assert_eq!(control::ping(&socket).unwrap(), std::process::id());

    let (len1, len2) = (1000, 200);
    let due1 = one_frame(&running, 1_000_000, len1);
    // Statistics since the start (clock 0), with the frame and its two deliveries.
    let total = ask(&socket, Request::Total);
    let bus = &total.segments[0];
    assert_eq!(
        (bus.segment.as_str(), bus.medium.as_str()),
        ("bus", "shared")
    );
    assert_eq!(bus.rate_bps, RATE);
    assert_eq!(bus.elapsed_ns, due1);
    assert_eq!((bus.counters.frames, bus.counters.bytes), (1, len1 as u64));
    assert_eq!(bus.counters.carried_ns, wire_ns(len1) + gap_ns());
    assert_eq!(bus.lateness.samples, 2);
    assert_eq!(total.segments[1].counters.frames, 0);
    assert!(!total.realtime_priority);
    // The first interval is everything so far, and starts a new one.
    let first = ask(&socket, Request::Interval);
    assert_eq!(first.segments, total.segments);

    let due2 = one_frame(&running, due1 + 1_000_000, len2);
    // The second interval holds only the second frame, and its length is the time between
    // the two requests.
    let second = ask(&socket, Request::Interval);
    let bus = &second.segments[0];
    assert_eq!(bus.elapsed_ns, due2 - due1);
    assert_eq!((bus.counters.frames, bus.counters.bytes), (1, len2 as u64));
    assert_eq!(bus.lateness.samples, 2);
    // The total still holds both.
    let total = ask(&socket, Request::Total);
    let bus = &total.segments[0];
    assert_eq!(bus.elapsed_ns, due2);
    assert_eq!(bus.counters.frames, 2);
    assert_eq!(bus.counters.bytes, (len1 + len2) as u64);
    assert_eq!(bus.lateness.samples, 4);
    // Nothing since the second interval.
    let third = ask(&socket, Request::Interval);
    assert_eq!(third.segments[0].counters.frames, 0);
    assert_eq!(third.segments[0].lateness.samples, 0);
    assert_eq!(running.stop().send_errors, 0);
}

#[test]
fn a_malformed_request_is_refused_by_name_and_the_loop_goes_on() {
    let dir = SocketDir::new("malformed");
    let socket = dir.socket();
    let running = serve(&socket);
    // No shutdown over the socket (the emulator stops on SIGTERM), and no such word.
    assert_eq!(raw(&socket, b"shutdown\n"), "unknown request \"shutdown\"");
    assert_eq!(raw(&socket, b"\n"), "unknown request \"\"");
    // Bytes that are not text are refused too, not left unanswered.
    assert_eq!(
        raw(&socket, b"tot\xffal\n"),
        "unknown request \"tot\u{fffd}al\""
    );
    // The loop still carries frames, and the socket still answers.
    let due = one_frame(&running, 1_000_000, 500);
    assert_eq!(running.ports[1].sent()[0].at, due);
    let total = ask(&socket, Request::Total);
    assert_eq!(total.segments[0].counters.frames, 1);
    assert_eq!(control::ping(&socket).unwrap(), std::process::id());
    running.stop();
}
