//! The collectives on loopback, every rank a process of its own: each algorithm at even and
//! odd numbers of ranks gives the right result (every rank checks its output after the timed
//! iterations), sends what the algorithm sends (counted here from the algorithm's structure,
//! not by the worker's code), and times what it says it timed. Ranks that do not hold the run's
//! secret never join.

mod common;

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use common::{BIN, SECRET};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// A loopback address of its own for each world, so that tests running at once never meet.
fn addresses(n: usize) -> Vec<String> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let k = NEXT.fetch_add(1, Ordering::Relaxed);
    let (a, b) = ((std::process::id() % 200) + 20, k % 250 + 1);
    (0..n)
        .map(|r| format!("127.{a}.{b}.{}:7400", r + 1))
        .collect()
}

/// One rank's outcome.
struct Rank {
    code: Option<i32>,
    records: Vec<Value>,
    stderr: String,
}

fn spawn(rank: usize, peers: &[String], args: &[&str], secret: &str, go: bool) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.env(orchestrate_worker::auth::SECRET_ENV, secret)
        .args(&args[..1])
        .args(["--rank", &rank.to_string(), "--peers", &peers.join(",")])
        .args(&args[1..])
        .stdin(if go { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().expect("start a rank")
}

fn finish(children: Vec<Child>) -> Vec<Rank> {
    let start = Instant::now();
    children
        .into_iter()
        .map(|mut c| {
            while c.try_wait().expect("try_wait").is_none() {
                if start.elapsed() > LIMIT {
                    let _ = c.kill();
                    panic!("a rank still running after {LIMIT:?}");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let out = c.wait_with_output().expect("output");
            let stdout = String::from_utf8_lossy(&out.stdout);
            Rank {
                code: out.status.code(),
                records: stdout
                    .lines()
                    .filter(|l| l.starts_with('{') && !l.contains("\"ready\""))
                    .map(|l| serde_json::from_str(l).expect("JSON"))
                    .collect(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .collect()
}

/// Runs `n` ranks of `args` (the collective's name first) to the end.
fn run(n: usize, args: &[&str]) -> Vec<Rank> {
    let peers = addresses(n);
    let children = (0..n)
        .map(|r| spawn(r, &peers, args, SECRET, false))
        .collect();
    finish(children)
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Payload bytes rank `r` of `n` sends in one iteration at `size`, from the algorithm's
/// structure.
fn expected_bytes(collective: &str, algorithm: &str, r: usize, n: usize, size: u64) -> u64 {
    let n64 = n as u64;
    match (collective, algorithm) {
        ("alltoall", _) => (n64 - 1) * size,
        ("allreduce", "ring") => {
            // Reduce-scatter sends every block but block r + 1, allgather every one but
            // r + 2; the first count mod n blocks hold one element more.
            let count = size / 4;
            let block = |b: u64| 4 * (count / n64 + u64::from(b < count % n64));
            let (b1, b2) = ((r as u64 + 1) % n64, (r as u64 + 2) % n64);
            2 * size - block(b1) - block(b2)
        }
        ("allreduce", "recursive-doubling") => {
            let power = 1usize << n.ilog2();
            let extra = n - power;
            let steps = power.ilog2() as u64 * size;
            match r {
                r if r < 2 * extra && r % 2 == 0 => size,
                r if r < 2 * extra => steps + size,
                _ => steps,
            }
        }
        ("bcast", _) => {
            // Binomial tree from rank 0: rank v sends to v + 2^k for every 2^k below its
            // lowest set bit.
            let mut children = 0;
            let mut mask = 1;
            while mask < n && r & mask == 0 {
                if r + mask < n {
                    children += 1;
                }
                mask <<= 1;
            }
            children * size
        }
        (c, a) => panic!("no count for {c} {a}"),
    }
}

fn check_world(n: usize, args: &[&str], sizes: &[u64], iterations: u64) -> Vec<Rank> {
    let before = Instant::now();
    let ranks = run(n, args);
    let wall = before.elapsed();
    for (r, rank) in ranks.iter().enumerate() {
        assert_eq!(
            rank.code,
            Some(0),
            "{args:?} rank {r} of {n}: {:?}\n{}",
            rank.records,
            rank.stderr
        );
        assert_eq!(rank.records.len(), sizes.len(), "{args:?} rank {r}");
        for (rec, &size) in rank.records.iter().zip(sizes) {
            assert!(rec["error"].is_null(), "{rec}");
            assert_eq!(rec["pattern"], args[0]);
            assert_eq!(rec["role"], "rank");
            assert_eq!((u(rec, "rank"), u(rec, "ranks")), (r as u64, n as u64));
            assert_eq!(u(rec, "size_bytes"), size);
            assert_eq!(u(rec, "messages"), iterations);
            let algorithm = rec["algorithm"].as_str().expect("an algorithm");
            if args[0] != "halo" {
                assert_eq!(
                    u(rec, "bytes"),
                    iterations * expected_bytes(args[0], algorithm, r, n, size),
                    "{args:?} {algorithm} rank {r} of {n} at {size} B"
                );
            }
            let elapsed = u(rec, "elapsed_ns");
            assert!(Duration::from_nanos(elapsed) < wall, "{rec}");
            let mean = f(rec, "latency_us");
            assert!(
                (mean * iterations as f64 * 1e3 - elapsed as f64).abs() < 1e3,
                "{rec}"
            );
            let (p50, p99, max) = (
                f(rec, "latency_p50_us"),
                f(rec, "latency_p99_us"),
                f(rec, "latency_max_us"),
            );
            assert!(
                0.0 < p50 && p50 <= p99 && p99 <= max && mean <= max,
                "{rec}"
            );
            let span = u(rec, "end_unix_ns") - u(rec, "start_unix_ns");
            assert!(
                span >= elapsed,
                "the timed iterations lie inside the span: {rec}"
            );
        }
    }
    ranks
}

#[test]
fn every_allreduce_and_alltoall_is_right_and_sends_what_its_algorithm_sends() {
    let sizes = [4u64, 8, 1028, 65536];
    for n in [2, 3, 5, 8] {
        for (name, algorithm) in [
            ("allreduce", "ring"),
            ("allreduce", "recursive-doubling"),
            ("alltoall", "pairwise"),
            ("alltoall", "linear"),
        ] {
            let args = [
                name,
                "--sizes",
                "4,8,1028,64KiB",
                "--iterations",
                "5",
                "--warmup",
                "2",
                "--algorithm",
                algorithm,
            ];
            let ranks = check_world(n, &args, &sizes, 5);
            // A ring of fewer elements than ranks runs as recursive doubling, and says so.
            let ran: Vec<&str> = ranks[0]
                .records
                .iter()
                .map(|r| r["algorithm"].as_str().unwrap())
                .collect();
            if algorithm == "ring" {
                let small = |s: u64| (s / 4) < n as u64;
                for (s, a) in sizes.iter().zip(&ran) {
                    let want = if small(*s) {
                        "recursive-doubling"
                    } else {
                        "ring"
                    };
                    assert_eq!(*a, want, "{n} ranks at {s} B");
                }
            } else {
                assert!(ran.iter().all(|a| *a == algorithm), "{ran:?}");
            }
        }
    }
}

#[test]
fn bcast_and_halo_are_right_at_even_and_odd_sizes() {
    for n in [2, 3, 6, 16] {
        let args = [
            "bcast",
            "--sizes",
            "1,1000,64KiB",
            "--iterations",
            "4",
            "--warmup",
            "1",
        ];
        check_world(n, &args, &[1, 1000, 65536], 4);
    }
    // Halo: the right neighbour's face in every slot, on open and wrapped grids, including
    // one two wide, where both of a rank's east-west messages go to the same rank.
    for (n, grid, periodic) in [
        (16, "4x4", false),
        (16, "4x4", true),
        (6, "3x2", true),
        (4, "2x2", true),
        (3, "3x1", true),
    ] {
        let mut args = vec![
            "halo",
            "--sizes",
            "8,1KiB",
            "--iterations",
            "3",
            "--warmup",
            "1",
            "--grid",
            grid,
        ];
        if periodic {
            args.push("--periodic");
        }
        let ranks = check_world(n, &args, &[8, 1024], 3);
        let edges = if periodic { "periodic" } else { "open" };
        assert_eq!(
            ranks[0].records[0]["algorithm"],
            format!("{grid} {edges}"),
            "{args:?}"
        );
        if grid == "4x4" {
            // Rank 5 is inside the grid: four neighbours either way; rank 0 has two on an
            // open grid.
            let bytes = |r: usize| u(&ranks[r].records[1], "bytes");
            assert_eq!(bytes(5), 3 * 4 * 1024);
            assert_eq!(bytes(0), 3 * if periodic { 4 } else { 2 } * 1024);
        }
    }
}

#[test]
fn a_duration_gives_every_rank_the_same_count_after_the_go() {
    let n = 4;
    let peers = addresses(n);
    let args = [
        "allreduce",
        "--size",
        "1KiB",
        "--duration",
        "0.3",
        "--go",
        "stdin",
    ];
    let mut children: Vec<Child> = (0..n)
        .map(|r| spawn(r, &peers, &args, SECRET, true))
        .collect();
    // Every rank says it is ready (connected to all) before any is released.
    for c in &mut children {
        let mut out = c.stdout.take().expect("stdout");
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while std::io::Read::read(&mut out, &mut byte).expect("read") == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let ready: Value = serde_json::from_slice(&line).expect("a ready line");
        assert_eq!(ready["ready"], true, "{ready}");
        c.stdout = Some(out);
    }
    for c in &mut children {
        c.stdin
            .take()
            .expect("stdin")
            .write_all(b"go\n")
            .expect("go");
    }
    let ranks = finish(children);
    let counts: Vec<u64> = ranks
        .iter()
        .map(|r| {
            assert_eq!(r.code, Some(0), "{}", r.stderr);
            u(&r.records[0], "messages")
        })
        .collect();
    assert!(counts[0] > 1, "{counts:?}");
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
    // The iterations alone, barriers left out, take no longer than the duration and a
    // warm-up iteration's worth of misjudged pace.
    let elapsed = Duration::from_nanos(u(&ranks[0].records[0], "elapsed_ns"));
    assert!(elapsed < Duration::from_millis(600), "{elapsed:?}");
}

#[test]
fn a_rank_without_the_runs_secret_never_joins_and_every_rank_says_why() {
    let n = 3;
    let peers = addresses(n);
    let args = ["bcast", "--size", "8", "--connect-timeout", "2"];
    let stranger = "0".repeat(64);
    let children = (0..n)
        .map(|r| {
            spawn(
                r,
                &peers,
                &args,
                if r == 2 { &stranger } else { SECRET },
                false,
            )
        })
        .collect();
    let ranks = finish(children);
    for (r, rank) in ranks.iter().enumerate() {
        assert_eq!(rank.code, Some(1), "rank {r}: {:?}", rank.records);
        let error = rank.records[0]["error"].as_str().expect("an error record");
        let why = match r {
            // Ranks 0 and 1 wait for rank 2 to connect; it fails to prove itself to them.
            0 | 1 => "waiting for ranks 2 to connect",
            _ => "did not accept this rank's proof",
        };
        assert!(error.contains(why), "rank {r}: {error}");
    }
}

#[test]
fn bad_command_lines_are_refused_before_any_socket() {
    for (args, why) in [
        (
            vec![
                "allreduce",
                "--rank",
                "3",
                "--peers",
                "a:1,b:1",
                "--size",
                "8",
            ],
            "--rank 3",
        ),
        (
            vec!["alltoall", "--rank", "0", "--peers", "a:1", "--size", "8"],
            "at least 2",
        ),
        (vec!["bcast", "--rank", "0", "--peers", "a:1,b:1"], "--size"),
        // Before any socket: these peers do not exist.
        (
            vec![
                "allreduce",
                "--rank",
                "0",
                "--peers",
                "a:1,b:1",
                "--sizes",
                "8,6",
            ],
            "6 B is not a positive multiple of 4",
        ),
        (
            vec![
                "halo",
                "--rank",
                "0",
                "--peers",
                "a:1,b:1,c:1",
                "--size",
                "8",
                "--grid",
                "2x2",
            ],
            "the 2x2 grid holds 4 ranks, not 3",
        ),
        (
            vec![
                "bcast", "--rank", "0", "--peers", "a:1,b:1", "--size", "8", "--root", "2",
            ],
            "--root 2 is not among the 2 ranks",
        ),
    ] {
        let out = Command::new(BIN)
            .env(orchestrate_worker::auth::SECRET_ENV, SECRET)
            .args(&args)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{args:?}: {stderr}");
    }
}
