//! One measurement point: start a client for every pair through its node's agent, wait until
//! all are connected, release them together, collect their records, and work out the window
//! in which all pairs overlapped.

use std::collections::BTreeMap;
use std::time::Duration;

use orchestrate_worker::agent::Event;
use orchestrate_worker::record::{Pattern, Protocol, Record, Role};

use crate::plan::experiment::{Amount, Workload};
use crate::plan::sweep::{PlacementEntry, Point};
use crate::results::{BondDriver, Placement, PointRow, PointStatus, RecordRow};
use crate::spec::NodeName;
use crate::spec::experiment::{PatternKind, PlacementKind, ProtocolKind};

use super::agent::{Agent, Task};
use super::media::Sampler;

/// How long a client may take to connect and say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Outcome {
    pub records: Vec<RecordRow>,
    pub row: PointRow,
}

fn pattern(p: PatternKind) -> Pattern {
    match p {
        PatternKind::Pingpong => Pattern::Pingpong,
        PatternKind::Stream => Pattern::Stream,
        PatternKind::Token => Pattern::Token,
        PatternKind::Pipeline => Pattern::Pipeline,
        PatternKind::Load => Pattern::Load,
        PatternKind::Filecopy => Pattern::Filecopy,
    }
}

pub(super) fn placement(p: PlacementKind) -> Placement {
    match p {
        PlacementKind::LocalWire => Placement::LocalWire,
        PlacementKind::RemoteWire => Placement::RemoteWire,
        PlacementKind::Explicit => Placement::Explicit,
    }
}

/// The worker command line for one pair of `point`.
pub fn client_args(w: &Workload, size: u64, target: &str) -> Vec<String> {
    let mut a: Vec<String> = vec![w.pattern.as_str().into(), "--connect".into(), target.into()];
    let mut push = |k: &str, v: String| {
        a.push(k.into());
        a.push(v);
    };
    match w.pattern {
        PatternKind::Filecopy => push("--size", size.to_string()),
        _ => push("--size", size.to_string()),
    }
    match w.amount {
        Amount::Exchanges(n) if w.pattern != PatternKind::Filecopy => {
            push("--exchanges", n.to_string())
        }
        Amount::Duration(d) if w.pattern != PatternKind::Filecopy => {
            push("--duration", format!("{:.3}", d.as_secs_f64()))
        }
        _ => {}
    }
    push("--trials", "1".into());
    if w.pattern != PatternKind::Filecopy {
        push("--warmup", w.warmup.to_string());
    }
    if matches!(
        w.pattern,
        PatternKind::Pingpong | PatternKind::Token | PatternKind::Load
    ) {
        push("--protocol", w.protocol.as_str().into());
    }
    if let Some(d) = w.depth {
        push("--depth", d.to_string());
    }
    if let Some(r) = w.rate {
        push("--rate", r.to_string());
    }
    if w.drop_caches {
        a.push("--drop-cache".into());
    }
    a.push("--go".into());
    a.push("stdin".into());
    a
}

struct Running<'a> {
    pair: usize,
    client: &'a NodeName,
    server: &'a NodeName,
    agent: &'a Agent,
    task: Task,
}

/// Runs `point`. Never returns an error: a failure is an outcome, with the node and cause.
/// `medium`, when given, is asked for its statistics just before the clients are released
/// and right after the last one exits.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    point: &Point,
    entry: &PlacementEntry,
    w: &Workload,
    agents: &BTreeMap<NodeName, Agent>,
    port: u16,
    offsets: &BTreeMap<NodeName, i64>,
    bond_driver: Option<BondDriver>,
    medium: Option<&mut Sampler>,
) -> Outcome {
    let mut row = PointRow {
        point: point.id as u32,
        topology: point.topology.to_string(),
        bonding: point.bonding.clone(),
        placement: placement(point.placement),
        pairs: point.pairs,
        pattern: pattern(point.pattern),
        protocol: match point.protocol {
            ProtocolKind::Tcp => Protocol::Tcp,
            ProtocolKind::Udp => Protocol::Udp,
        },
        size_bytes: point.size_bytes,
        rep: point.rep,
        status: PointStatus::Ok,
        error: None,
        window_start_unix_ns: None,
        window_end_unix_ns: None,
        skew_ns: None,
    };
    let mut records = Vec::new();
    let result = measure(point, entry, w, agents, port, &mut records, medium).await;
    if let Err(e) = result {
        row.status = PointStatus::Failed;
        row.error = Some(e);
    }
    let rows: Vec<RecordRow> = records
        .into_iter()
        .map(|(pair, rec)| {
            let p = &entry.placement.pairs[pair];
            RecordRow {
                point: point.id as u32,
                topology: point.topology.to_string(),
                bonding: point.bonding.clone(),
                bond_driver,
                placement: row.placement,
                pairs: point.pairs,
                pair: pair as u32,
                rep: point.rep,
                client_node: p.client.to_string(),
                server_node: p.server.to_string(),
                record: rec,
            }
        })
        .collect();
    if rows.iter().any(|r| r.record.error.is_some()) && row.status == PointStatus::Ok {
        row.status = PointStatus::Failed;
        row.error = rows.iter().find_map(|r| {
            r.record
                .error
                .as_ref()
                .map(|e| format!("{} -> {}: {e}", r.client_node, r.server_node))
        });
    }
    // The window in which every pair was measuring, on the controller's clock: each client's
    // stamps corrected by its node's offset.
    let clients: Vec<(u64, u64)> = rows
        .iter()
        .filter(|r| r.record.role == Role::Client && r.record.error.is_none())
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
    if row.status == PointStatus::Ok && clients.len() == entry.placement.pairs.len() {
        let start = clients.iter().map(|c| c.0).max().unwrap_or(0);
        let end = clients.iter().map(|c| c.1).min().unwrap_or(0);
        row.window_start_unix_ns = Some(start);
        row.window_end_unix_ns = Some(end.max(start));
    }
    let involved: Vec<i64> = entry
        .placement
        .pairs
        .iter()
        .flat_map(|p| [&p.client, &p.server])
        .filter_map(|n| offsets.get(n).copied())
        .collect();
    if let (Some(max), Some(min)) = (involved.iter().max(), involved.iter().min()) {
        row.skew_ns = Some(max - min);
    }
    Outcome { records: rows, row }
}

fn shift(t: u64, offset: i64) -> u64 {
    (t as i64 - offset).max(0) as u64
}

async fn measure(
    point: &Point,
    entry: &PlacementEntry,
    w: &Workload,
    agents: &BTreeMap<NodeName, Agent>,
    port: u16,
    records: &mut Vec<(usize, Record)>,
    mut medium: Option<&mut Sampler>,
) -> Result<(), String> {
    let mut running: Vec<Running> = Vec::new();
    for (i, pair) in entry.placement.pairs.iter().enumerate() {
        let agent = &agents[&pair.client];
        let args = client_args(w, point.size_bytes, &format!("{}:{port}", pair.path.target));
        match agent.spawn(args).await {
            Ok(task) => running.push(Running {
                pair: i,
                client: &pair.client,
                server: &pair.server,
                agent,
                task,
            }),
            Err(e) => {
                stop(&running).await;
                return Err(e.to_string());
            }
        }
    }
    // Barrier: every client connected and ready before any starts.
    for r in &mut running {
        loop {
            match r.task.next(r.client, READY_TIMEOUT).await {
                Ok(Event::Line { line, .. }) if line.contains("\"ready\":true") => break,
                Ok(Event::Line { line, .. }) => {
                    if let Ok(rec) = serde_json::from_str::<Record>(&line) {
                        let msg = rec
                            .error
                            .clone()
                            .unwrap_or_else(|| "a record before the start".into());
                        records.push((r.pair, rec));
                        let who = format!("{} -> {}", r.client, r.server);
                        stop(&running).await;
                        return Err(format!("{who}: {msg}"));
                    }
                }
                Ok(Event::Exit { code, stderr, .. }) => {
                    let who = format!("{} -> {}", r.client, r.server);
                    stop(&running).await;
                    return Err(format!(
                        "{who}: the client exited ({code:?}) before it was ready: {}",
                        stderr.trim()
                    ));
                }
                Ok(Event::Error { message, .. }) => {
                    let who = r.client.to_string();
                    stop(&running).await;
                    return Err(format!("{who}: {message}"));
                }
                Ok(Event::Time { .. }) => {}
                Err(e) => {
                    stop(&running).await;
                    return Err(e.to_string());
                }
            }
        }
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
    let limit = point.estimate * 4 + Duration::from_secs(60);
    let mut failure: Option<String> = None;
    for r in &mut running {
        loop {
            match r.task.next(r.client, limit).await {
                Ok(Event::Line { line, .. }) => match serde_json::from_str::<Record>(&line) {
                    Ok(rec) => records.push((r.pair, rec)),
                    Err(_) => tracing::debug!("{}: {line}", r.client),
                },
                Ok(Event::Exit { code: Some(0), .. }) => break,
                Ok(Event::Exit { code, stderr, .. }) => {
                    failure.get_or_insert_with(|| {
                        format!(
                            "{} -> {}: the client failed ({code:?}): {}",
                            r.client,
                            r.server,
                            last_line(&stderr)
                        )
                    });
                    break;
                }
                Ok(Event::Error { message, .. }) => {
                    failure.get_or_insert_with(|| format!("{}: {message}", r.client));
                    break;
                }
                Ok(Event::Time { .. }) => {}
                Err(e) => {
                    failure.get_or_insert_with(|| e.to_string());
                    break;
                }
            }
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

fn last_line(s: &str) -> &str {
    s.trim().lines().last().unwrap_or("")
}

async fn stop(running: &[Running<'_>]) {
    for r in running {
        let _ = r.agent.kill(r.task.id).await;
    }
}
