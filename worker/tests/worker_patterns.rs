//! Every pattern on loopback, its figures checked against an independent count: what the
//! server saw (returned over the session, and printed by `serve --records` on its own stdout)
//! and the wall time the test itself measured.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{EVENT_LIMIT, PROCESS_SLACK, Run, Server, WAKE_SLACK, client, f, u};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// Duration of the tests' time-bounded trials (`--duration`).
const TRIAL: Duration = Duration::from_millis(300);
const TRIAL_ARG: &str = "0.3";

fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// A duration-bounded trial cannot end before its duration; it ends one message and a few
/// wake-ups after it.
fn ends_on_time(elapsed_ns: u64, duration: Duration, what: &str) {
    let el = Duration::from_nanos(elapsed_ns);
    assert!(
        el >= duration && el < duration + WAKE_SLACK,
        "{what}: a {duration:?} trial took {el:?} (slack {WAKE_SLACK:?})"
    );
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// Run a client and check what holds for every successful run: exit 0, records paired by
/// trial, timestamps inside the test's own wall-clock window, elapsed consistent with them.
fn run_ok(args: &[&str]) -> Run {
    let before = now_ns();
    let r = client(args, LIMIT);
    let after = now_ns();
    assert_eq!(
        r.code,
        Some(0),
        "{args:?} failed: {}\n{}",
        r.stdout,
        r.stderr
    );
    assert!(!r.records.is_empty(), "no records from {args:?}");
    for rec in &r.records {
        assert!(rec["error"].is_null(), "error record: {rec}");
        let (s, e, el) = (
            u(rec, "start_unix_ns"),
            u(rec, "end_unix_ns"),
            u(rec, "elapsed_ns"),
        );
        // Both processes read the same clock, the worker's reads between the test's two:
        // no slack.
        assert!(
            s >= before && e <= after,
            "{rec} outside the test window {before}..{after}"
        );
        assert!(
            e >= s && e - s == el,
            "end - start must equal elapsed: {rec}"
        );
        assert!(
            el as u128 <= r.wall.as_nanos(),
            "elapsed longer than the process ran: {rec}"
        );
    }
    assert_eq!(r.role("client").len(), r.role("server").len());
    r
}

fn pairs(r: &Run) -> Vec<(&Value, &Value)> {
    r.role("client")
        .into_iter()
        .zip(r.role("server"))
        .inspect(|(c, s)| assert_eq!(c["trial"], s["trial"]))
        .collect()
}

#[test]
fn pingpong_counts_match_the_server_and_latency_is_half_the_round_trip() {
    let srv = Server::start(&["--records"]);
    let r = run_ok(&[
        "pingpong",
        "--connect",
        &srv.addr,
        "--sizes",
        "1,1000",
        "--exchanges",
        "500",
        "--trials",
        "2",
        "--warmup",
        "5",
    ]);
    let p = pairs(&r);
    assert_eq!(p.len(), 4);
    // Same host, same clock: the server stamps its welcome inside the exchange, so the
    // handshake's offset estimate is within half its own round trip (and 1 ns for the two
    // halvings rounded down).
    let c0 = p[0].0;
    let (off, rtt) = (
        c0["peer_clock_offset_ns"].as_i64().unwrap(),
        u(c0, "peer_clock_rtt_ns"),
    );
    assert!(
        off.unsigned_abs() <= rtt / 2 + 1,
        "offset {off} ns, rtt {rtt} ns"
    );
    for (c, s) in &p {
        let size = u(c, "size_bytes");
        assert_eq!(u(c, "messages"), 500);
        assert_eq!(u(s, "messages"), 500, "server saw a different count");
        assert_eq!(
            u(s, "bytes"),
            500 * size,
            "server received a different byte count"
        );
        let half_rtt_us = u(c, "elapsed_ns") as f64 / 1000.0 / (2.0 * 500.0);
        assert!((f(c, "latency_us") - half_rtt_us).abs() < 1e-6);
        let mbit = size as f64 * 8.0 / f(c, "latency_us");
        assert!((f(c, "throughput_mbit_s") - mbit).abs() / mbit < 1e-9);
    }
    // The server's own stdout, a channel independent of the client, reports the same counts.
    let mut seen = Vec::new();
    while let Ok(l) = srv.stdout.recv_timeout(EVENT_LIMIT) {
        seen.push(serde_json::from_str::<Value>(&l).unwrap());
        if seen.len() == 4 {
            break;
        }
    }
    assert_eq!(seen.len(), 4, "serve --records printed {seen:?}");
    for (rec, (_, s)) in seen.iter().zip(&p) {
        assert_eq!(rec["bytes"], s["bytes"]);
        assert_eq!(rec["messages"], s["messages"]);
    }
}

/// The numbers after `prefix` in the `--verbose` line that starts with it:
/// `... N messages in T ns`.
fn said(stderr: &str, prefix: &str) -> (u64, u64) {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("orchestrate-worker: ")?.strip_prefix(prefix))
        .find_map(|rest| {
            let w: Vec<&str> = rest.split_whitespace().collect();
            match w[..] {
                [n, "messages", "in", t, "ns"] => Some((n.parse().ok()?, t.parse().ok()?)),
                _ => None,
            }
        })
        .unwrap_or_else(|| panic!("no {prefix:?}... messages in ... ns line in {stderr}"))
}

#[test]
fn pingpong_sizes_trials_by_time_budget() {
    let srv = Server::start(&[]);
    let budget = Duration::from_millis(200);
    let r = run_ok(&[
        "pingpong",
        "--connect",
        &srv.addr,
        "--size",
        "64",
        "--trial-time",
        &budget.as_secs_f64().to_string(),
        "--trials",
        "1",
        "--verbose",
    ]);
    let (c, s) = pairs(&r)[0];
    // How many messages fill the budget is the client's rule, tested beside it
    // (`a_budget_is_filled_at_the_warm_ups_pace`); here, that the trial used it with the pace
    // its own warm-up had: the budget over the warm-up's time per message, rounded up.
    let (n, t) = said(&r.stderr, "warm-up at 64 B: ");
    assert!(n > 0, "{}", r.stderr);
    let per_message = t as f64 / n as f64;
    let expect = (budget.as_nanos() as f64 / per_message.max(1.0)).ceil() as u64;
    let messages = u(c, "messages");
    assert_eq!(
        messages,
        expect.max(3),
        "a {budget:?} budget at {per_message} ns a message (warm-up: {n} in {t} ns)"
    );
    assert_eq!(messages, u(s, "messages"));
}

#[test]
fn pingpong_over_udp() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "pingpong",
        "--connect",
        &srv.addr,
        "--protocol",
        "udp",
        "--size",
        "512",
        "--exchanges",
        "300",
        "--trials",
        "1",
    ]);
    let (c, s) = pairs(&r)[0];
    assert_eq!(c["protocol"], "udp");
    assert_eq!(u(s, "messages"), 300);
    assert_eq!(u(s, "bytes"), 300 * 512);
}

#[test]
fn netpipe_format_output_parses_and_follows_the_schedule() {
    let srv = Server::start(&[]);
    let r = client(
        &[
            "pingpong",
            "--connect",
            &srv.addr,
            "--end",
            "256",
            "--trial-time",
            "0.005",
            "--trials",
            "2",
            "--format",
            "netpipe",
            "--verbose",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let tables = orchestrate_worker::netpipe::parse(&r.stdout).expect("own output parses");
    assert_eq!(tables.len(), 1);
    let sizes: Vec<u64> = tables[0].rows.iter().map(|r| r.bytes_per_block).collect();
    assert_eq!(sizes, orchestrate_worker::netpipe::schedule(1, 256, 3));
    // Trials are numbered over all sizes, two per size: a row's time is the better of its
    // two trials' half round trips, as the client reported them, printed to the nanosecond.
    for (i, row) in tables[0].rows.iter().enumerate() {
        let best = (2 * i..2 * i + 2)
            .map(|t| {
                let (m, el) = said(
                    &r.stderr,
                    &format!("trial {t} at {} B: ", row.bytes_per_block),
                );
                el as f64 / (2.0 * m as f64) / 1e9
            })
            .fold(f64::INFINITY, f64::min);
        assert!(
            best > 0.0 && (row.time_s - best).abs() <= 0.5e-9 + best * 1e-12,
            "{row:?}: the best trial's half round trip was {best} s"
        );
        let mbit = row.bytes_per_block as f64 * 8.0 / row.time_s / 1e6;
        assert!((row.mbit_s - mbit).abs() / mbit < 1e-3, "{row:?}");
    }
}

#[test]
fn stream_receiver_counts_every_byte() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "stream",
        "--connect",
        &srv.addr,
        "--size",
        "64K",
        "--exchanges",
        "300",
        "--trials",
        "2",
    ]);
    for (c, s) in pairs(&r) {
        assert_eq!(u(c, "bytes"), 300 * 65536);
        assert_eq!(
            u(s, "bytes"),
            300 * 65536,
            "receiver saw a different byte count"
        );
        assert_eq!(u(s, "messages"), 300);
        // The sender's clock runs until the receiver's report arrived: never shorter.
        assert!(u(c, "elapsed_ns") >= u(s, "elapsed_ns") / 2);
        let mbit = u(s, "bytes") as f64 * 8.0 / (u(s, "elapsed_ns") as f64 / 1e3);
        assert!((f(s, "throughput_mbit_s") - mbit).abs() / mbit < 1e-9);
    }
}

#[test]
fn stream_for_a_duration_ends_on_time() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "stream",
        "--connect",
        &srv.addr,
        "--size",
        "1K",
        "--duration",
        TRIAL_ARG,
        "--trials",
        "1",
        "--warmup",
        "0",
    ]);
    let (c, s) = pairs(&r)[0];
    // The receiver's clock starts before it accepts the trial, the sender's after; the
    // sender's last block goes after its duration, and the receiver stops on it.
    ends_on_time(u(s, "elapsed_ns"), TRIAL, "stream at the receiver");
    assert_eq!(u(c, "bytes"), u(s, "bytes"));
    // The receiver, which times a stream, samples its progress about every 10 ms: one sample
    // per interval in which data arrived, so at most one per interval and the end; a stall
    // of the loaded machine merges intervals, hence at least a third of them.
    let (offsets, bytes) = progress(s);
    let intervals = u(s, "elapsed_ns") / orchestrate_worker::progress::INTERVAL_NS;
    assert!(
        (intervals / 3..=intervals + 1).contains(&(offsets.len() as u64)),
        "{} samples in {intervals} intervals",
        offsets.len()
    );
    assert_eq!(*offsets.last().unwrap(), u(s, "elapsed_ns"));
    assert_eq!(*bytes.last().unwrap(), u(s, "bytes"));
}

/// A record's progress samples, checked to be a delivery curve: as many times as counts,
/// both ascending, no two samples less than 10 ms apart but the last.
fn progress(rec: &serde_json::Value) -> (Vec<u64>, Vec<u64>) {
    let list = |name: &str| -> Vec<u64> {
        rec[name]
            .as_array()
            .unwrap_or_else(|| panic!("no {name} in {rec}"))
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let (o, b) = (list("progress_offset_ns"), list("progress_bytes"));
    assert_eq!(o.len(), b.len());
    assert!(o.windows(2).all(|w| w[0] < w[1]), "{o:?}");
    assert!(b.windows(2).all(|w| w[0] <= w[1]), "{b:?}");
    let spaced = &o[..o.len().saturating_sub(1)];
    assert!(
        spaced
            .iter()
            .enumerate()
            .all(|(i, &t)| t >= 10_000_000 * (i as u64 + 1)),
        "{o:?}"
    );
    (o, b)
}

#[test]
fn token_throughput_is_tokens_times_size_over_elapsed() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "token",
        "--connect",
        &srv.addr,
        "--sizes",
        "4,8K",
        "--exchanges",
        "1000",
        "--trials",
        "2",
    ]);
    assert_eq!(r.role("client").len(), 4, "one record per run and size");
    for (c, s) in pairs(&r) {
        let size = u(c, "size_bytes");
        assert_eq!(u(c, "messages"), 1000);
        assert_eq!(u(s, "bytes"), 1000 * size);
        let expect = 1000.0 * size as f64 * 8.0 / (u(c, "elapsed_ns") as f64 / 1e9) / 1e6;
        assert!((f(c, "throughput_mbit_s") - expect).abs() / expect < 1e-9);
        // The client times a token trial, and its samples count whole tokens.
        let (offsets, bytes) = progress(c);
        assert_eq!(*offsets.last().unwrap(), u(c, "elapsed_ns"));
        assert_eq!(*bytes.last().unwrap(), 1000 * size);
        assert!(bytes.iter().all(|b| b % size == 0), "{bytes:?}");
    }
}

#[test]
fn a_counted_token_run_held_to_a_minimum_time_goes_on_past_its_count() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "token",
        "--connect",
        &srv.addr,
        "--size",
        "64",
        "--exchanges",
        "5",
        "--min-duration",
        TRIAL_ARG,
        "--trials",
        "1",
        "--warmup",
        "0",
    ]);
    let (c, s) = pairs(&r)[0];
    ends_on_time(u(c, "elapsed_ns"), TRIAL, "held to a minimum time");
    assert!(
        u(c, "messages") > 5,
        "five tokens on loopback take far less than 0.3 s"
    );
    assert_eq!(u(s, "messages"), u(c, "messages"));
}

#[test]
fn token_for_a_duration() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "token",
        "--connect",
        &srv.addr,
        "--size",
        "64",
        "--duration",
        TRIAL_ARG,
        "--trials",
        "1",
    ]);
    let (c, s) = pairs(&r)[0];
    ends_on_time(u(c, "elapsed_ns"), TRIAL, "token");
    assert_eq!(u(c, "messages"), u(s, "messages"));
}

#[test]
fn pipeline_counts_match_and_depth_lowers_time_per_message() {
    let srv = Server::start(&[]);
    let per_msg = |depth: &str| {
        let r = run_ok(&[
            "pipeline",
            "--connect",
            &srv.addr,
            "--size",
            "64",
            "--depth",
            depth,
            "--exchanges",
            "4000",
            "--trials",
            "3",
        ]);
        let mut best = f64::MAX;
        for (c, s) in pairs(&r) {
            assert_eq!(u(c, "messages"), 4000);
            assert_eq!(u(s, "messages"), 4000, "server answered a different count");
            assert_eq!(u(s, "bytes"), 4000 * 64);
            assert_eq!(u(c, "depth").to_string(), depth);
            let per = u(c, "elapsed_ns") as f64 / 4000.0 / 1e3;
            assert!((f(c, "latency_us") - per).abs() < 1e-9);
            best = best.min(per);
        }
        best
    };
    let d1 = per_msg("1");
    let d34 = per_msg("34");
    assert!(
        d34 < d1,
        "depth 34: {d34} µs/message, depth 1: {d1} µs/message"
    );
}

#[test]
fn pipeline_for_a_duration() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "pipeline",
        "--connect",
        &srv.addr,
        "--size",
        "64",
        "--depth",
        "8",
        "--duration",
        TRIAL_ARG,
        "--trials",
        "1",
    ]);
    let (c, s) = pairs(&r)[0];
    assert_eq!(u(c, "messages"), u(s, "messages"));
    ends_on_time(u(c, "elapsed_ns"), TRIAL, "pipeline");
}

/// Run a client and sample its CPU time (user + system, seconds) from /proc while it runs.
fn run_with_cpu(args: &[&str]) -> (Run, f64) {
    use std::process::Stdio;
    // SAFETY: sysconf has no preconditions.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut child = common::worker()
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::lines(child.stdout.take().unwrap());
    let stat = format!("/proc/{}/stat", child.id());
    let mut cpu = 0.0;
    let start = std::time::Instant::now();
    let code = loop {
        if let Ok(s) = std::fs::read_to_string(&stat) {
            // Fields after the parenthesised command name: state first, utime and stime are
            // the 12th and 13th.
            let rest = &s[s.rfind(')').unwrap() + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() > 12 && f[0] != "Z" {
                cpu = (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / tick;
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        assert!(start.elapsed() < LIMIT, "client ran too long");
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = start.elapsed();
    let records: Vec<Value> = common::drain(&out)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let run = Run {
        code,
        records,
        stdout: String::new(),
        stderr: String::new(),
        wall,
    };
    (run, cpu)
}

/// How much of a paced run's duration its client may spend on a core: a client that spun
/// instead of sleeping to each message's due time would use the whole duration (its sender
/// alone); pacing 2000 messages a second costs a few per cent.
const PACED_CPU_SHARE: f64 = 0.5;

#[test]
fn load_is_paced_without_spinning_and_counts_match() {
    let srv = Server::start(&[]);
    let (rate, duration) = (2000u64, Duration::from_secs(1));
    let (r, cpu) = run_with_cpu(&[
        "load",
        "--connect",
        &srv.addr,
        "--size",
        "1K",
        "--rate",
        &rate.to_string(),
        "--duration",
        &duration.as_secs_f64().to_string(),
    ]);
    assert_eq!(r.code, Some(0));
    let (c, s) = pairs(&r)[0];
    assert_eq!(u(c, "messages"), 2000);
    assert_eq!(u(s, "messages"), 2000);
    assert_eq!(u(s, "bytes"), 2000 * 1024);
    assert_eq!(u(c, "lost"), 0);
    // The last of the 2000 messages is due at 1999/2000 s, and the trial ends with its echo.
    let last_due = ns(duration) - 1_000_000_000 / rate;
    let el = u(c, "elapsed_ns");
    assert!(
        el >= last_due && el < ns(duration + WAKE_SLACK),
        "a {duration:?} schedule took {el} ns"
    );
    assert!((f(c, "offered_mbit_s") - 2000.0 * 1024.0 * 8.0 / 1e6).abs() < 1e-9);
    let (p50, p99, max) = (
        f(c, "latency_p50_us"),
        f(c, "latency_p99_us"),
        f(c, "latency_max_us"),
    );
    assert!(p50 > 0.0 && p50 <= p99 && p99 <= max, "{c}");
    assert!(
        cpu < PACED_CPU_SHARE * duration.as_secs_f64(),
        "the paced client used {cpu} s of CPU in a {duration:?} run: spinning?"
    );
}

#[test]
fn load_rate_in_bits() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "load",
        "--connect",
        &srv.addr,
        "--size",
        "1000",
        "--rate",
        "8mbit",
        "--duration",
        "0.5",
    ]);
    let (c, s) = pairs(&r)[0];
    // 8 Mbit/s of 1000-byte messages is 1000 messages/s: 500 in 0.5 s.
    assert_eq!(u(c, "messages"), 500);
    assert_eq!(u(s, "messages"), 500);
}

#[test]
fn load_over_udp_reports_loss_from_the_server_count() {
    let srv = Server::start(&[]);
    let r = run_ok(&[
        "load",
        "--connect",
        &srv.addr,
        "--protocol",
        "udp",
        "--size",
        "256",
        "--rate",
        "4000",
        "--duration",
        "0.5",
    ]);
    let (c, s) = pairs(&r)[0];
    assert_eq!(u(c, "messages"), 2000);
    assert_eq!(u(c, "lost"), u(c, "messages") - u(s, "messages"));
    assert!(
        u(c, "lost") <= 100,
        "loopback lost {} of 2000",
        u(c, "lost")
    );
    assert_eq!(u(s, "bytes"), u(s, "messages") * 256);
}

#[test]
fn filecopy_lands_every_byte_on_the_server_disk() {
    let spool = std::env::temp_dir().join(format!("owk-spool-{}", std::process::id()));
    std::fs::create_dir_all(&spool).unwrap();
    let srv = Server::start(&["--spool-dir", spool.to_str().unwrap()]);
    let r = run_ok(&[
        "filecopy",
        "--connect",
        &srv.addr,
        "--size",
        "3M",
        "--trials",
        "2",
        "--drop-cache",
    ]);
    for (c, s) in pairs(&r) {
        assert_eq!(u(c, "bytes"), 3 << 20);
        assert_eq!(u(s, "bytes"), 3 << 20);
        assert!(u(c, "elapsed_ns") > 0);
    }
    // The copies are removed after timing: the spool stays empty.
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0);
    std::fs::remove_dir_all(&spool).unwrap();
}

#[test]
fn filecopy_of_a_given_file() {
    let srv = Server::start(&[]);
    let src = std::env::temp_dir().join(format!("owk-src-{}", std::process::id()));
    std::fs::write(&src, vec![7u8; 123_457]).unwrap();
    let r = run_ok(&[
        "filecopy",
        "--connect",
        &srv.addr,
        "--file",
        src.to_str().unwrap(),
        "--trials",
        "1",
    ]);
    let (c, s) = pairs(&r)[0];
    assert_eq!(u(c, "size_bytes"), 123_457);
    assert_eq!(u(s, "bytes"), 123_457);
    assert!(src.exists(), "a given file is never removed");
    std::fs::remove_file(&src).unwrap();
}

#[test]
fn concurrent_sessions_on_one_server() {
    let srv = Server::start(&[]);
    let addr = srv.addr.clone();
    let runs: Vec<_> = (0..6)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let pattern = ["pingpong", "token", "stream"][i % 3];
                client(
                    &[
                        pattern,
                        "--connect",
                        &addr,
                        "--size",
                        "256",
                        "--exchanges",
                        "2000",
                        "--trials",
                        "1",
                    ],
                    LIMIT,
                )
            })
        })
        .collect();
    for h in runs {
        let r = h.join().unwrap();
        assert_eq!(r.code, Some(0), "{}", r.stdout);
        let (c, s) = pairs(&r)[0];
        assert_eq!(u(c, "bytes"), u(s, "bytes"));
    }
}

#[test]
fn go_stdin_waits_for_the_line() {
    use std::io::Write;
    use std::process::Stdio;
    let srv = Server::start(&[]);
    let mut child = common::worker()
        .args([
            "token",
            "--connect",
            &srv.addr,
            "--size",
            "4",
            "--exchanges",
            "10",
            "--trials",
            "1",
            "--go",
            "stdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::lines(child.stdout.take().unwrap());
    let ready: Value =
        serde_json::from_str(&out.recv_timeout(Duration::from_secs(10)).unwrap()).unwrap();
    assert_eq!(ready["ready"], true);
    // Nothing runs before the go line. Silence is what is under test, so the test watches
    // for a while: ten 4-byte tokens take well under a millisecond, and a client that ignored
    // its barrier would have printed its record a few wake-ups later; the watch lasts as long
    // as a process is allowed to be late.
    assert!(out.recv_timeout(PROCESS_SLACK).is_err());
    let go_at = now_ns();
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
    let rec: Value = serde_json::from_str(&out.recv_timeout(EVENT_LIMIT).unwrap()).unwrap();
    // Same clock: the trial's start is read after the test's.
    assert!(
        u(&rec, "start_unix_ns") >= go_at,
        "started before the go line"
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn load_beyond_capacity_still_ends_with_its_duration() {
    let srv = Server::start(&[]);
    // 10^12 messages/s cannot be offered: the sender falls behind and must stop on time.
    let r = run_ok(&[
        "load",
        "--connect",
        &srv.addr,
        "--size",
        "64",
        "--rate",
        "1000000000000",
        "--duration",
        TRIAL_ARG,
    ]);
    let (c, s) = pairs(&r)[0];
    // It stops at its overtime, and the trial ends once the echoes of what it sent (at most
    // the socket buffers' worth) are back.
    let overtime = Duration::from_nanos(orchestrate_worker::patterns::load::overtime_ns(ns(TRIAL)));
    let el = Duration::from_nanos(u(c, "elapsed_ns"));
    assert!(
        el >= overtime && el < overtime + WAKE_SLACK,
        "a {TRIAL:?} run (overtime {overtime:?}) took {el:?}"
    );
    assert_eq!(u(c, "messages"), u(s, "messages"));
    assert!(
        r.wall < overtime + PROCESS_SLACK,
        "the client ran {:?} for a trial of {overtime:?}",
        r.wall
    );
}

#[test]
fn probe_describes_this_node() {
    let out = std::process::Command::new(common::BIN)
        .arg("probe")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("probe prints JSON");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(v["kernel"]["release"], release.trim());
    let lo = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "lo")
        .expect("loopback interface listed");
    assert_eq!(lo["mtu"].as_i64(), Some(65536));
    assert!(
        lo["addresses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "127.0.0.1/8"),
        "{lo}"
    );
    for k in ["bonding", "netem", "tun", "ip_forward", "clocksource"] {
        assert!(v.get(k).is_some(), "{k} missing");
    }
    assert_eq!(
        v["tun"]["device"].as_bool(),
        Some(std::path::Path::new("/dev/net/tun").exists())
    );
}

#[test]
fn serve_stops_on_sigterm() {
    let mut srv = Server::start(&[]);
    // Serve looks for the request at least once a poll, and has no session to wait for.
    let within = Duration::from_millis(orchestrate_worker::gate::POLL_MS as u64) + PROCESS_SLACK;
    let start = std::time::Instant::now();
    // SAFETY: signalling a child this test started.
    unsafe { libc::kill(srv.child.id() as libc::pid_t, libc::SIGTERM) };
    loop {
        if let Some(st) = srv.child.try_wait().unwrap() {
            assert!(st.success(), "serve exited with {st}");
            break;
        }
        assert!(
            start.elapsed() < within,
            "serve still running {within:?} after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn start_at_waits_for_the_wall_clock() {
    let srv = Server::start(&[]);
    // Far enough ahead for the client to start and reach its barrier first.
    let at = now_ns() + ns(PROCESS_SLACK);
    let at_s = at.to_string();
    let r = client(
        &[
            "token",
            "--connect",
            &srv.addr,
            "--size",
            "4",
            "--exchanges",
            "10",
            "--trials",
            "1",
            "--warmup",
            "0",
            "--start-at",
            &at_s,
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    let ready: Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(ready["ready"], true);
    assert!(
        u(&ready, "unix_ns") < at,
        "the client reached its barrier {} ns after the start time: too late to test it",
        u(&ready, "unix_ns") - at
    );
    let c = r.role("client")[0];
    let start = u(c, "start_unix_ns");
    // Never early; late by one wake-up and the trial's acknowledgement.
    assert!(start >= at, "started {} ns early", at - start);
    assert!(
        start < at + ns(WAKE_SLACK),
        "started {} ms late",
        (start - at) / 1_000_000
    );
}

#[test]
fn stream_netpipe_rows_use_the_receivers_time() {
    let srv = Server::start(&["--records"]);
    let r = client(
        &[
            "stream",
            "--connect",
            &srv.addr,
            "--sizes",
            "4K,64K",
            "--exchanges",
            "200",
            "--trials",
            "2",
            "--format",
            "netpipe",
        ],
        LIMIT,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let t = orchestrate_worker::netpipe::parse(&r.stdout).unwrap();
    let sizes: Vec<u64> = t[0].rows.iter().map(|r| r.bytes_per_block).collect();
    assert_eq!(sizes, vec![4096, 65536]);
    // What the receiver timed, from its own stdout: two trials of each size.
    let received: Vec<Value> = (0..4)
        .map(|_| {
            let l = srv
                .stdout
                .recv_timeout(EVENT_LIMIT)
                .expect("serve --records");
            serde_json::from_str(&l).unwrap()
        })
        .collect();
    for row in &t[0].rows {
        // The row's time is the receiver's time per block in the better of the size's
        // trials, printed to the nanosecond; and no block crosses loopback faster than
        // 100 Gbit/s.
        let best = received
            .iter()
            .filter(|rec| u(rec, "size_bytes") == row.bytes_per_block)
            .map(|rec| u(rec, "elapsed_ns") as f64 / u(rec, "messages") as f64 / 1e9)
            .fold(f64::INFINITY, f64::min);
        assert!(
            (row.time_s - best).abs() <= 0.5e-9 + best * 1e-12,
            "{row:?}: the receiver's best time per block was {best} s"
        );
        let fastest = row.bytes_per_block as f64 * 8.0 / 100e9;
        assert!(row.time_s > fastest, "{row:?}");
        // The rate is the block over its time: read back from the printed time it can
        // differ by half a nanosecond's share.
        let rate = row.bytes_per_block as f64 * 8.0 / row.time_s / 1e6;
        let rounding = 0.5e-9 / row.time_s + 1e-6;
        assert!(
            (row.mbit_s / rate - 1.0).abs() <= rounding,
            "{row:?}: {rate} Mbit/s"
        );
    }
}
