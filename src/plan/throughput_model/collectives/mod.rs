//! The collectives' model: the time of one iteration of a collective on a rank placement,
//! from the messages of each step of its algorithm, the paths they take, and the same wires
//! and hosts the token model describes (see the parent module for those assumptions).
//!
//! An algorithm is a sequence of steps (each rank's messages of a step are posted together;
//! it moves on once it has received its own of the step); [`flow`] runs them as the worker
//! does, between barriers, frame by frame through the nodes' CPUs, the shared segments and
//! the switch ports. The
//! broadcast's tree is taken level by level (a rank sends on once it has received), and the
//! reduction's arithmetic is not counted (microseconds against the wires' milliseconds).

mod flow;

use std::collections::BTreeMap;

use serde::Serialize;

use orchestrate_worker::patterns::halo::Grid;
use orchestrate_worker::record::Pattern;

use super::ModelParams;
use crate::plan::placement::PlannedRank;
use crate::spec::{Name, NodeName};
use crate::topology::Topology;

pub use flow::Message;

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
    /// Time per iteration, µs: the mean over ranks of each rank's time from leaving the
    /// barrier to its last message of the iteration (what the OSU micro-benchmarks print,
    /// and the report measures)...
    pub time_us: f64,
    /// ...and from the first rank's leaving the barrier to the last rank's last message.
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
/// over ranks of when each is done, and when the last is ([`flow`]).
pub fn predict_collective(
    t: &Topology,
    ranks: &[PlannedRank],
    shape: &CollectiveShape,
    size: u64,
    p: &ModelParams,
) -> CollectivePrediction {
    let n = ranks.len();
    let steps = schedule(shape, n, size);
    // As the worker runs it: each iteration between barriers. The timed one follows a warm
    // one (whose ACKs and barrier may still load the wires and CPUs as it starts), and ranks
    // done early go on into the next barrier while the others finish.
    let barrier = dissemination_barrier(n);
    let mut program = barrier.clone();
    program.extend(steps.iter().cloned());
    program.extend(barrier.iter().cloned());
    let timed = program.len()..program.len() + steps.len();
    program.extend(steps.iter().cloned());
    program.extend(barrier);
    // The backoffs of contended segments are random: the mean over a fixed set of draws.
    let flows: Vec<flow::Flow> = (0..BACKOFF_DRAWS)
        .map(|draw| flow::run(t, ranks, &program, timed.clone(), p, draw))
        .collect();
    let mean =
        |f: &dyn Fn(&flow::Flow) -> f64| flows.iter().map(f).sum::<f64>() / BACKOFF_DRAWS as f64;
    let time_ns = mean(&|f| f.times.iter().sum::<u64>() as f64 / n.max(1) as f64);
    let completion_ns = mean(&|f| f.completion as f64);
    // A resource busy for most of the iteration bounds it; otherwise the messages' own
    // latencies do.
    let limit = match &flows[0].busiest {
        Some((name, busy)) if 2.0 * *busy as f64 >= completion_ns && completion_ns > 0.0 => {
            name.clone()
        }
        _ => "latency".to_owned(),
    };
    CollectivePrediction {
        size_bytes: size,
        time_us: time_ns * 1e-3,
        completion_us: completion_ns * 1e-3,
        steps: steps.len(),
        limit,
    }
}

/// How many seeded draws of the segments' backoffs the model averages.
pub const BACKOFF_DRAWS: u64 = 8;

/// The worker's barrier between iterations: ⌈log₂ n⌉ rounds, in round k each rank sends one
/// byte to the rank 2^k after it.
fn dissemination_barrier(n: usize) -> Vec<Vec<Message>> {
    let mut rounds = Vec::new();
    let mut k = 1;
    while k < n {
        rounds.push((0..n).map(|r| (r, (r + k) % n, 1)).collect());
        k <<= 1;
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::rank_placement::place_ranks;
    use crate::spec::SourceFile;
    use crate::spec::experiment::PlacementKind;

    fn topo(text: &str) -> Topology {
        crate::topology::from_source(&SourceFile::new("t.toml", text)).unwrap()
    }

    fn predict(text: &str, ranks: usize, s: &CollectiveShape, size: u64) -> CollectivePrediction {
        let t = topo(text);
        let pl = place_ranks(&t, PlacementKind::RowMajor, ranks, 1, &[]).unwrap();
        predict_collective(&t, &pl.ranks, s, size, &ModelParams::default())
    }

    const BUS: &str = "host = \"486dx4\"\n[generator]\nkind = \"single\"\nnodes = 16\n";

    const SWITCHED: &str =
        "host = \"486dx4\"\n[generator]\nkind = \"single\"\nnodes = 16\nmedium = \"switched\"\n";

    #[test]
    fn an_exchange_of_small_messages_costs_a_send_the_wires_and_a_receive() {
        // Recursive doubling on two switched nodes is one exchange of one 8-byte frame each
        // way: the sender's CPU (300 µs), the frame into the switch and out of it (86 bytes
        // on the wire each time: 68.8 µs), the 60 µs stack, the receiver's CPU (300 µs). The
        // two directions use other ports, and nothing else is due: no pure ACK (data comes
        // back, a small segment's ACK waits for it), the barriers' too; a pure ACK would put
        // another 300 µs on a CPU before the timed iteration or in it.
        let rd = shape(Pattern::Allreduce, "recursive-doubling");
        let p = predict(SWITCHED, 2, &rd, 8);
        let expect = 300.0 + 2.0 * 68.8 + 60.0 + 300.0;
        assert!(
            (p.time_us - expect).abs() < 0.01,
            "{} vs {expect}",
            p.time_us
        );
        assert!(
            (p.completion_us - expect).abs() < 0.01,
            "{}",
            p.completion_us
        );
        assert_eq!(p.steps, 1);
    }

    #[test]
    fn a_broadcast_root_is_done_at_once_and_its_last_child_hears_last() {
        // The root only sends: its time is nil, so the mean over two ranks is half the
        // child's, which is at least one message's way (and more: the root, done at once,
        // runs ahead into the barrier, whose frames the child's CPU takes in turn).
        let bcast = shape(Pattern::Bcast, "binomial");
        let two = predict(SWITCHED, 2, &bcast, 8);
        assert_eq!(two.time_us, two.completion_us / 2.0, "{two:?}");
        assert!(
            two.completion_us >= 300.0 + 2.0 * 68.8 + 60.0 + 300.0,
            "{two:?}"
        );
        // Sixteen: the root's CPU sends to 1, 2, 4 and 8 in turn, so rank 8's subtree starts
        // 4 × 300 µs in and the last rank hears at least three levels of sends later.
        let sixteen = predict(SWITCHED, 16, &bcast, 8);
        assert!(
            sixteen.completion_us > 4.0 * 300.0 + 3.0 * 600.0,
            "{sixteen:?}"
        );
        assert!(sixteen.time_us < sixteen.completion_us);
    }

    #[test]
    fn each_rank_moves_on_when_its_own_messages_are_in() {
        // A ring on a switched network: every step alike, each rank's block through its own
        // ports and CPU, so every rank is done at about the same time, and 30 steps take
        // about 30 times a lone message's way (each rank waits for the block before), plus
        // at most the CPU time of each block's pure ACK (sent and received: 600 µs), not the
        // slowest rank's time per step.
        let ring = shape(Pattern::Allreduce, "ring");
        let p = predict(SWITCHED, 16, &ring, 16 * 1024);
        assert_eq!(p.steps, 30);
        assert!(
            (p.time_us - p.completion_us).abs() / p.completion_us < 0.05,
            "{p:?}"
        );
        assert_eq!(p.limit, "latency");
        // A 1 KiB block: 300 µs, a 1090-byte frame into the switch and out (881.6 µs each),
        // 60 µs, 300 µs.
        let lone = 300.0 + 2.0 * 881.6 + 60.0 + 300.0;
        assert!(p.completion_us > 30.0 * lone, "{p:?}");
        assert!(p.completion_us < 30.0 * (lone + 600.0), "{p:?}");
    }

    #[test]
    fn a_bus_shared_by_all_ranks_bounds_an_all_to_all() {
        let pairwise = shape(Pattern::Alltoall, "pairwise");
        let bus = predict(BUS, 16, &pairwise, 1024);
        assert_eq!(bus.limit, "segment bus");
        // 240 messages of one 1090-byte frame each (and their ACKs): the bus cannot carry
        // them faster than their frames alone.
        let frame_us = (1090.0 + 4.0 + 8.0) * 8.0 / 10.0 + 9.6;
        assert!(
            bus.completion_us > 240.0 * frame_us,
            "{}",
            bus.completion_us
        );
        // Sixteen buses joined by switches carry it faster.
        let grid = "host = \"486dx4\"\n[generator]\nkind = \"grid\"\nrows = 4\ncols = 4\ninterconnect = \"switched\"\n";
        let mesh = predict(grid, 16, &pairwise, 1024);
        assert!(mesh.completion_us < bus.completion_us, "{mesh:?} {bus:?}");
        // The draws that settle contention are seeded: the same figure every time.
        assert_eq!(predict(BUS, 16, &pairwise, 1024).time_us, bus.time_us);
    }

    #[test]
    fn two_stations_on_a_bus_take_turns_the_second_after_the_first_frame() {
        // One 8-byte frame each way between two nodes of one bus: a lone message is the
        // sender's CPU, one 86-byte frame (68.8 µs), the stack and the receiver's CPU. The
        // two frames cannot share the wire: the later one waits at least for the earlier
        // one and its gap (78.4 µs), after a collision and backoff if both were ready at
        // once, and the backoffs (whole 51.2 µs slots, two stations) settle it in a few.
        let rd = shape(Pattern::Allreduce, "recursive-doubling");
        let p = predict(BUS, 2, &rd, 8);
        let lone = 300.0 + 68.8 + 60.0 + 300.0;
        assert!(p.time_us >= lone - 0.01, "{p:?}");
        assert!(p.completion_us >= lone + 78.4 - 0.01, "{p:?}");
        assert!(p.completion_us < lone + 78.4 + 10.0 * 51.2, "{p:?}");
    }

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
