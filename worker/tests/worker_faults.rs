//! Faults end in bounded time with a clear error and never take `serve` down: a server killed
//! or frozen mid-run, a client killed or frozen mid-run, garbage on the port, mismatched
//! versions, hostile parameters. Loopback only.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    EVENT_LIMIT, PROCESS_SLACK, SECRET, Server, Spawned, WAKE_SLACK, authenticate, client, frame,
};
use orchestrate_worker::protocol::{Kind, VERSION};
use orchestrate_worker::serve_args::DEFAULT_AUTH_TIMEOUT_S;

const LIMIT: Duration = Duration::from_secs(30);

/// The clients' socket timeout where a fault must be noticed without it (`--timeout`, the
/// default): a reset or a refusal is seen at once, far sooner than this.
const PATIENT_TIMEOUT: Duration = Duration::from_secs(10);
const PATIENT_TIMEOUT_ARG: &str = "10";
/// The clients' socket timeout where a fault is noticed by it (`--timeout`).
const SHORT_TIMEOUT: Duration = Duration::from_secs(1);
const SHORT_TIMEOUT_ARG: &str = "1";

/// The server's authentication timeout: it runs with the default.
fn auth_timeout() -> Duration {
    Duration::from_secs_f64(DEFAULT_AUTH_TIMEOUT_S)
}

// What a test counts as noticed at once must be far from what a timeout would take.
const _: () = assert!(PROCESS_SLACK.as_millis() < PATIENT_TIMEOUT.as_millis());

/// A healthy session still works: the server survived whatever the test did to it.
fn still_serves(srv: &mut Server) {
    assert!(srv.alive(), "serve exited");
    let r = client(
        &[
            "token",
            "--connect",
            &srv.addr,
            "--size",
            "4",
            "--exchanges",
            "50",
            "--trials",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "serve no longer works: {}", r.stdout);
}

fn error_of(stdout: &str) -> String {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no error record in {stdout:?}"))
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: sending a signal to a child process this test started.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
}

#[test]
fn server_killed_mid_run() {
    let mut srv = Server::start(&[]);
    let c = Spawned::start(&[
        "stream",
        "--connect",
        &srv.addr,
        "--size",
        "64K",
        "--duration",
        "30",
        "--trials",
        "1",
        "--warmup",
        "0",
        "--timeout",
        PATIENT_TIMEOUT_ARG,
        "--verbose",
    ]);
    // Mid-run: the server has accepted the trial and the client is streaming.
    c.wait_trial_started(0);
    let killed = Instant::now();
    srv.child.kill().unwrap();
    let (code, out, exited) = c.finish(LIMIT);
    assert_eq!(code, Some(1));
    let e = error_of(&out);
    assert!(
        e.contains("connection") || e.contains("closed"),
        "unclear error: {e}"
    );
    // The dead server's kernel resets the connection: noticed at once, not by the timeout.
    let took = exited - killed;
    assert!(
        took < PROCESS_SLACK,
        "took {took:?} to notice (bound {PROCESS_SLACK:?}; --timeout {PATIENT_TIMEOUT:?})"
    );
}

#[test]
fn server_frozen_mid_run_times_out() {
    let srv = Server::start(&[]);
    let c = Spawned::start(&[
        "pingpong",
        "--connect",
        &srv.addr,
        "--size",
        "1",
        "--duration",
        "30",
        "--trials",
        "1",
        "--timeout",
        SHORT_TIMEOUT_ARG,
        "--verbose",
    ]);
    c.wait_trial_started(0);
    let frozen = Instant::now();
    signal(srv.child.id(), libc::SIGSTOP);
    let (code, out, exited) = c.finish(LIMIT);
    signal(srv.child.id(), libc::SIGCONT);
    assert_eq!(code, Some(1));
    let e = error_of(&out);
    assert!(e.contains("timed out after 1.0 s"), "unclear error: {e}");
    // The client's last wait for a reply began at most one wait for a core before the
    // freeze (the server may have sat on that ping unscheduled), and its timeout cannot fire
    // early; then it writes its error record and exits.
    let took = exited - frozen;
    assert!(
        took >= SHORT_TIMEOUT - common::CORE_WAIT && took < SHORT_TIMEOUT + PROCESS_SLACK,
        "timed out {took:?} after the freeze with --timeout {SHORT_TIMEOUT:?}"
    );
}

#[test]
fn client_killed_mid_run() {
    let mut srv = Server::start(&[]);
    let mut c = Spawned::start(&[
        "pingpong",
        "--connect",
        &srv.addr,
        "--size",
        "100",
        "--duration",
        "30",
        "--trials",
        "1",
        "--timeout",
        PATIENT_TIMEOUT_ARG,
        "--verbose",
    ]);
    c.wait_trial_started(0);
    let killed = Instant::now();
    c.child.kill().unwrap();
    c.child.wait().unwrap();
    // The dead client's kernel closes the connection: the server notices at once, far sooner
    // than the session's timeout (the client's --timeout).
    let line = srv.wait_log("error", PROCESS_SLACK).unwrap_or_else(|| {
        panic!(
            "serve did not log the broken session within {PROCESS_SLACK:?} of the kill \
                 (session timeout {PATIENT_TIMEOUT:?})"
        )
    });
    assert!(
        line.contains("closed") || line.contains("connection"),
        "{line}"
    );
    let took = killed.elapsed();
    assert!(took < PROCESS_SLACK, "logged {took:?} after the kill");
    still_serves(&mut srv);
}

#[test]
fn client_frozen_mid_run_times_out_on_the_server() {
    let mut srv = Server::start(&[]);
    let c = Spawned::start(&[
        "stream",
        "--connect",
        &srv.addr,
        "--size",
        "1K",
        "--duration",
        "30",
        "--trials",
        "1",
        "--timeout",
        SHORT_TIMEOUT_ARG,
        "--verbose",
    ]);
    c.wait_trial_started(0);
    let frozen = Instant::now();
    signal(c.child.id(), libc::SIGSTOP);
    // The server's last read began at the latest when the client's last block arrived, which
    // the client may have written up to one wait for a core before the freeze; its timeout
    // (the client's --timeout) cannot fire early. Logging it is a wake-up away.
    let within = SHORT_TIMEOUT + WAKE_SLACK;
    let line = srv
        .wait_log("error", within)
        .unwrap_or_else(|| panic!("serve did not end the frozen session within {within:?}"));
    let took = frozen.elapsed();
    assert!(line.contains("timed out after 1.0 s"), "{line}");
    assert!(
        took >= SHORT_TIMEOUT - common::CORE_WAIT,
        "the session timed out {took:?} after the freeze with --timeout {SHORT_TIMEOUT:?}"
    );
    signal(c.child.id(), libc::SIGKILL);
    let _ = c.finish(LIMIT);
    still_serves(&mut srv);
}

/// A few kilobytes of reproducible noise.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Send bytes to serve, after authenticating if asked to, and read what comes back until it
/// closes (bounded).
fn poke_as(addr: &str, secret: Option<&str>, bytes: &[u8]) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    if let Some(k) = secret {
        authenticate(&mut s, k);
    }
    let _ = s.write_all(bytes);
    let mut back = Vec::new();
    let _ = s.read_to_end(&mut back);
    (back, start.elapsed())
}

fn poke(addr: &str, bytes: &[u8]) -> (Vec<u8>, Duration) {
    poke_as(addr, None, bytes)
}

#[test]
fn random_bytes_to_serve() {
    let mut srv = Server::start(&[]);
    // Garbage is refused at its first bytes: sooner than the authentication timeout would
    // close the connection anyway, by more than the machine's slack.
    let on_sight = auth_timeout() - WAKE_SLACK;
    for seed in 1..=5u64 {
        let (back, took) = poke(&srv.addr, &noise(seed, 4096));
        assert!(
            took < on_sight,
            "garbage session lasted {took:?} (auth timeout {:?})",
            auth_timeout()
        );
        let text = String::from_utf8_lossy(&back);
        assert!(
            text.contains("not an orchestrate-worker peer"),
            "reply to garbage: {text}"
        );
    }
    // Silence is bounded by the authentication timeout, which runs from the accept (after
    // the test's clock started) and cannot fire early.
    let (back, took) = poke(&srv.addr, &[]);
    assert!(
        took >= auth_timeout() && took < auth_timeout() + WAKE_SLACK,
        "silent connection lasted {took:?} (auth timeout {:?})",
        auth_timeout()
    );
    assert!(
        String::from_utf8_lossy(&back).contains(&format!(
            "no valid authentication within {DEFAULT_AUTH_TIMEOUT_S:.1} s"
        )),
        "{back:?}"
    );
    // The right magic with an absurd frame length is refused without allocating it, and an
    // authentication frame longer than a proof needs is too.
    for len in [u32::MAX, 257] {
        let mut f = frame(Kind::Auth as u8, VERSION, &[]);
        f[7..11].copy_from_slice(&len.to_be_bytes());
        let (back, _) = poke(&srv.addr, &f);
        assert!(
            String::from_utf8_lossy(&back).contains("exceeds"),
            "{back:?}"
        );
    }
    // After authenticating, garbage is still only garbage.
    let (back, _) = poke_as(&srv.addr, Some(SECRET), &noise(9, 4096));
    assert!(
        String::from_utf8_lossy(&back).contains("not an orchestrate-worker peer"),
        "{back:?}"
    );
    still_serves(&mut srv);
}

fn hello_frame(json: &str) -> Vec<u8> {
    frame(Kind::Hello as u8, VERSION, json.as_bytes())
}

#[test]
fn hostile_parameters_are_refused() {
    let mut srv = Server::start(&[]);
    let huge = r#"{"params":{"pattern":"pingpong","protocol":"tcp","depth":1,"max_size_bytes":1099511627776,"timeout_ms":1000,"idle_timeout_ms":1000,"udp_port":null},"software":"test"}"#;
    let (back, _) = poke_as(&srv.addr, Some(SECRET), &hello_frame(huge));
    assert!(
        String::from_utf8_lossy(&back).contains("rejected parameters"),
        "{back:?}"
    );
    let bad_json = "{not json";
    let (back, _) = poke_as(&srv.addr, Some(SECRET), &hello_frame(bad_json));
    assert!(
        String::from_utf8_lossy(&back).contains("malformed"),
        "{back:?}"
    );
    still_serves(&mut srv);
}

#[test]
fn client_of_another_version() {
    let mut srv = Server::start(&[]);
    let r = client(
        &[
            "pingpong",
            "--connect",
            &srv.addr,
            "--size",
            "1",
            "--exchanges",
            "10",
            "--protocol-version",
            "99",
            "--timeout",
            PATIENT_TIMEOUT_ARG,
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(1));
    let e = r.error().expect("error record");
    assert!(e.contains("version mismatch") && e.contains("v99"), "{e}");
    // Refused at the first frame, not left to time out: the whole process run is prompt.
    assert!(
        r.wall < PROCESS_SLACK,
        "took {:?} (--timeout {PATIENT_TIMEOUT:?})",
        r.wall
    );
    still_serves(&mut srv);
}

#[test]
fn server_of_another_version() {
    let srv = Server::start(&["--protocol-version", "7"]);
    let r = client(
        &[
            "pingpong",
            "--connect",
            &srv.addr,
            "--size",
            "1",
            "--exchanges",
            "10",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(1));
    let e = r.error().expect("error record");
    assert!(e.contains("version mismatch"), "{e}");
}

#[test]
fn nobody_listening() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let r = client(
        &[
            "pingpong",
            "--connect",
            &format!("127.0.0.1:{port}"),
            "--size",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(1));
    assert!(r.error().unwrap().contains("refused"), "{:?}", r.error());
}

#[test]
fn garbage_from_the_server() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = s.write_all(&noise(42, 512));
        // Keep the connection open until the client has closed it: it must judge the garbage,
        // not an early end of the connection.
        s.set_read_timeout(Some(EVENT_LIMIT)).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    });
    let r = client(&["token", "--connect", &addr, "--size", "4"], LIMIT);
    t.join().unwrap();
    assert_eq!(r.code, Some(1));
    assert!(
        r.error()
            .unwrap()
            .contains("not an orchestrate-worker peer"),
        "{:?}",
        r.error()
    );
}

#[test]
fn silent_server() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let (done, client_done) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        let (_s, _) = l.accept().unwrap();
        // Silence is what is under test: say nothing, and hold the connection open until the
        // client has given up.
        let _ = client_done.recv_timeout(LIMIT);
    });
    let r = client(
        &[
            "token",
            "--connect",
            &addr,
            "--size",
            "4",
            "--timeout",
            SHORT_TIMEOUT_ARG,
        ],
        LIMIT,
    );
    done.send(()).unwrap();
    assert_eq!(r.code, Some(1));
    assert!(r.error().unwrap().contains("timed out"), "{:?}", r.error());
    // The client's wait for the challenge starts after its process did, and its timeout
    // cannot fire early; then it writes its record and exits.
    assert!(
        r.wall >= SHORT_TIMEOUT && r.wall < SHORT_TIMEOUT + PROCESS_SLACK,
        "took {:?} with --timeout {SHORT_TIMEOUT:?}",
        r.wall
    );
    t.join().unwrap();
}

#[test]
fn go_stdin_closed_is_an_error() {
    let srv = Server::start(&[]);
    // stdin is /dev/null: EOF before any go line.
    let r = client(
        &[
            "token",
            "--connect",
            &srv.addr,
            "--size",
            "4",
            "--go",
            "stdin",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.error().unwrap().contains("stdin closed"),
        "{:?}",
        r.error()
    );
}

#[test]
fn sizes_beyond_the_cap_are_refused_before_connecting() {
    let r = client(
        &["pingpong", "--connect", "127.0.0.1:9", "--size", "1G"],
        LIMIT,
    );
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("outside"), "{}", r.stderr);
    let r = client(
        &[
            "pipeline",
            "--connect",
            "127.0.0.1:9",
            "--size",
            "64K",
            "--depth",
            "100",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("in flight"), "{}", r.stderr);
}

#[test]
fn sessions_beyond_the_limit_are_refused_with_a_reason() {
    let mut srv = Server::start(&["--max-sessions", "1"]);
    let mut first = common::worker()
        .args([
            "token",
            "--connect",
            &srv.addr,
            "--size",
            "4",
            "--exchanges",
            "5",
            "--go",
            "stdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::lines(first.stdout.take().unwrap());
    // The first session holds its slot while it waits at the barrier.
    out.recv_timeout(Duration::from_secs(10))
        .expect("ready line");
    let r = client(
        &[
            "token",
            "--connect",
            &srv.addr,
            "--size",
            "4",
            "--exchanges",
            "5",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(1));
    assert!(
        r.error().unwrap().contains("server busy"),
        "{:?}",
        r.error()
    );
    writeln!(first.stdin.as_mut().unwrap()).unwrap();
    assert!(first.wait().unwrap().success());
    // Its slot is free once serve logs the session's end.
    srv.wait_log("session 1 from", EVENT_LIMIT)
        .expect("serve logs the end of the first session");
    still_serves(&mut srv);
}

#[test]
fn serve_survives_a_closed_stdout() {
    let mut srv = Server::start(&["--records"]);
    // Stop reading the server's stdout: the pipe closes once the reader notices.
    drop(std::mem::replace(
        &mut srv.stdout,
        std::sync::mpsc::channel().1,
    ));
    for _ in 0..3 {
        still_serves(&mut srv);
    }
    assert!(srv.alive());
}

#[test]
fn a_server_that_ends_a_copy_is_named_with_its_reason_not_the_broken_pipe() {
    // The server's spool directory vanishes after it starts: the copy's file cannot be made,
    // and the server ends the trial while the client is still sending.
    let spool =
        std::env::temp_dir().join(format!("orchestrate-faults-spool-{}", std::process::id()));
    std::fs::create_dir_all(&spool).unwrap();
    let mut srv = Server::start(&["--spool-dir", spool.to_str().unwrap()]);
    std::fs::remove_dir(&spool).unwrap();
    let source =
        std::env::temp_dir().join(format!("orchestrate-faults-src-{}", std::process::id()));
    std::fs::create_dir_all(&source).unwrap();
    let r = client(
        &[
            "filecopy",
            "--connect",
            &srv.addr,
            // Far more than the loopback socket buffers hold: the client is mid-send.
            "--size",
            "64M",
            "--dir",
            source.to_str().unwrap(),
            "--trials",
            "1",
            "--timeout",
            PATIENT_TIMEOUT_ARG,
        ],
        LIMIT,
    );
    let _ = std::fs::remove_dir_all(&source);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    let e = error_of(&r.stdout);
    assert!(
        e.contains("peer reported")
            && e.contains("creating")
            && e.contains(spool.to_str().unwrap()),
        "the client's error does not give the server's reason: {e}"
    );
    still_serves(&mut srv);
}
