//! The medium emulator in real time, on a sixteen-node 10 Mbit/s bus of the virtual cluster,
//! through `orchestrate run`: one TCP stream gets what Ethernet gives (9.0–9.5 Mbit/s), a token
//! spends its frame's serialization time on an idle wire and a larger token its larger
//! frame's more, and seven saturating pairs collide and move what the simulated MAC carries at
//! the same load. Needs docker and root.
//!
//! The token is checked against the wire, not against the analytic model: the model's
//! software latency per hop is a constant for modern hosts, while this machine's (docker's
//! veths, the emulator's sockets, an unoptimised worker) moves with its load. The same code
//! measured 0.76–0.82 of the model on one day and passed ±15% on another; the difference
//! between two token sizes in the same run cancels the software and leaves the wire.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::path::{Path, PathBuf};

use orchestrate_medium::config::{DEFAULT_COLLISION_WINDOW_NS, DEFAULT_TURNAROUND_NS};
use orchestrate_medium::sim::{Saturation, saturate};
use orchestrate_medium::time::WireClock;

const TOPOLOGY: &str = r#"
name = "md-bus16"
[generator]
kind = "single"
nodes = 16
rate = "10mbit"
medium = "shared"
"#;

const EXPERIMENT: &str = r#"
name = "md"
seed = 3
topologies = ["md-bus16.toml"]

[[workload]]
pattern = "stream"
sizes = ["64KiB"]
pairs = [1, 7]
placement = ["local-wire"]
duration = "6s"
repetitions = 1

[[workload]]
pattern = "token"
sizes = [64, 1024]
pairs = [1]
placement = ["local-wire"]
exchanges = 2000
warmup = 50
repetitions = 3
statistic = "best"
"#;

fn run_dir(out: &Path) -> PathBuf {
    std::fs::read_dir(out.join("md"))
        .unwrap()
        .next()
        .expect("a run directory")
        .unwrap()
        .path()
}

#[test]
fn docker_the_emulated_bus_times_frames_like_a_10_mbit_ethernet() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("md-bus16.toml"), TOPOLOGY).unwrap();
    std::fs::write(tmp.path().join("md.toml"), EXPERIMENT).unwrap();
    let out = tmp.path().join("out");
    let state = tmp.path().join("state");
    let run = support::orchestrate(&[
        "run",
        // Checks the chain, not timing: tests run side by side on few cores.
        "--timing",
        "record",
        tmp.path().join("md.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "the run failed");
    let dir = run_dir(&out);
    let records = support::jsonl(&dir.join("records.jsonl"));
    let media = support::jsonl(&dir.join("media.jsonl"));
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let is = |v: &serde_json::Value, pattern: &str, pairs: u64, role: &str| {
        v["pattern"] == pattern && v["pairs"] == pairs && v["role"] == role
    };

    // One TCP stream: data and every second segment's ACK share the bus, 9.15 Mbit/s in theory.
    let stream: Vec<f64> = records
        .iter()
        .filter(|r| is(r, "stream", 1, "server"))
        .map(|r| f(r, "throughput_mbit_s"))
        .collect();
    assert!(!stream.is_empty(), "no stream record");
    eprintln!("one stream: {stream:?} Mbit/s");
    // Never above the wire's share (9.5 leaves room for timestamps' rounding); below it by
    // what a loaded 2-vCPU guest takes from the receiver: alone on such a machine this stream
    // measured 8.94-9.03 Mbit/s in four runs on 2026-12-03, with and without the emulator's
    // spin budget. A broken medium (a token bucket, a lost frame per window) is far below.
    for g in &stream {
        assert!((8.8..=9.5).contains(g), "one stream: {g:.2} Mbit/s");
    }

    // A 64-byte token one way: one 130-byte frame, 113.6 µs on the wire even when idle; a
    // 1024-byte one: one 1090-byte frame. The best one-way time of each size is software plus
    // its frame: their difference is the wire's alone.
    let wire = WireClock::new(10_000_000);
    let frame_us = |len: u32| wire.frame(len) as f64 / 1000.0;
    let best_one_way = |size: u64| {
        let latency: Vec<f64> = records
            .iter()
            .filter(|r| is(r, "token", 1, "client") && r["size_bytes"] == size)
            .map(|r| f(r, "latency_us"))
            .collect();
        assert!(!latency.is_empty(), "no {size}-byte token record");
        latency.iter().copied().fold(f64::INFINITY, f64::min)
    };
    let (small, large) = (best_one_way(64), best_one_way(1024));
    assert!(
        small >= frame_us(130),
        "one-way {small:.1} µs, less than the frame's {} µs",
        frame_us(130)
    );
    let added = large - small;
    let expected = frame_us(1090) - frame_us(130);
    let model = std::fs::read_to_string(dir.join("model.csv")).unwrap();
    let ratio = model
        .lines()
        .find(|l| l.contains(",1,64,"))
        .and_then(|row| row.split(',').nth(8))
        .unwrap_or("none");
    eprintln!(
        "token one way: 64 B {small:.1} µs, 1024 B {large:.1} µs; the larger frame adds \
         {added:.1} µs, its wire time {expected:.1} µs; 64 B measured/model {ratio}"
    );
    // Never less than the wire time: a token bucket would pass the lone frame at once. More
    // by what the larger token costs in software besides the wire (the bytes' copies through
    // the veths, the emulator and the worker, and the timer waking later after a longer wait):
    // 1.05-1.13 on a quiet machine here, 1.23 once on a loaded one. The rate itself is pinned
    // by the stream above; this bound catches a frame charged twice, or a lone frame's wire
    // a third slower than the stream's.
    assert!(
        (0.97..=1.35).contains(&(added / expected)),
        "the 1024-byte token's frame added {added:.1} µs one way, its wire time is {expected:.1} µs"
    );

    // Seven saturating pairs: collisions, and the pairs together move what the simulated MAC
    // carries with seven saturated stations. The simulation gives the wire's utilisation; TCP
    // turns a busy wire into payload at 2 × 1448 bytes per two full frames and an ACK (2 × 1538
    // + 84 byte-times). The aggregate is the report's, over the window all pairs overlapped
    // (the medium's own interval also holds the point's start and end, when the wire idles).
    let busy: Vec<&serde_json::Value> = media
        .iter()
        .filter(|m| m["pattern"] == "stream" && m["pairs"] == 7)
        .collect();
    assert_eq!(busy.len(), 1, "one segment, one point: {busy:?}");
    let m = busy[0];
    assert!(m["collisions"].as_u64().unwrap() > 0, "no collisions: {m}");
    let sim = saturate(&Saturation {
        stations: 7,
        frame_lens: vec![1514],
        rate_bps: 10_000_000,
        collision_window_ns: DEFAULT_COLLISION_WINDOW_NS,
        turnaround_ns: DEFAULT_TURNAROUND_NS,
        queue_limit: 100,
        duration: 6_000_000_000,
        seed: 3,
    });
    let simulated = sim.utilisation() * 10.0 * (2.0 * 1448.0) / (2.0 * 1538.0 + 84.0);
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let row = summary
        .lines()
        .find(|l| l.starts_with("stream,tcp,md-bus16,none,,local-wire,7,"))
        .unwrap_or_else(|| panic!("no 7-pair stream cell: {summary}"));
    let real: f64 = row.split(',').nth(11).unwrap().parse().unwrap();
    eprintln!(
        "7 pairs: {real:.2} Mbit/s aggregate, simulated {simulated:.2} (utilisation {:.3}); \
         on the wire {} collisions/frame, lateness p99 {} µs; simulated {:.3} collisions/frame",
        sim.utilisation(),
        m["collisions_per_frame"],
        m["lateness_p99_us"],
        sim.counters.collisions_per_frame()
    );
    assert!(
        (real / simulated - 1.0).abs() <= 0.10,
        "real {real:.2} Mbit/s against simulated {simulated:.2}"
    );
}
