//! Synthetic run directories: deterministic, study-shaped records for tests and benchmarks
//! (included by path: it is not part of the shipped library).
#![allow(dead_code)]
//!
//! The model is deliberately simple — a pair's rate is its message size over a per-message
//! latency plus the wire time both ways, and pairs on the same wires share their capacity,
//! which carries both directions — so golden outputs are easy to reason about and never exceed
//! what their wires carry. Jitter comes from a seeded SplitMix64, so the same spec
//! always gives the same bytes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use orchestrate_worker::record::{Pattern, Protocol, RECORD_SCHEMA_VERSION, Record, Role};

use orchestrate::results::{
    BondDriver, Manifest, PlacementKind, PointRow, PointStatus, RecordRow, RunDir, Statistic,
    ToolInfo,
};

/// One configuration of the synthetic cluster.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    pub topology: String,
    pub bonding: String,
    pub bond_driver: Option<BondDriver>,
    pub placement: PlacementKind,
    /// Per-message software and forwarding latency, one way, µs.
    pub latency_us: f64,
    /// Rate of one wire, Mbit/s.
    pub wire_mbit_s: f64,
    /// Independent wires the pairs of a point spread over.
    pub wires: f64,
    /// Repetitions of this configuration (overrides the spec's when set).
    pub reps: Option<u32>,
    /// The busy CPU every trial record of this configuration reports for its node, ms
    /// (`node_cpu_busy_ms`); absent when `None`, as from workers that did not count it.
    pub cpu_busy_ms_per_trial: Option<f64>,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct SynthSpec {
    pub experiment: String,
    pub baseline: Option<String>,
    pub statistic: Statistic,
    pub seed: u64,
    pub configs: Vec<SynthConfig>,
    pub pattern: Pattern,
    pub pairs: Vec<u32>,
    pub sizes: Vec<u64>,
    pub reps: u32,
    pub trials: u32,
    pub trial_ns: u64,
    /// Also write the server side's records (as the worker does).
    pub server_records: bool,
    /// (point, rep) the runner marks failed; they get no records.
    pub failed: Vec<(u32, u32)>,
    /// (point, rep, pair) whose every trial errors: the point lacks a pair.
    pub broken_pairs: Vec<(u32, u32, u32)>,
    /// (point, rep, pair, trial) that errors alone.
    pub broken_trials: Vec<(u32, u32, u32, u32)>,
    /// Relative jitter of rates, e.g. 0.03.
    pub jitter: f64,
    /// TCP's counters in every record when set (all zero, as on a clean path), with three
    /// retransmissions in each record of the listed (point, rep); absent when `None`, as in
    /// records from before the worker read them.
    pub tcp_retrans: Option<Vec<(u32, u32)>>,
    /// The drift check, when set: the first point's cell measured again after all the others
    /// (one more point, every repetition), at this factor of its rate.
    pub drift_check: Option<f64>,
}

const T0_NS: u64 = 1_796_000_000_000_000_000;

impl SynthSpec {
    /// The 1996 study's shape at a small scale: a bonded dual bus baseline and a routed mesh
    /// in both placements, token exchange over TCP.
    pub fn study(seed: u64) -> Self {
        let cfg = |topology: &str, bonding: &str, driver, placement, latency_us, wires, reps| {
            SynthConfig {
                topology: topology.into(),
                bonding: bonding.into(),
                bond_driver: driver,
                placement,
                latency_us,
                wire_mbit_s: 10.0,
                wires,
                reps,
                cpu_busy_ms_per_trial: None,
            }
        };
        Self {
            experiment: "reschke96-small".into(),
            baseline: Some("bonded-dual-net".into()),
            statistic: Statistic::Median,
            seed,
            configs: vec![
                cfg(
                    "bonded-dual-net",
                    "balance-rr",
                    Some(BondDriver::Userspace),
                    PlacementKind::LocalWire,
                    180.0,
                    2.0,
                    None,
                ),
                cfg(
                    "routed-mesh-4x4",
                    "none",
                    None,
                    PlacementKind::LocalWire,
                    150.0,
                    8.0,
                    None,
                ),
                cfg(
                    "routed-mesh-4x4",
                    "none",
                    None,
                    PlacementKind::RemoteWire,
                    420.0,
                    4.0,
                    Some(2),
                ),
            ],
            pattern: Pattern::Token,
            pairs: vec![1, 7],
            sizes: vec![64, 8192],
            reps: 6,
            trials: 4,
            trial_ns: 50_000_000,
            server_records: true,
            failed: vec![(5, 1)],
            broken_pairs: vec![(7, 0, 3)],
            broken_trials: vec![(1, 2, 0, 1)],
            jitter: 0.03,
            tcp_retrans: None,
            drift_check: None,
        }
    }

    /// Point ids in generation order: config × pairs × size.
    fn points(&self) -> impl Iterator<Item = (u32, &SynthConfig, u32, u64)> + '_ {
        let mut id = 0;
        self.configs
            .iter()
            .flat_map(move |c| {
                self.pairs
                    .iter()
                    .flat_map(move |&p| self.sizes.iter().map(move |&s| (c, p, s)))
            })
            .map(move |(c, p, s)| {
                id += 1;
                (id - 1, c, p, s)
            })
    }
}

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Calls `emit` with every record of the run and returns the point attempts.
pub fn generate(spec: &SynthSpec, mut emit: impl FnMut(RecordRow)) -> Vec<PointRow> {
    let mut rng = SplitMix(spec.seed);
    let mut points = Vec::new();
    let measured: Vec<_> = spec.points().collect();
    let again = spec.drift_check.and_then(|factor| {
        let (_, c, pairs, size) = *measured.first()?;
        Some((measured.len() as u32, c, pairs, size, factor, true))
    });
    let all = measured
        .iter()
        .map(|&(point, c, pairs, size)| (point, c, pairs, size, 1.0, false))
        .chain(again);
    for (point, c, pairs, size, factor, drift_check) in all {
        for rep in 0..c.reps.unwrap_or(spec.reps) {
            let window_start = T0_NS + (point as u64 * 64 + rep as u64) * 10_000_000_000;
            let failed = spec.failed.contains(&(point, rep));
            points.push(PointRow {
                point,
                topology: c.topology.clone(),
                bonding: c.bonding.clone(),
                bond_driver: c.bond_driver,
                placement: c.placement,
                pairs,
                pattern: spec.pattern,
                protocol: Protocol::Tcp,
                size_bytes: size,
                rep,
                attempt: 0,
                status: if failed {
                    PointStatus::Failed
                } else {
                    PointStatus::Ok
                },
                error: failed.then(|| "client on node7 exited: connection refused".into()),
                window_start_unix_ns: Some(window_start + (pairs as u64 - 1) * 2_000_000),
                window_end_unix_ns: Some(window_start + spec.trials as u64 * spec.trial_ns),
                skew_ns: Some(40_000),
                drift_check,
                sampled_records: Some(0),
                implementation: None,
            });
            if failed {
                continue;
            }
            // Unloaded rate of one pair, then the share of the wires the pairs get. A token
            // crosses the wire there and back in each round trip, and the way back uses the
            // same wires: one way, a pair gets at most half of what its wires carry. A wire
            // carries 94% of its rate as payload (full TCP segments in Ethernet frames), and
            // the aggregate stays that far below it that no jitter takes it over.
            let bits = size as f64 * 8.0;
            let payload_mbit_s = c.wire_mbit_s * 0.94;
            let single = bits / (2.0 * c.latency_us + 2.0 * bits / payload_mbit_s);
            let capacity = c.wires * payload_mbit_s / 2.0;
            let aggregate = (single * pairs as f64).min(capacity) * (1.0 - spec.jitter) * factor;
            for pair in 0..pairs {
                // Pairs start 2 ms apart, so the common window is shorter than each pair's run.
                let start0 = window_start + pair as u64 * 2_000_000;
                let unfair = 1.0 + 0.04 * (pair as f64 - (pairs as f64 - 1.0) / 2.0);
                for trial in 0..spec.trials {
                    let rate = aggregate / pairs as f64 * unfair * (1.0 + spec.jitter * rng.unit());
                    let start = start0 + trial as u64 * spec.trial_ns;
                    let end = start + spec.trial_ns;
                    let bytes = (rate * spec.trial_ns as f64 / 8000.0).round() as u64;
                    let broken = spec.broken_pairs.contains(&(point, rep, pair))
                        || spec.broken_trials.contains(&(point, rep, pair, trial));
                    for role in [Role::Client, Role::Server] {
                        if role == Role::Server && !spec.server_records {
                            continue;
                        }
                        let (local, peer) = addrs(pair, role);
                        emit(RecordRow {
                            point,
                            topology: c.topology.clone(),
                            bonding: c.bonding.clone(),
                            bond_driver: c.bond_driver,
                            placement: c.placement,
                            pairs,
                            pair,
                            rep,
                            attempt: 0,
                            client_node: format!("node{}", pair * 2 + 1),
                            server_node: format!("node{}", pair * 2 + 2),
                            record: Record {
                                schema: RECORD_SCHEMA_VERSION,
                                pattern: spec.pattern,
                                protocol: Protocol::Tcp,
                                role,
                                local_addr: local,
                                peer_addr: peer,
                                size_bytes: size,
                                trial,
                                messages: bytes / size.max(1),
                                bytes,
                                start_unix_ns: start,
                                end_unix_ns: end,
                                elapsed_ns: spec.trial_ns,
                                throughput_mbit_s: Some(rate),
                                latency_us: Some(bits / rate / 2.0),
                                latency_p50_us: Some(bits / rate / 2.0),
                                latency_p90_us: Some(bits / rate / 2.0 * 1.2),
                                latency_p99_us: Some(bits / rate / 2.0 * 1.6),
                                latency_max_us: Some(bits / rate / 2.0 * 2.5),
                                variance: None,
                                depth: None,
                                offered_mbit_s: None,
                                lost: None,
                                error: broken.then(|| "connection reset by peer".into()),
                                messages_per_s: None,
                                peer_clock_offset_ns: None,
                                peer_clock_rtt_ns: None,
                                gap_max_us: None,
                                subflows: None,
                                tcp_retrans: spec
                                    .tcp_retrans
                                    .as_ref()
                                    .map(|lossy| if lossy.contains(&(point, rep)) { 3 } else { 0 }),
                                tcp_reord_seen: spec.tcp_retrans.as_ref().map(|_| 0),
                                tcp_dsack_dups: spec.tcp_retrans.as_ref().map(|_| 0),
                                tcp_rcv_ooopack: spec.tcp_retrans.as_ref().map(|_| 0),
                                tcp_rtt_us: None,
                                tcp_rttvar_us: None,
                                tcp_snd_cwnd: None,
                                node_cpu_busy_ms: c.cpu_busy_ms_per_trial,
                                progress_offset_ns: None,
                                progress_bytes: None,
                                rank: None,
                                ranks: None,
                                algorithm: None,
                                implementation: None,
                            },
                        });
                    }
                }
            }
        }
    }
    points
}

fn addrs(pair: u32, role: Role) -> (String, String) {
    let client = format!("10.0.{}.1:40000", pair);
    let server = format!("10.0.{}.2:5201", pair);
    match role {
        Role::Client => (client, server),
        Role::Server => (server, client),
        Role::Rank => unreachable!("synthetic runs are of pairs"),
    }
}

/// The manifest a runner would have written for `spec`.
pub fn manifest(spec: &SynthSpec) -> Manifest {
    let mut topologies: Vec<String> = spec.configs.iter().map(|c| c.topology.clone()).collect();
    topologies.dedup();
    Manifest {
        tool: Some(ToolInfo {
            name: Some("orchestrate".into()),
            version: Some("0.1.0".into()),
            commit: Some("synthetic".into()),
        }),
        experiment: Some(spec.experiment.clone()),
        seed: Some(spec.seed),
        statistic: Some(spec.statistic),
        baseline: spec.baseline.clone(),
        started_unix_ns: Some(T0_NS),
        finished_unix_ns: Some(T0_NS + 3_600_000_000_000),
        nodes: (1..=2)
            .map(|i| {
                (
                    format!("node{i}"),
                    serde_json::json!({
                        "kernel": "6.18.0",
                        "cpus": 2,
                        "nics": [{"name": "eth0", "mtu": 1500, "qdisc": "tbf"}],
                    }),
                )
            })
            .collect(),
        bond_drivers: spec
            .configs
            .iter()
            .map(|c| (c.topology.clone(), c.bond_driver))
            .collect(),
        topologies,
        media: Default::default(),
        slurm_jobs: Vec::new(),
        platforms: Default::default(),
    }
}

/// Writes `manifest.json`, `records.jsonl` and `points.jsonl` for `spec` into `dir`, as the
/// runner would.
pub fn write_run(dir: &Path, spec: &SynthSpec) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let run = RunDir::new(dir);
    let manifest_path = run.manifest_path();
    let text = serde_json::to_string_pretty(&manifest(spec)).expect("manifest serializes");
    std::fs::write(&manifest_path, text + "\n")?;

    let records_path = run.records_jsonl();
    let mut out = BufWriter::new(File::create(&records_path)?);
    let mut result = Ok(());
    let points = generate(spec, |row| {
        if result.is_ok() {
            let line = serde_json::to_string(&row).expect("row serializes");
            result = writeln!(out, "{line}");
        }
    });
    result?;
    out.flush()?;

    let points_path = run.points_jsonl();
    let mut text = String::new();
    for p in points {
        text.push_str(&serde_json::to_string(&p).expect("point serializes"));
        text.push('\n');
    }
    std::fs::write(&points_path, text)
}
