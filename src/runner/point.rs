//! One measurement point: start a client for every pair through its node's agent, wait until
//! all are connected, release them together, collect their records, and work out the window
//! in which all pairs overlapped.

use std::collections::BTreeMap;
use std::time::Duration;

use orchestrate_worker::agent::AgentEvent;
use orchestrate_worker::invocation::Invocation;
use orchestrate_worker::patterns::client_args::{Common, Counting, GoArg, Schedule, Sizes};
use orchestrate_worker::patterns::filecopy::FilecopyArgs;
use orchestrate_worker::patterns::load::LoadArgs;
use orchestrate_worker::patterns::pingpong::{self, PingpongArgs};
use orchestrate_worker::patterns::pipeline::PipelineArgs;
use orchestrate_worker::patterns::stream::{self, StreamArgs};
use orchestrate_worker::patterns::token::TokenArgs;
use orchestrate_worker::record::{Pattern, Protocol, Record, Role};

use crate::plan::experiment::{Amount, Implementation, Workload};
use crate::plan::sweep::{PlacementEntry, Point};
use crate::plan::{Configuration, Experiment};
use crate::results::{BondDriver, PointRow, PointStatus, RecordRow};
use crate::spec::NodeName;
use crate::spec::multipath::NodeMultipath;

use super::medium_stats::Sampler;
use super::mpi::MpiLauncher;
use super::node::agent::{Agent, Task};
use super::ranks;

/// How long a client may take to connect and say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Outcome {
    pub records: Vec<RecordRow>,
    pub row: PointRow,
}

/// The transport a configuration's clients use for workload `w`: Multipath TCP in place of
/// TCP where the configuration runs it, else the workload's own.
pub fn transport(config: &Configuration, w: &Workload) -> Protocol {
    match (config.multipath, w.protocol) {
        (Some(NodeMultipath::Mptcp), Protocol::Tcp) => Protocol::Mptcp,
        (_, protocol) => protocol,
    }
}

/// The worker command line for one pair of a point estimated to take `estimate`, its client
/// speaking `protocol`.
pub fn client_args(
    w: &Workload,
    size: u64,
    target: &str,
    protocol: Protocol,
    estimate: Duration,
) -> Vec<String> {
    client_invocation(w, size, target, protocol, estimate).to_args()
}

/// How long a pair's socket may stay silent before its worker calls the peer gone, for a
/// point estimated to take `estimate`: twice that, and never less than the worker's own
/// default. A healthy TCP connection on a saturated shared bus can be silent for longer than
/// the default: each of its segments dropped after 16 collisions costs a retransmission
/// timeout, and those double from a second at the connection's start (1 + 2 + 4 + 8 s), so a
/// copy that loses its first few segments to the capture effect waits 15 s for its turn.
fn silence_allowed(estimate: Duration) -> Option<f64> {
    let doubled = estimate.saturating_mul(2).as_secs_f64();
    (doubled > Common::DEFAULT_TIMEOUT_S).then_some(doubled.ceil())
}

/// The worker invocation of one pair's client: one trial of one size, released by a line on
/// stdin.
fn client_invocation(
    w: &Workload,
    size: u64,
    target: &str,
    protocol: Protocol,
    estimate: Duration,
) -> Invocation {
    let mut common = Common {
        trials: Some(1),
        warmup: Some(w.warmup),
        go: Some(GoArg::Stdin),
        ..Common::new(target)
    };
    if let Some(t) = silence_allowed(estimate) {
        common.timeout = t;
    }
    let sizes = Sizes::one(size);
    let counting = match w.amount {
        Amount::Exchanges(n) => Counting {
            exchanges: Some(n),
            duration: None,
            min_duration: w.min_duration.map(|d| d.as_secs_f64()),
        },
        // To the millisecond, as the worker has always been told.
        Amount::Duration(d) => Counting {
            exchanges: None,
            duration: Some(format!("{:.3}", d.as_secs_f64()).parse().expect("a number")),
            min_duration: None,
        },
    };
    match w.pattern {
        Pattern::Pingpong => Invocation::Pingpong(PingpongArgs {
            common,
            sizes,
            schedule: Schedule::default(),
            counting,
            trial_time: pingpong::DEFAULT_TRIAL_TIME_S,
            protocol,
        }),
        Pattern::Stream => Invocation::Stream(StreamArgs {
            common,
            sizes,
            schedule: Schedule::default(),
            counting,
            trial_time: stream::DEFAULT_TRIAL_TIME_S,
            protocol,
        }),
        Pattern::Token => Invocation::Token(TokenArgs {
            common,
            sizes,
            counting,
            protocol,
        }),
        Pattern::Pipeline => Invocation::Pipeline(PipelineArgs {
            common,
            sizes,
            counting,
            depth: w.depth.unwrap_or(1),
            protocol,
        }),
        Pattern::Load => Invocation::Load(LoadArgs {
            common,
            sizes,
            counting,
            rate: w.rate.map(|r| r.to_string()),
            protocol,
        }),
        // A trial copies the whole file once: no count, no warm-up.
        Pattern::Filecopy => Invocation::Filecopy(FilecopyArgs {
            common: Common {
                warmup: None,
                ..common
            },
            file: None,
            size,
            dir: None,
            drop_cache: w.drop_caches,
            protocol,
        }),
        Pattern::Halo | Pattern::Alltoall | Pattern::Allreduce | Pattern::Bcast => {
            unreachable!("the plan refuses a collective as a workload of pairs")
        }
    }
}

/// One worker process of a point under way: a pair's client or a collective's rank.
struct Running<'a> {
    /// The pair's index, or the rank.
    pair: usize,
    /// The node it runs on.
    node: &'a NodeName,
    /// How messages name it: `n13 -> n14`, `rank 3 on n04`.
    who: String,
    /// `client` or `rank`.
    what: &'static str,
    agent: &'a Agent,
    task: Task,
}

/// What every point of a configuration shares: its nodes' agents with their clock offsets,
/// the servers' port, and the bond driver that carries the configuration's bonds.
pub struct PointContext<'a> {
    pub exp: &'a Experiment,
    pub config: &'a Configuration,
    pub agents: &'a BTreeMap<NodeName, Agent>,
    /// Each node's wall clock minus the controller's, in ns.
    pub offsets: &'a BTreeMap<NodeName, i64>,
    pub port: u16,
    pub bond_driver: Option<BondDriver>,
    /// Runs the points Open MPI runs; present when the configuration has any.
    pub mpi: Option<&'a MpiLauncher>,
}

/// Runs `point`. Never returns an error: a failure is an outcome, with the node and cause.
/// `medium`, when given, is asked for its statistics just before the clients are released
/// and right after the last one exits.
pub async fn run(
    ctx: &PointContext<'_>,
    point: &Point,
    attempt: u32,
    medium: Option<&mut Sampler>,
) -> Outcome {
    let entry = &ctx.config.placements[point.placement_entry];
    let mut row = PointRow {
        point: point.id as u32,
        topology: point.topology.to_string(),
        bonding: point.bonding.clone(),
        bond_driver: ctx.bond_driver,
        placement: point.placement,
        pairs: point.pairs,
        pattern: point.pattern,
        protocol: point.protocol,
        size_bytes: point.size_bytes,
        rep: point.rep,
        attempt,
        status: PointStatus::Ok,
        error: None,
        window_start_unix_ns: None,
        window_end_unix_ns: None,
        skew_ns: None,
        drift_check: ctx.config.repeats.is_some(),
        sampled_records: None,
        implementation: ctx.exp.workloads[point.workload]
            .collective
            .as_ref()
            .map(|c| c.implementation)
            .filter(|i| *i != Implementation::Worker)
            .map(|i| i.as_str().to_owned()),
    };
    let mut records = Vec::new();
    let result = measure(ctx, point, &mut records, medium).await;
    if let Err(e) = result {
        row.status = PointStatus::Failed;
        row.error = Some(e);
    }
    let rows: Vec<RecordRow> = records
        .into_iter()
        .map(|(pair, rec)| {
            let (client, server) = match entry.placement.ranks.get(pair) {
                // A rank's record: its node on both sides.
                Some(r) if point.pattern.is_collective() => (&r.node, &r.node),
                _ => {
                    let p = &entry.placement.pairs[pair];
                    (&p.client, &p.server)
                }
            };
            RecordRow {
                point: point.id as u32,
                topology: point.topology.to_string(),
                bonding: point.bonding.clone(),
                bond_driver: ctx.bond_driver,
                placement: row.placement,
                pairs: point.pairs,
                pair: pair as u32,
                rep: point.rep,
                attempt,
                client_node: client.to_string(),
                server_node: server.to_string(),
                record: rec,
            }
        })
        .collect();
    if rows.iter().any(|r| r.record.error.is_some()) && row.status == PointStatus::Ok {
        row.status = PointStatus::Failed;
        row.error = rows.iter().find_map(|r| {
            r.record.error.as_ref().map(|e| match r.record.rank {
                Some(rank) => format!("rank {rank} on {}: {e}", r.client_node),
                None => format!("{} -> {}: {e}", r.client_node, r.server_node),
            })
        });
    }
    row.sampled_records = Some(
        rows.iter()
            .filter(|r| r.record.progress_bytes.is_some())
            .count() as u64,
    );
    let (window, skew) = window_and_skew(&rows, entry, ctx.offsets);
    if row.status == PointStatus::Ok {
        if let Some((start, end)) = window {
            row.window_start_unix_ns = Some(start);
            row.window_end_unix_ns = Some(end);
        }
    }
    row.skew_ns = skew;
    Outcome { records: rows, row }
}

/// The window in which every pair was measuring, on the controller's clock (each client's
/// stamps corrected by its node's offset), when every pair has a client record (every rank
/// its record, for a collective); and the largest difference between the clock offsets of
/// the nodes involved.
fn window_and_skew(
    rows: &[RecordRow],
    entry: &PlacementEntry,
    offsets: &BTreeMap<NodeName, i64>,
) -> (Option<(u64, u64)>, Option<i64>) {
    let clients: Vec<(u64, u64)> = rows
        .iter()
        .filter(|r| matches!(r.record.role, Role::Client | Role::Rank) && r.record.error.is_none())
        .map(|r| {
            let off = offsets
                .get(&r.client_node.parse::<NodeName>().expect("valid"))
                .copied()
                .unwrap_or(0);
            (
                shift(r.record.start_unix_ns, off),
                shift(r.record.end_unix_ns, off),
            )
        })
        .collect();
    let timed = entry.placement.pairs.len() + entry.placement.ranks.len();
    let window = (clients.len() == timed).then(|| {
        let start = clients.iter().map(|c| c.0).max().unwrap_or(0);
        let end = clients.iter().map(|c| c.1).min().unwrap_or(0);
        (start, end.max(start))
    });
    let involved: Vec<i64> = entry
        .placement
        .pairs
        .iter()
        .flat_map(|p| [&p.client, &p.server])
        .chain(entry.placement.ranks.iter().map(|r| &r.node))
        .filter_map(|n| offsets.get(n).copied())
        .collect();
    let skew = involved.iter().max().zip(involved.iter().min());
    (window, skew.map(|(max, min)| max - min))
}

fn shift(t: u64, offset: i64) -> u64 {
    (t as i64 - offset).max(0) as u64
}

async fn measure(
    ctx: &PointContext<'_>,
    point: &Point,
    records: &mut Vec<(usize, Record)>,
    mut medium: Option<&mut Sampler>,
) -> Result<(), String> {
    if ctx.exp.workloads[point.workload].runs_on_open_mpi() {
        return measure_mpi(ctx, point, records, medium).await;
    }
    let mut running = if point.pattern.is_collective() {
        spawn_ranks(ctx, point).await?
    } else {
        spawn_clients(ctx, point).await?
    };
    if let Err(e) = await_ready(&mut running, records).await {
        stop(&running).await;
        return Err(e);
    }
    if let Some(m) = medium.as_deref_mut() {
        m.begin().await;
    }
    let releases = running.iter().map(|r| r.agent.input(r.task.id, "go"));
    for res in futures_util::future::join_all(releases).await {
        if let Err(e) = res {
            stop(&running).await;
            return Err(e.to_string());
        }
    }
    // Collect until every client has exited; a client that hangs fails the point.
    let limit = point_limit(point);
    let mut failure: Option<String> = None;
    for r in &mut running {
        if let Err(e) = collect(r, limit, records).await {
            failure.get_or_insert(e);
        }
    }
    if let Some(m) = medium {
        m.end().await;
    }
    if failure.is_some() {
        stop(&running).await;
    }
    failure.map_or(Ok(()), Err)
}

/// How long a point's clients (or ranks) may take before they fail it: four times its
/// estimate and a minute.
fn point_limit(point: &Point) -> Duration {
    point.estimate * 4 + Duration::from_secs(60)
}

/// A collective point Open MPI runs: mpirun from the controller, every rank's record from
/// rank 0's output, within the limit a worker's point has.
async fn measure_mpi(
    ctx: &PointContext<'_>,
    point: &Point,
    records: &mut Vec<(usize, Record)>,
    medium: Option<&mut Sampler>,
) -> Result<(), String> {
    let mpi = ctx
        .mpi
        .ok_or("no launcher for Open MPI in this configuration")?;
    let entry = &ctx.config.placements[point.placement_entry];
    let w = &ctx.exp.workloads[point.workload];
    let mut medium = medium;
    if let Some(m) = medium.as_deref_mut() {
        m.begin().await;
    }
    let (recs, failure) = mpi
        .run(
            &ctx.config.topology,
            w,
            &entry.placement.ranks,
            point.size_bytes,
            point_limit(point),
        )
        .await;
    if let Some(m) = medium {
        m.end().await;
    }
    // Each rank's record under its rank; a rank the point does not have is no record of it.
    records.extend(
        recs.into_iter()
            .filter_map(|r| r.rank.map(|rank| (rank as usize, r)))
            .filter(|(rank, _)| *rank < entry.placement.ranks.len()),
    );
    failure.map_or(Ok(()), Err)
}

/// Starts every pair's client through its node's agent, waiting for the go on stdin.
async fn spawn_clients<'a>(
    ctx: &PointContext<'a>,
    point: &Point,
) -> Result<Vec<Running<'a>>, String> {
    let entry = &ctx.config.placements[point.placement_entry];
    let w = &ctx.exp.workloads[point.workload];
    let mut running: Vec<Running> = Vec::new();
    for (i, pair) in entry.placement.pairs.iter().enumerate() {
        let agent = &ctx.agents[&pair.client];
        let target = format!("{}:{}", pair.path.target, ctx.port);
        match agent
            .spawn(client_args(
                w,
                point.size_bytes,
                &target,
                transport(ctx.config, w),
                point.estimate,
            ))
            .await
        {
            Ok(task) => running.push(Running {
                pair: i,
                node: &pair.client,
                who: format!("{} -> {}", pair.client, pair.server),
                what: "client",
                agent,
                task,
            }),
            Err(e) => {
                stop(&running).await;
                return Err(e.to_string());
            }
        }
    }
    Ok(running)
}

/// Starts every rank of a collective point through its node's agent, waiting for the go on
/// stdin.
async fn spawn_ranks<'a>(
    ctx: &PointContext<'a>,
    point: &Point,
) -> Result<Vec<Running<'a>>, String> {
    let entry = &ctx.config.placements[point.placement_entry];
    let w = &ctx.exp.workloads[point.workload];
    let commands = ranks::commands(
        &ctx.config.topology,
        w,
        &entry.placement.ranks,
        point.size_bytes,
        ranks::rank_port(ctx.port)?,
        point.estimate,
    )?;
    let mut running: Vec<Running> = Vec::new();
    for (i, ((node, args), rank)) in commands.into_iter().zip(&entry.placement.ranks).enumerate() {
        let agent = &ctx.agents[&node];
        match agent.spawn(args).await {
            Ok(task) => running.push(Running {
                pair: i,
                node: &rank.node,
                who: format!("rank {i} on {node}"),
                what: "rank",
                agent,
                task,
            }),
            Err(e) => {
                stop(&running).await;
                return Err(format!("rank {i} on {node}: {e}"));
            }
        }
    }
    Ok(running)
}

/// The barrier: every client connected and ready before any starts. A record before the
/// start (an error the client reports) is kept.
async fn await_ready(
    running: &mut [Running<'_>],
    records: &mut Vec<(usize, Record)>,
) -> Result<(), String> {
    for r in running {
        let who = &r.who;
        loop {
            match r.task.next(r.node, READY_TIMEOUT).await {
                Ok(AgentEvent::Line { line, .. }) if line.contains("\"ready\":true") => break,
                Ok(AgentEvent::Line { line, .. }) => {
                    if let Ok(rec) = serde_json::from_str::<Record>(&line) {
                        let msg = rec
                            .error
                            .clone()
                            .unwrap_or_else(|| "a record before the start".into());
                        records.push((r.pair, rec));
                        return Err(format!("{who}: {msg}"));
                    }
                }
                Ok(AgentEvent::Exit { code, stderr, .. }) => {
                    return Err(format!(
                        "{who}: the {} exited ({code:?}) before it was ready: {}",
                        r.what,
                        stderr.trim()
                    ));
                }
                Ok(AgentEvent::Error { message, .. }) => {
                    return Err(format!("{}: {message}", r.node));
                }
                Ok(AgentEvent::Time { .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(())
}

/// A client's records until it exits; why it failed, if it did.
async fn collect(
    r: &mut Running<'_>,
    limit: Duration,
    records: &mut Vec<(usize, Record)>,
) -> Result<(), String> {
    loop {
        match r.task.next(r.node, limit).await {
            Ok(AgentEvent::Line { line, .. }) => match serde_json::from_str::<Record>(&line) {
                Ok(rec) => records.push((r.pair, rec)),
                Err(_) => tracing::debug!("{}: {line}", r.node),
            },
            Ok(AgentEvent::Exit { code: Some(0), .. }) => return Ok(()),
            Ok(AgentEvent::Exit { code, stderr, .. }) => {
                let pair_records = records
                    .iter()
                    .filter(|(p, _)| *p == r.pair)
                    .map(|(_, rec)| rec);
                return Err(worker_failure(&r.who, r.what, code, &stderr, pair_records));
            }
            Ok(AgentEvent::Error { message, .. }) => {
                return Err(format!("{}: {message}", r.node));
            }
            Ok(AgentEvent::Time { .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn last_line(s: &str) -> &str {
    s.trim().lines().last().unwrap_or("")
}

/// Why a client (or rank) failed, in its own words: the worker writes a failure into its last
/// record (`error`) and often nothing on stderr, so the record's error comes first and
/// stderr's last line after it; a failure that left neither says so rather than ending in an
/// empty colon. `who` names it (`n13 -> n14`), `what` says what it is (`client`).
fn worker_failure<'r>(
    who: &str,
    what: &str,
    code: Option<i32>,
    stderr: &str,
    pair_records: impl Iterator<Item = &'r Record>,
) -> String {
    let status = match code {
        Some(c) => format!("exit status {c}"),
        None => "killed by a signal".to_owned(),
    };
    let recorded = pair_records.filter_map(|rec| rec.error.as_deref()).last();
    let printed = Some(last_line(stderr)).filter(|l| !l.is_empty());
    let cause = match (recorded, printed) {
        (Some(e), Some(p)) if p.contains(e) => p.to_owned(),
        (Some(e), Some(p)) => format!("{e} (stderr: {p})"),
        (Some(e), None) => e.to_owned(),
        (None, Some(p)) => p.to_owned(),
        (None, None) => "it left no error in its records and nothing on stderr".to_owned(),
    };
    format!("{who}: the {what} failed ({status}): {cause}")
}

async fn stop(running: &[Running<'_>]) {
    for r in running {
        let _ = r.agent.kill(r.task.id).await;
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;
    use std::path::Path;

    use sha2::{Digest, Sha256};

    use super::*;

    /// Every distinct client command line the shipped experiments' plans run, one a line.
    fn client_lines(file: &str) -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("experiments")
            .join(file);
        let exp = crate::plan::load(&path).expect("a shipped experiment loads");
        let plan = crate::plan::expand(&exp).expect("a shipped experiment plans");
        let mut lines = std::collections::BTreeSet::new();
        for p in &plan.points {
            let config = &plan.configurations[p.configuration];
            let w = &exp.workloads[p.workload];
            for pair in &config.placements[p.placement_entry].placement.pairs {
                let target = format!("{}:7171", pair.path.target);
                let args = client_args(w, p.size_bytes, &target, transport(config, w), p.estimate);
                lines.insert(args.join(" "));
            }
        }
        lines.into_iter().collect()
    }

    fn failed_trial(error: Option<&str>) -> Record {
        let mut r = Record::new(Pattern::Stream, Protocol::Tcp, Role::Client);
        r.error = error.map(str::to_owned);
        r
    }

    #[test]
    fn a_failed_client_is_explained_by_its_records_error_when_stderr_is_empty() {
        let who = "n13 -> n14";
        let records = [
            failed_trial(None),
            failed_trial(Some("connection reset by peer after 3 of 5 trials")),
        ];
        assert_eq!(
            worker_failure(who, "client", Some(1), "\n", records.iter()),
            "n13 -> n14: the client failed (exit status 1): connection reset by peer after 3 \
             of 5 trials"
        );
        assert_eq!(
            worker_failure(
                who,
                "client",
                Some(1),
                "warning\nbad address",
                records.iter()
            ),
            "n13 -> n14: the client failed (exit status 1): connection reset by peer after 3 \
             of 5 trials (stderr: bad address)"
        );
        assert_eq!(
            worker_failure(who, "client", None, "", [failed_trial(None)].iter()),
            "n13 -> n14: the client failed (killed by a signal): it left no error in its \
             records and nothing on stderr"
        );
    }

    /// The client command lines are the worker's contract: these digests were taken of the
    /// lines the controller spelled by hand before the typed invocation rendered them, then
    /// again when long points got a `--timeout` of twice their estimate (without it the
    /// lines are the earlier ones, digest for digest).
    #[test]
    fn client_command_lines_of_the_shipped_experiments_are_unchanged() {
        let mut got = String::new();
        for file in [
            "grid4x4.toml",
            "light-traffic-routing.toml",
            "multipath.toml",
            "reschke96.toml",
        ] {
            let lines = client_lines(file);
            let digest = Sha256::digest(lines.join("\n").as_bytes());
            let _ = writeln!(got, "{file} {} {}", lines.len(), hex(&digest));
            dump(&format!("{file}.lines"), &lines);
        }
        let lines = variant_lines();
        let digest = Sha256::digest(lines.join("\n").as_bytes());
        let _ = writeln!(got, "variants {} {}", lines.len(), hex(&digest));
        dump("variants.lines", &lines);
        println!("{got}");
        assert_eq!(got, GOLDEN);
    }

    #[test]
    fn a_point_longer_than_the_default_timeout_lets_its_sockets_wait_twice_its_estimate() {
        let exp = crate::plan::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/reschke96.toml"),
        )
        .expect("a shipped experiment loads");
        let copy = exp
            .workloads
            .iter()
            .find(|w| w.pattern == Pattern::Filecopy)
            .expect("reschke96 copies files");
        let timeout = |estimate: Duration| match client_invocation(
            copy,
            2 << 20,
            "10.0.0.1:7171",
            Protocol::Tcp,
            estimate,
        ) {
            Invocation::Filecopy(args) => args.common.timeout,
            other => panic!("a copy's client became {other:?}"),
        };
        // Seven 2 MiB copies on one 10 Mbit/s bus: about 13 s.
        assert_eq!(timeout(Duration::from_millis(13_040)), 27.0);
        // Short points keep the worker's default, which the command line then leaves out.
        assert_eq!(timeout(Duration::from_secs(5)), Common::DEFAULT_TIMEOUT_S);
        assert_eq!(timeout(Duration::ZERO), Common::DEFAULT_TIMEOUT_S);
        let short = client_args(
            copy,
            2 << 20,
            "10.0.0.1:7171",
            Protocol::Tcp,
            Duration::ZERO,
        );
        let long = client_args(
            copy,
            2 << 20,
            "10.0.0.1:7171",
            Protocol::Tcp,
            Duration::from_secs(13),
        );
        assert_eq!(long.len(), short.len() + 2, "{short:?} {long:?}");
    }

    /// A shipped workload turned into every pattern, protocol, amount and option the
    /// controller renders, so lines no shipped experiment runs are guarded too.
    fn variant_lines() -> Vec<String> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/reschke96.toml");
        let exp = crate::plan::load(&path).expect("a shipped experiment loads");
        let base = exp.workloads[0].clone();
        let mut lines = Vec::new();
        for pattern in [
            Pattern::Pingpong,
            Pattern::Stream,
            Pattern::Token,
            Pattern::Pipeline,
            Pattern::Load,
            Pattern::Filecopy,
        ] {
            for protocol in [Protocol::Tcp, Protocol::Udp, Protocol::Mptcp] {
                for amount in [
                    Amount::Exchanges(1000),
                    Amount::Duration(Duration::from_millis(2500)),
                    Amount::Duration(Duration::from_micros(1234567)),
                ] {
                    // Each option only where the plan allows it.
                    for (depth, rate, drop_caches) in [
                        (None, None, false),
                        (
                            (pattern == Pattern::Pipeline).then_some(4),
                            (pattern == Pattern::Load).then(|| "100mbit".parse().unwrap()),
                            pattern == Pattern::Filecopy,
                        ),
                    ] {
                        let w = Workload {
                            pattern,
                            amount,
                            depth,
                            rate,
                            drop_caches,
                            // Only where the plan allows it (reschke96's token test has it).
                            min_duration: matches!(
                                pattern,
                                Pattern::Token | Pattern::Pingpong | Pattern::Stream
                            )
                            .then_some(Duration::from_secs(2)),
                            warmup: 7,
                            ..base.clone()
                        };
                        lines.push(
                            client_args(&w, 4096, "10.0.0.1:7171", protocol, Duration::ZERO)
                                .join(" "),
                        );
                    }
                }
            }
        }
        lines
    }

    /// With DUMP_CLIENT_LINES=DIR, writes the lines to DIR/NAME, to see what a changed
    /// digest changed.
    fn dump(name: &str, lines: &[String]) {
        if let Some(dir) = std::env::var_os("DUMP_CLIENT_LINES") {
            std::fs::write(Path::new(&dir).join(name), lines.join("\n")).expect("dump written");
        }
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    const GOLDEN: &str = "\
grid4x4.toml 81 18bb4abeba3a112cdf8f5ffa27c356382679b6608d594474da00b8d9fb24a849
light-traffic-routing.toml 4 9c4cb17d14382dbd1ce0167818bd706cbb50ae5e16fc644f732772a3fa99c64b
multipath.toml 126 d086440652111171c5dbe7cd8c4c4110ab2e9552d28f6aa3c2cdbeff304ceef5
reschke96.toml 181 cdb8f304aca3c2f55234c495d5dd69f7e2017cb17ab0748ff381d7a2e17f1104
variants 108 886d720893a98069e2244833e467c61aa93caa4516eb97dc0805aa970302bd92
";
}
