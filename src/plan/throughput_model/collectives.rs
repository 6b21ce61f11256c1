//! The collectives' model: the time of one iteration of a collective on a rank placement,
//! from the messages of each step of its algorithm, the paths they take, and the same wires
//! and hosts the token model describes (see the parent module for those assumptions).
//!
//! An algorithm is a sequence of steps; a step's messages are in flight together and the
//! next step starts when the step's last message has arrived (each rank waits for what it
//! receives before it sends on). A step takes the longest of:
//! - its slowest message alone on an idle path ([`super::one_way`]'s pipeline of frames);
//! - for each shared segment, the wire time of every frame (and pure ACK) of every message
//!   crossing it, over [`super::bus_efficiency`] when two or more messages contend;
//! - for each switched port, per direction, the frames through it (a rank sending to many at
//!   once sends them all through its own port);
//! - for each node, the CPU its frames cost (sent, received, forwarded), each message's last
//!   ACK included: no reply carries it, as one carries a token's, so it is a frame of its own
//!   back along the reply's path (on 1996 hosts, a frame costs as much CPU at each end as a
//!   data frame).
//!
//! The broadcast's tree is taken level by level (a rank sends on once it has received), and
//! the reduction's arithmetic is not counted (microseconds against the wires' milliseconds).

use std::collections::BTreeMap;

use serde::Serialize;

use orchestrate_worker::patterns::halo::Grid;
use orchestrate_worker::record::Pattern;

use super::wires::{hop_wires, payloads};
use super::{ModelParams, Resource, bus_efficiency, direction, transit};
use crate::plan::placement::PlannedRank;
use crate::spec::{Name, NodeName};
use crate::topology::Topology;

/// One message of a step: from rank, to rank, bytes.
pub type Message = (usize, usize, u64);

/// What a collective runs, as the model needs it.
#[derive(Debug, Clone, Copy)]
pub struct CollectiveShape<'a> {
    pub pattern: Pattern,
    pub algorithm: &'a str,
    pub grid: Option<Grid>,
    pub periodic: bool,
    pub root: usize,
}

/// The model's time for one iteration at one size.
#[derive(Debug, Clone, Serialize)]
pub struct CollectivePrediction {
    pub size_bytes: u64,
    /// Time per iteration, µs, the mean over ranks of when each is done (what the OSU
    /// micro-benchmarks print, and the report measures)...
    pub time_us: f64,
    /// ...and when the last rank is done.
    pub completion_us: f64,
    pub steps: usize,
    /// What bounds most of the time: `latency`, `segment <name>`, `port <node> <segment>` or
    /// `host <node>`.
    pub limit: String,
}

/// The steps of `shape` among `n` ranks at `size` bytes, as the worker's algorithms send them.
pub fn schedule(shape: &CollectiveShape, n: usize, size: u64) -> Vec<Vec<Message>> {
    match shape.pattern {
        Pattern::Allreduce => {
            let count = size / 4;
            if shape.algorithm == "ring" && count >= n as u64 {
                ring(n, count)
            } else {
                recursive_doubling(n, size)
            }
        }
        Pattern::Alltoall if shape.algorithm == "linear" => {
            vec![
                (0..n)
                    .flat_map(|r| (1..n).map(move |k| (r, (r + k) % n, size)))
                    .collect(),
            ]
        }
        Pattern::Alltoall => (1..n)
            .map(|k| (0..n).map(|r| (r, (r + k) % n, size)).collect())
            .collect(),
        Pattern::Bcast => binomial(n, shape.root, size),
        Pattern::Halo => vec![halo(n, shape, size)],
        _ => Vec::new(),
    }
}

fn ring(n: usize, count: u64) -> Vec<Vec<Message>> {
    let n64 = n as u64;
    let block = |b: usize| 4 * (count / n64 + u64::from((b as u64) < count % n64));
    let mut steps = Vec::new();
    // Reduce-scatter, then allgather: each step every rank sends one block to the next.
    for k in 1..n {
        steps.push(
            (0..n)
                .map(|r| (r, (r + 1) % n, block((r + n - (k - 1)) % n)))
                .collect(),
        );
    }
    for k in 0..n - 1 {
        steps.push(
            (0..n)
                .map(|r| (r, (r + 1) % n, block((r + 1 + n - k) % n)))
                .collect(),
        );
    }
    steps
}

fn recursive_doubling(n: usize, size: u64) -> Vec<Vec<Message>> {
    let power = 1usize << n.ilog2();
    let extra = n - power;
    let real = |v: usize| if v < extra { 2 * v + 1 } else { v + extra };
    let mut steps = Vec::new();
    if extra > 0 {
        steps.push((0..extra).map(|i| (2 * i, 2 * i + 1, size)).collect());
    }
    let mut distance = 1;
    while distance < power {
        steps.push(
            (0..power)
                .map(|v| (real(v), real(v ^ distance), size))
                .collect(),
        );
        distance <<= 1;
    }
    if extra > 0 {
        steps.push((0..extra).map(|i| (2 * i + 1, 2 * i, size)).collect());
    }
    steps
}

fn binomial(n: usize, root: usize, size: u64) -> Vec<Vec<Message>> {
    // Counted from the root, rank v's parent is v with its lowest set bit cleared; a rank
    // receives one level after its parent did, and a parent sends to all its children at
    // once.
    let real = |v: usize| (v + root) % n;
    let mut level = vec![0usize; n];
    let mut levels: Vec<Vec<Message>> = Vec::new();
    for v in 1..n {
        let parent = v & (v - 1);
        level[v] = level[parent] + 1;
        let at = level[v] - 1;
        if levels.len() <= at {
            levels.resize(at + 1, Vec::new());
        }
        levels[at].push((real(parent), real(v), size));
    }
    levels
}

fn halo(n: usize, shape: &CollectiveShape, size: u64) -> Vec<Message> {
    let grid = shape.grid.unwrap_or_else(|| Grid::square(n));
    let (rows, cols) = (grid.rows as isize, grid.cols as isize);
    let mut out = Vec::new();
    for r in 0..n {
        let (row, col) = ((r as isize) / cols, (r as isize) % cols);
        for (dr, dc) in [(0, -1), (0, 1), (-1, 0), (1, 0)] {
            let (mut y, mut x) = (row + dr, col + dc);
            let inside = (0..rows).contains(&y) && (0..cols).contains(&x);
            if !inside && !shape.periodic {
                continue;
            }
            y = y.rem_euclid(rows);
            x = x.rem_euclid(cols);
            let to = (y * cols + x) as usize;
            if to != r {
                out.push((r, to, size));
            }
        }
    }
    out
}

/// What one step of a collective loads, for the plan: its messages, how far they go, where
/// they are forwarded and the segment most of them cross.
#[derive(Debug, Clone, Serialize)]
pub struct StepSummary {
    /// `each rank to rank + k`, a short list of `from>to`, or the count.
    pub messages: String,
    pub max_hops: usize,
    /// Forwarding nodes and how many of the step's messages each forwards, most first.
    pub forwarders: Vec<(NodeName, usize)>,
    /// The segment the most messages cross, and how many.
    pub busiest_segment: Option<(Name, usize)>,
}

/// The steps of `shape` at `size` as the plan shows them.
pub fn step_summaries(
    ranks: &[PlannedRank],
    shape: &CollectiveShape,
    size: u64,
) -> Vec<StepSummary> {
    let n = ranks.len();
    schedule(shape, n, size)
        .iter()
        .map(|step| {
            let mut forwarders: BTreeMap<NodeName, usize> = BTreeMap::new();
            let mut segments: BTreeMap<Name, usize> = BTreeMap::new();
            let mut max_hops = 0;
            for &(from, to, _) in step {
                let Some(path) = ranks[from].paths.get(to).and_then(Option::as_ref) else {
                    continue;
                };
                max_hops = max_hops.max(path.hop_count());
                for f in path.forwarders() {
                    *forwarders.entry(f.clone()).or_default() += 1;
                }
                for seg in &path.segments {
                    *segments.entry(seg.clone()).or_default() += 1;
                }
            }
            let mut forwarders: Vec<(NodeName, usize)> = forwarders.into_iter().collect();
            forwarders.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let busiest_segment = segments
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)));
            StepSummary {
                messages: describe(step, n),
                max_hops,
                forwarders,
                busiest_segment,
            }
        })
        .collect()
}

/// A step's messages in a few words.
fn describe(step: &[Message], n: usize) -> String {
    let offsets: std::collections::BTreeSet<usize> =
        step.iter().map(|&(f, t, _)| (t + n - f) % n).collect();
    if step.len() == n && offsets.len() == 1 {
        let k = offsets.into_iter().next().unwrap_or(0);
        return format!("each rank to rank + {k}");
    }
    if step.len() <= 8 {
        let each: Vec<String> = step.iter().map(|&(f, t, _)| format!("{f}>{t}")).collect();
        return each.join(" ");
    }
    format!("{} messages", step.len())
}

/// The model's time of one iteration of `shape` at `size` on the ranks' paths: the mean
/// over ranks of when each is done, and when the last is.
pub fn predict_collective(
    t: &Topology,
    ranks: &[PlannedRank],
    shape: &CollectiveShape,
    size: u64,
    p: &ModelParams,
) -> CollectivePrediction {
    let n = ranks.len();
    let steps = schedule(shape, n, size);
    let mut total = 0.0;
    let mut limits: BTreeMap<String, f64> = BTreeMap::new();
    // When each rank is done: at the end of the last step that brings it a message. A rank
    // only ever sending (a broadcast's root) is done once its sends are written, at once.
    let mut done = vec![0.0f64; n];
    for step in &steps {
        let (time, limit) = step_time(t, ranks, step, p);
        total += time;
        *limits.entry(limit).or_default() += time;
        for &(_, to, _) in step {
            done[to] = total;
        }
    }
    let limit = limits
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(l, _)| l)
        .unwrap_or_else(|| "latency".into());
    CollectivePrediction {
        size_bytes: size,
        time_us: done.iter().sum::<f64>() / n.max(1) as f64 * 1e6,
        completion_us: total * 1e6,
        steps: steps.len(),
        limit,
    }
}

/// A step's time, s, and what bounds it.
fn step_time(
    t: &Topology,
    ranks: &[PlannedRank],
    step: &[Message],
    p: &ModelParams,
) -> (f64, String) {
    let mut demand: BTreeMap<Resource, f64> = BTreeMap::new();
    let mut contenders: BTreeMap<Name, usize> = BTreeMap::new();
    let mut ports: BTreeMap<(NodeName, Name, bool), f64> = BTreeMap::new();
    let mut slowest = 0.0f64;
    let mut longest_frame = 0u64;
    for &(from, to, bytes) in step {
        let Some(path) = ranks[from].paths.get(to).and_then(Option::as_ref) else {
            continue;
        };
        let payload: Vec<u64> = payloads(bytes, p.segment_payload()).collect();
        longest_frame = longest_frame.max(payload.iter().copied().max().unwrap_or(0));
        let mut crossed = std::collections::BTreeSet::new();
        let d = direction(t, &path.hops, &payload, p, &mut demand, &mut crossed);
        slowest = slowest.max(transit(&d, &payload, p) as f64 * 1e-9);
        // The message's last ACK: a collective's next message on this connection goes the
        // same way (or is sent before this one arrives), so no reply carries it, and it
        // costs a pure ACK frame back along the reply's path: the receiver sends it, every
        // forwarder on the way forwards it, the sender receives it (`direction` counts the
        // ACKs within a message of several segments, one per two).
        direction(t, &path.reply, &[0], p, &mut demand, &mut crossed);
        for s in crossed {
            *contenders.entry(s).or_default() += 1;
        }
        for hop in &path.hops {
            let w = hop_wires(t, hop, p);
            let lanes = w.lanes.len().max(1) as f64;
            for lane in &w.lanes {
                let switched: Vec<_> = lane.iter().filter(|w| !w.shared).collect();
                let (Some(first), Some(last)) = (switched.first(), switched.last()) else {
                    continue;
                };
                let busy = |w: &super::wires::Wire| -> f64 {
                    payload
                        .iter()
                        .map(|&x| w.clock.wire_time(p.frame_len(x)))
                        .sum::<u64>() as f64
                        * 1e-9
                        / lanes
                };
                *ports
                    .entry((hop.from.clone(), first.segment.clone(), true))
                    .or_default() += busy(first);
                *ports
                    .entry((hop.to.clone(), last.segment.clone(), false))
                    .or_default() += busy(last);
            }
        }
    }
    let len = p.frame_len(longest_frame);
    let mut time = slowest;
    let mut limit = "latency".to_owned();
    for (r, busy) in demand {
        let (busy, name) = match &r {
            Resource::Segment(s) => {
                let eff = bus_efficiency(contenders.get(s).copied().unwrap_or(1), len, 0);
                (busy / eff, format!("segment {s}"))
            }
            Resource::Host(n) => (busy, format!("host {n}")),
        };
        if busy > time {
            time = busy;
            limit = name;
        }
    }
    for ((node, segment, _), busy) in ports {
        if busy > time {
            time = busy;
            limit = format!("port {node} {segment}");
        }
    }
    (time, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(pattern: Pattern, algorithm: &str) -> CollectiveShape<'_> {
        CollectiveShape {
            pattern,
            algorithm,
            grid: None,
            periodic: false,
            root: 0,
        }
    }

    fn sent_by(steps: &[Vec<Message>], rank: usize) -> u64 {
        steps
            .iter()
            .flatten()
            .filter(|m| m.0 == rank)
            .map(|m| m.2)
            .sum()
    }

    #[test]
    fn schedules_send_what_each_algorithm_sends() {
        let ring = schedule(&shape(Pattern::Allreduce, "ring"), 4, 1024);
        assert_eq!(ring.len(), 6);
        assert_eq!(sent_by(&ring, 0), 2 * 3 * 256);
        // Too few elements for a ring: recursive doubling, log2 steps of the whole vector.
        let rd = schedule(&shape(Pattern::Allreduce, "ring"), 16, 8);
        assert_eq!(rd.len(), 4);
        assert_eq!(sent_by(&rd, 5), 4 * 8);
        // Six ranks: two fold in first and get the result last.
        let rd6 = schedule(&shape(Pattern::Allreduce, "recursive-doubling"), 6, 8);
        assert_eq!(rd6.len(), 4);
        assert_eq!(
            (sent_by(&rd6, 0), sent_by(&rd6, 1), sent_by(&rd6, 5)),
            (8, 24, 16)
        );
        let pairwise = schedule(&shape(Pattern::Alltoall, "pairwise"), 16, 64);
        assert_eq!(pairwise.len(), 15);
        assert!(pairwise.iter().all(|s| s.len() == 16));
        let linear = schedule(&shape(Pattern::Alltoall, "linear"), 16, 64);
        assert_eq!((linear.len(), linear[0].len()), (1, 240));
        let bcast = schedule(&shape(Pattern::Bcast, "binomial"), 16, 8);
        assert_eq!(bcast.len(), 4);
        assert_eq!(bcast[0].len(), 4, "the root sends to 1, 2, 4 and 8 first");
        assert_eq!(bcast.iter().map(Vec::len).sum::<usize>(), 15);
        let halo = schedule(&shape(Pattern::Halo, "nonblocking"), 16, 8);
        assert_eq!(halo[0].len(), 2 * (2 * 4 * 3));
    }
}
