//! `cluster verify`: measures every segment over SSH, as the controller would, and checks the
//! figures against the segment's rate and medium.
//!
//! The traffic comes from the goodput meter (`super::wires`) (iperf3 standing in for the worker's streaming
//! pattern until the worker has one). Each tested node gets a temporary address from 198.18.0.0/15 (the block
//! reserved for benchmarking) on the tested interface; it is removed again afterwards.
//!
//! Checks, with `g` the TCP goodput of the rate on Ethernet (1448 payload bytes per 1538 on
//! the wire):
//! - one stream: within 5% of `g`;
//! - shared segment, two pairs at once: together no more than the rate (+5%);
//! - switched segment, two pairs at once: each within 5% of `g` (of `g` less the other
//!   stream's ACKs when the segment has too few nodes for two disjoint pairs and the two
//!   streams run both ways between one pair);
//! - switch: one stream from a node on one of its segments to a node on another within 5% of
//!   `g`; with four segments or more, two such streams between disjoint segments each get `g`.
//!
//! On a segment the medium emulator carries (`emulation = "frames"`), also:
//! - idle wire: the shortest ping round trip is at least the time its two 98-byte frames spend
//!   on the wire (176 µs at 10 Mbit/s on a bus; twice that on a switched segment, where each
//!   frame is stored and forwarded): a lone frame spends its serialization time, which a token
//!   bucket would not;
//! - shared segment, two pairs at once: the emulator counted collisions (four stations with
//!   data and ACKs to send cannot all go without one on a CSMA/CD bus).
//!
//! A check that fails is measured once more and the second result stands (a busy host can
//! starve one run); the table says when a check passed only the second time.
//!
//! Segments are measured several at once (`parallel`), never two that measure on one node:
//! each node's CPU, ports and files stay its own check's.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::cluster_dir::ClusterDir;
use super::error::{Error, Result};
use super::names::ClusterName;
use super::ssh;
use super::state::State;
use super::wires::{Emulation, Flow, Medium, Segment, SegmentId, Station, Wiring, measure_goodput};
use crate::remote::{Host, Inventory};

/// TCP payload per frame over the bytes the frame takes on Ethernet (with timestamps on:
/// MSS 1448; 1500 + 14 header + 24 FCS, preamble and gap).
pub const TCP_GOODPUT_RATIO: f64 = 1448.0 / 1538.0;
/// The same when the wire also carries ACKs (one 66-byte ACK, 90 on the wire, per two
/// segments): a stream's own on a shared, half-duplex segment, or a stream's the other way
/// when both directions of one switched port are in use.
pub const TCP_GOODPUT_RATIO_WITH_ACKS: f64 = 1448.0 / (1538.0 + 45.0);
const TOLERANCE: f64 = 0.05;

#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// Seconds each measurement runs (after one second of warm-up that is not counted).
    pub seconds: u32,
    /// Only these segments (all when empty).
    pub segments: Vec<String>,
    /// Segments measured at once, at most; only segments none of whose measured nodes
    /// another one at the same time uses (each node's CPU, ports and files are its own).
    pub parallel: usize,
}

/// Segments measured at once unless told otherwise: a 16×16 mesh's 32 buses in four rounds.
/// Eight buses carrying two 10 Mbit/s streams each are well within what the medium emulator
/// carries here (its 16-node mesh's eight buses run busy in every study).
pub const DEFAULT_PARALLEL: u16 = 8;

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            seconds: 5,
            segments: Vec::new(),
            parallel: usize::from(DEFAULT_PARALLEL),
        }
    }
}

/// One check of one segment.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// How many times it was measured: a failed check is measured once more (a busy host can
    /// starve one run), and the second result stands.
    pub attempts: u32,
    pub segment: String,
    pub medium: Medium,
    pub rate_mbit_s: f64,
    pub test: String,
    pub flows: Vec<Flow>,
    /// What was required, in words.
    pub expected: String,
    /// `None` when the check could not run (too few nodes on the segment).
    pub pass: Option<bool>,
}

pub fn verify(name: &ClusterName, state_dir: &Path, opts: &VerifyOptions) -> Result<Vec<Check>> {
    let dir = ClusterDir::new(state_dir, name);
    let state = State::load(&dir.state_file())?.ok_or_else(|| Error::Host {
        problem: format!(
            "cluster {name:?} has no state file at {}",
            dir.state_file().display()
        ),
        what_to_do: "bring it up with `orchestrate cluster up` (and the same --state-dir)".into(),
    })?;
    // A netns node runs this host's programs, where iperf3 may be missing (the docker kind's
    // image carries it).
    if state.kind == super::state::Kind::Netns && super::cmd::on_path("iperf3").is_none() {
        return Err(Error::Host {
            problem: format!(
                "cluster {name} is a netns cluster, whose nodes run this host's programs, and \
                 this host has no iperf3, which `cluster verify` measures with"
            ),
            what_to_do: "install iperf3 on this host (Debian: apt-get install iperf3)".into(),
        });
    }
    let inventory = load_inventory(&dir.inventory())?;
    let w = &state.wiring;
    let chosen: Vec<SegmentId> = w
        .segment_ids()
        .filter(|id| opts.segments.is_empty() || opts.segments.contains(&w.segment(*id).name))
        .collect();
    let socket = dir.medium_socket();
    let mut by_segment: BTreeMap<SegmentId, Vec<Check>> = BTreeMap::new();
    for round in rounds(w, &chosen, opts.parallel) {
        let measured: Vec<Result<Vec<Check>>> = std::thread::scope(|s| {
            let handles: Vec<_> = round
                .iter()
                .map(|&id| {
                    let emulator =
                        (w.segment(id).emulation == Emulation::Frames).then_some(socket.as_path());
                    let inventory = &inventory;
                    s.spawn(move || verify_segment(w, id, inventory, opts, emulator))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a segment's check does not panic"))
                .collect()
        });
        for (id, checks) in round.iter().zip(measured) {
            by_segment.insert(*id, checks?);
        }
    }
    // In the wiring's segment order, however they were measured.
    let mut checks: Vec<Check> = by_segment.into_values().flatten().collect();
    if opts.segments.is_empty() {
        for k in 0..w.switches.len() {
            checks.extend(verify_switch(w, k, &inventory, opts)?);
        }
    }
    if checks.is_empty() && !opts.segments.is_empty() {
        return Err(Error::Host {
            problem: format!("no segment named {:?} in the cluster", opts.segments),
            what_to_do: "see the segment names in `orchestrate cluster status`".into(),
        });
    }
    Ok(checks)
}

/// The segments in rounds measured one after the other: each round at most `width`
/// segments, no two of which measure on the same node (verify measures on up to four members
/// of a segment, [`segment_stations`]). Greedy, in segment order.
fn rounds(w: &Wiring, chosen: &[SegmentId], width: usize) -> Vec<Vec<SegmentId>> {
    let measured_on = |id: SegmentId| -> Vec<&str> {
        w.members(id)
            .into_iter()
            .take(4)
            .map(|(n, _)| n.name.as_str())
            .collect()
    };
    let mut rounds: Vec<(Vec<SegmentId>, Vec<&str>)> = Vec::new();
    for &id in chosen {
        let nodes = measured_on(id);
        let fits = rounds.iter_mut().find(|(ids, busy)| {
            ids.len() < width.max(1) && nodes.iter().all(|n| !busy.contains(n))
        });
        match fits {
            Some((ids, busy)) => {
                ids.push(id);
                busy.extend(nodes);
            }
            None => rounds.push((vec![id], nodes)),
        }
    }
    rounds.into_iter().map(|(ids, _)| ids).collect()
}

/// The inventory `up` wrote, read as the controller reads it.
fn load_inventory(path: &Path) -> Result<Inventory> {
    Inventory::load(path).map_err(|e| Error::File {
        what: "reading the inventory".into(),
        path: path.to_owned(),
        detail: e
            .errors
            .iter()
            .map(|e| e.message.as_str())
            .collect::<Vec<_>>()
            .join("; "),
    })
}

fn host_of<'a>(inv: &'a Inventory, node: &str) -> Result<&'a Host> {
    inv.host(node).ok_or_else(|| Error::Host {
        problem: format!("node {node} is not in the inventory"),
        what_to_do: "bring the cluster up again".into(),
    })
}

fn test_address(segment: SegmentId, k: usize) -> String {
    let i = segment.index();
    format!("198.{}.{}.{}", 18 + (i / 256) % 2, i % 256, k + 1)
}

fn verify_segment(
    w: &Wiring,
    id: SegmentId,
    inv: &Inventory,
    opts: &VerifyOptions,
    emulator: Option<&Path>,
) -> Result<Vec<Check>> {
    let seg = w.segment(id);
    let rate = seg.rate_bps as f64 / 1e6;
    // A shared segment is half duplex: one stream's ACKs take the same wire as its data.
    let g = rate
        * match seg.medium {
            Medium::Shared => TCP_GOODPUT_RATIO_WITH_ACKS,
            Medium::Switched => TCP_GOODPUT_RATIO,
        };
    let stations = segment_stations(w, id, inv)?;
    let check = |test: &str, flows: Vec<Flow>, expected: String, pass: Option<bool>| Check {
        attempts: 1,
        segment: seg.name.clone(),
        medium: seg.medium,
        rate_mbit_s: rate,
        test: test.into(),
        flows,
        expected,
        pass,
    };
    if stations.len() < 2 {
        return Ok(vec![check(
            "1 stream",
            vec![],
            "two nodes on the segment".into(),
            None,
        )]);
    }
    with_addresses(&stations, || {
        let mut out = Vec::new();
        out.push(retried(|| {
            let single = measure_goodput(&[(&stations[0], &stations[1], 5201)], opts.seconds)?;
            let x = single[0].mbit_s;
            Ok(check(
                "1 stream",
                single,
                format!("{:.2}..{:.2}", g * (1.0 - TOLERANCE), g * (1.0 + TOLERANCE)),
                Some((x - g).abs() <= TOLERANCE * g),
            ))
        })?);
        let disjoint = stations.len() >= 4;
        let pairs: Vec<(&Station, &Station, u16)> = if disjoint {
            vec![
                (&stations[0], &stations[1], 5201),
                (&stations[2], &stations[3], 5202),
            ]
        } else {
            // Too few nodes for two disjoint pairs: both directions of one pair, where each
            // direction also carries the other stream's ACKs.
            vec![
                (&stations[0], &stations[1], 5201),
                (&stations[1], &stations[0], 5202),
            ]
        };
        let full = if disjoint {
            g
        } else {
            rate * TCP_GOODPUT_RATIO_WITH_ACKS
        };
        if emulator.is_some() {
            out.push(retried(|| {
                let hops = match seg.medium {
                    Medium::Shared => 1,
                    Medium::Switched => 2,
                };
                let (min_us, floor_us) = idle_wire(&stations[0], &stations[1], seg.rate_bps, hops)?;
                Ok(check(
                    "idle wire",
                    vec![],
                    format!("ping min rtt {min_us:.0} µs >= {floor_us:.0} µs"),
                    Some(min_us >= floor_us),
                ))
            })?);
        }
        out.push(retried(|| {
            let before = emulator.map(|e| collisions(e, &seg.name)).transpose()?;
            let two = measure_goodput(&pairs, opts.seconds)?;
            let after = emulator.map(|e| collisions(e, &seg.name)).transpose()?;
            let collided = before.zip(after).map(|(b, a)| a.saturating_sub(b));
            let (expected, pass) = two_pairs_verdict(seg, full, &two, collided);
            Ok(check("2 pairs at once", two, expected, Some(pass)))
        })?);
        Ok(out)
    })
}

/// Up to four of the segment's members, each with a test address on it.
fn segment_stations<'a>(
    w: &'a Wiring,
    id: SegmentId,
    inv: &'a Inventory,
) -> Result<Vec<Station<'a>>> {
    w.members(id)
        .into_iter()
        .take(4)
        .enumerate()
        .map(|(k, (node, port))| {
            Ok(Station {
                node: &node.name,
                host: host_of(inv, &node.name)?,
                ifname: &port.interface,
                addr: test_address(id, k),
            })
        })
        .collect()
}

/// What two pairs at once must show: on a shared segment their sum within the rate (and,
/// where the medium emulator counted them, collisions); on a switched one each pair at
/// `full`. Returns the requirement in words and whether `flows` meet it.
fn two_pairs_verdict(
    seg: &Segment,
    full: f64,
    flows: &[Flow],
    collided: Option<u64>,
) -> (String, bool) {
    let rate = seg.rate_bps as f64 / 1e6;
    match seg.medium {
        Medium::Shared => {
            let sum: f64 = flows.iter().map(|f| f.mbit_s).sum();
            let fits = sum <= rate * (1.0 + TOLERANCE);
            match collided {
                Some(n) => (
                    format!(
                        "sum <= {:.2}, collisions > 0 (counted {n})",
                        rate * (1.0 + TOLERANCE),
                    ),
                    fits && n > 0,
                ),
                None => (format!("sum <= {:.2}", rate * (1.0 + TOLERANCE)), fits),
            }
        }
        Medium::Switched => (
            format!("each >= {:.2}", full * (1.0 - TOLERANCE)),
            flows.iter().all(|f| f.mbit_s >= full * (1.0 - TOLERANCE)),
        ),
    }
}

/// Checks a switch: a stream from a node on one of its segments to a node on another crosses
/// both segments and the switch at the segments' rate; with four or more segments, two such
/// streams between disjoint segment pairs each get the full rate (the switch keeps them apart,
/// which is what the study's switched mesh bought).
fn verify_switch(
    w: &Wiring,
    k: usize,
    inv: &Inventory,
    opts: &VerifyOptions,
) -> Result<Vec<Check>> {
    let sw = &w.switches[k];
    let mut stations: Vec<Station> = Vec::new();
    for id in sw.segments.iter().take(4) {
        let pick = w
            .members(*id)
            .into_iter()
            .find(|(n, _)| !stations.iter().any(|s| s.node == n.name));
        if let Some((node, port)) = pick {
            let n = stations.len();
            stations.push(Station {
                node: &node.name,
                host: host_of(inv, &node.name)?,
                ifname: &port.interface,
                // One subnet for the whole switched network, from the top of the block.
                addr: format!("198.19.{}.{}", 255 - (k % 50), n + 1),
            });
        }
    }
    // The slowest segment the streams cross bounds them.
    let rate = sw
        .segments
        .iter()
        .map(|id| w.segment(*id).rate_bps)
        .min()
        .unwrap_or(0) as f64
        / 1e6;
    let g = rate * TCP_GOODPUT_RATIO;
    let check = |test: &str, flows: Vec<Flow>, expected: String, pass: Option<bool>| Check {
        attempts: 1,
        segment: format!("switch {}", sw.name),
        medium: Medium::Switched,
        rate_mbit_s: rate,
        test: test.into(),
        flows,
        expected,
        pass,
    };
    if stations.len() < 2 {
        return Ok(vec![check(
            "1 stream across",
            vec![],
            "nodes on two segments".into(),
            None,
        )]);
    }
    with_addresses(&stations, || {
        let mut out = Vec::new();
        out.push(retried(|| {
            let single = measure_goodput(&[(&stations[0], &stations[1], 5201)], opts.seconds)?;
            let x = single[0].mbit_s;
            Ok(check(
                "1 stream across",
                single,
                format!("{:.2}..{:.2}", g * (1.0 - TOLERANCE), g * (1.0 + TOLERANCE)),
                Some((x - g).abs() <= TOLERANCE * g),
            ))
        })?);
        if stations.len() >= 4 {
            out.push(retried(|| {
                let two = measure_goodput(
                    &[
                        (&stations[0], &stations[1], 5201),
                        (&stations[2], &stations[3], 5202),
                    ],
                    opts.seconds,
                )?;
                let pass = two.iter().all(|f| f.mbit_s >= g * (1.0 - TOLERANCE));
                Ok(check(
                    "2 pairs across",
                    two,
                    format!("each >= {:.2}", g * (1.0 - TOLERANCE)),
                    Some(pass),
                ))
            })?);
        }
        Ok(out)
    })
}

/// The shortest of 20 ping round trips between two stations, and the least an Ethernet allows:
/// two 98-byte frames (an 84-byte ICMP echo and its Ethernet header) each serialized `hops`
/// times, µs.
fn idle_wire(from: &Station, to: &Station, rate_bps: u64, hops: u32) -> Result<(f64, f64)> {
    let clock = orchestrate_medium::time::WireClock::new(rate_bps);
    let floor_us = f64::from(2 * hops) * clock.frame(98) as f64 / 1000.0;
    let cmd = ssh::command(
        from.host,
        &format!("pinging {} from {}", to.node, from.node),
        &format!("ping -q -n -c 20 -i 0.05 -w 10 {}", to.addr),
    )
    .timeout(Duration::from_secs(30));
    let out = cmd.run()?;
    // "rtt min/avg/max/mdev = 0.245/0.297/0.867/0.132 ms"
    let min_ms = out
        .lines()
        .find_map(|l| l.split_once(" = ").filter(|(k, _)| k.contains("min/")))
        .and_then(|(_, v)| v.split('/').next()?.trim().parse::<f64>().ok())
        .ok_or_else(|| Error::Unexpected {
            what: format!("reading ping's round trips from {}", from.node),
            command: cmd.display(),
            detail: out.clone(),
        })?;
    Ok((min_ms * 1000.0, floor_us))
}

/// The collisions the emulator has counted on a segment since it started.
fn collisions(socket: &Path, segment: &str) -> Result<u64> {
    use orchestrate_medium::realtime::control::{Request, query};
    let snapshot = query(socket, Request::Total).map_err(|e| Error::Host {
        problem: e.to_string(),
        what_to_do: "take the cluster down and up again: its medium emulator is gone".into(),
    })?;
    Ok(snapshot
        .iter()
        .flat_map(|s| &s.segments)
        .find(|s| s.segment == segment)
        .map_or(0, |s| s.counters.collisions))
}

/// Measures a check, and once more if it failed; the second result stands.
fn retried(measure_check: impl Fn() -> Result<Check>) -> Result<Check> {
    let first = measure_check()?;
    if first.pass != Some(false) {
        return Ok(first);
    }
    tracing::info!(segment = %first.segment, test = %first.test, "failed once; measuring again");
    let mut second = measure_check()?;
    second.attempts = 2;
    Ok(second)
}

/// Gives each station its test address, runs `body`, and removes the addresses again
/// whatever `body` returned.
fn with_addresses<T>(stations: &[Station], body: impl FnOnce() -> Result<T>) -> Result<T> {
    let mut added = Vec::new();
    let result = (|| {
        for s in stations {
            ssh::command(
                s.host,
                &format!("adding a test address on {}:{}", s.node, s.ifname),
                &format!("ip addr add {}/24 dev {}", s.addr, s.ifname),
            )
            .timeout(Duration::from_secs(20))
            .run()?;
            added.push(s);
        }
        body()
    })();
    let mut cleanup_error = None;
    for s in added {
        if let Err(e) = ssh::command(
            s.host,
            &format!("removing the test address on {}:{}", s.node, s.ifname),
            &format!("ip addr del {}/24 dev {}", s.addr, s.ifname),
        )
        .timeout(Duration::from_secs(20))
        .run()
        {
            cleanup_error.get_or_insert(e);
        }
    }
    match (result, cleanup_error) {
        (Err(e), _) | (Ok(_), Some(e)) => Err(e),
        (Ok(v), None) => Ok(v),
    }
}

/// The checks as a plain-text table.
pub fn table(checks: &[Check]) -> String {
    let mut rows = vec![[
        "segment".to_owned(),
        "medium".into(),
        "rate".into(),
        "test".into(),
        "flows (Mbit/s)".into(),
        "required".into(),
        "result".into(),
    ]];
    for c in checks {
        let flows = c
            .flows
            .iter()
            .map(|f| format!("{}->{} {:.2}", f.from, f.to, f.mbit_s))
            .collect::<Vec<_>>()
            .join(", ");
        rows.push([
            c.segment.clone(),
            format!("{:?}", c.medium).to_lowercase(),
            format!("{} Mbit/s", c.rate_mbit_s),
            c.test.clone(),
            flows,
            c.expected.clone(),
            match (c.pass, c.attempts) {
                (Some(true), 1) => "ok".into(),
                (Some(true), _) => "ok (2nd run)".into(),
                (Some(false), _) => "FAIL".into(),
                (None, _) => "skipped".into(),
            },
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (n, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if n == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_addresses_are_in_the_benchmarking_block_and_distinct() {
        let a = test_address(SegmentId::for_test(0), 0);
        let b = test_address(SegmentId::for_test(300), 3);
        assert_eq!(a, "198.18.0.1");
        assert_eq!(b, "198.19.44.4");
    }

    #[test]
    fn ten_mbit_goodput_is_what_ethernet_gives() {
        let g = 10.0 * TCP_GOODPUT_RATIO;
        assert!((9.40..9.43).contains(&g), "{g}");
    }

    #[test]
    fn two_pairs_on_a_bus_share_its_rate_and_collide() {
        let w = crate::vcluster::wires::mesh(false);
        let seg = w.segment(SegmentId::for_test(0));
        let flow = |mbit_s| Flow {
            from: "a".into(),
            to: "b".into(),
            mbit_s,
        };
        let rate = seg.rate_bps as f64 / 1e6;
        let halves = [flow(rate * 0.45), flow(rate * 0.45)];
        assert!(two_pairs_verdict(seg, rate, &halves, Some(3)).1);
        assert!(!two_pairs_verdict(seg, rate, &halves, Some(0)).1);
        assert!(two_pairs_verdict(seg, rate, &halves, None).1);
        let (expected, pass) = two_pairs_verdict(seg, rate, &[flow(rate), flow(rate)], Some(3));
        assert!(!pass);
        assert_eq!(
            expected,
            format!("sum <= {:.2}, collisions > 0 (counted 3)", rate * 1.05)
        );
    }

    #[test]
    fn segments_measured_at_once_share_no_node_and_every_segment_is_measured_once() {
        let w = crate::vcluster::wires::mesh(false);
        let all: Vec<SegmentId> = w.segment_ids().collect();
        for width in [1, 2, 4, 8, 100] {
            let r = rounds(&w, &all, width);
            let mut seen: Vec<SegmentId> = r.iter().flatten().copied().collect();
            seen.sort();
            assert_eq!(seen, all, "width {width}");
            for round in &r {
                assert!(round.len() <= width);
                let mut nodes: Vec<&str> = round
                    .iter()
                    .flat_map(|id| {
                        w.members(*id)
                            .into_iter()
                            .take(4)
                            .map(|(n, _)| n.name.as_str())
                    })
                    .collect();
                let n = nodes.len();
                nodes.sort();
                nodes.dedup();
                assert_eq!(nodes.len(), n, "a node measured twice at once: {round:?}");
            }
        }
        // The 4×4 mesh's four rows share no node, nor do its four columns: two rounds.
        assert_eq!(rounds(&w, &all, 8).len(), 2);
        assert_eq!(rounds(&w, &all, 1).len(), all.len());
    }

    #[test]
    fn table_marks_failures() {
        let t = table(&[Check {
            attempts: 2,
            segment: "row1".into(),
            medium: Medium::Shared,
            rate_mbit_s: 10.0,
            test: "1 stream".into(),
            flows: vec![Flow {
                from: "n01:eth1".into(),
                to: "n02:eth1".into(),
                mbit_s: 5.0,
            }],
            expected: "8.69..9.60".into(),
            pass: Some(false),
        }]);
        assert!(
            t.contains("FAIL") && t.contains("n01:eth1->n02:eth1 5.00"),
            "{t}"
        );
    }
}
