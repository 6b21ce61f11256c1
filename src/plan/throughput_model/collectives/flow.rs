//! A collective's iterations, frame by frame, through the servers the parent module's model
//! describes: each node's CPU and each switch port (per direction) first come first served,
//! each shared segment as Ethernet shares it, and a fixed delay per hop for the nodes' own
//! stacks.
//!
//! Each rank runs the steps in order: it posts a step's sends as soon as it has received
//! everything of the step before (its own arrivals, not the slowest rank's). The program is
//! the worker's: barrier, iteration, barrier, the timed iteration, barrier (a one-byte
//! dissemination barrier), so the timed iteration starts with what the warm one and the
//! barrier left on the wires and CPUs, and ranks done early go on into the next barrier while
//! the others finish. A rank's time is from when it begins the timed steps to when the last
//! message it receives in them has reached it.
//!
//! TCP as Linux sends it: a message's segments enter the sender's CPU together; the receiver
//! sends a pure ACK, a frame of its own back along the reply's path, after every second
//! segment, and for the last one unless the connection carries data back (within the
//! program) and the segment is shorter than [`QUICK_ACK_BYTES`]: then the ACK waits and data
//! carries it.
//!
//! A shared segment carries one frame at a time. When it goes idle, every station with a
//! frame waiting transmits at once; after the mean contention interval for that many stations
//! (Metcalfe & Boggs's analysis of Ethernet, not the emulator's simulation of CSMA/CD) one of
//! them, drawn with equal chances from a fixed seed, has it for its oldest frame. A
//! balance-rr bond deals each of a node's frames on that bond to its next slave, across
//! messages, as the driver does.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::ops::Range;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use orchestrate_medium::time::Nanos;

use super::super::wires::hop_wires;
use super::super::{Charge, ModelParams, acked, costs_of, payloads};
use crate::plan::placement::PlannedRank;
use crate::spec::{IfName, Name, NodeName};
use crate::topology::Topology;
use crate::topology::paths::Hop;

/// One message of a step: from rank, to rank, bytes.
pub type Message = (usize, usize, u64);

/// A server frames queue for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Server {
    Host(NodeName),
    Bus(Name),
    /// A switch port of `node` on `segment`: into the switch (`true`) or out of it.
    Port(NodeName, Name, bool),
}

impl Server {
    fn describe(&self) -> String {
        match self {
            Server::Host(n) => format!("host {n}"),
            Server::Bus(s) => format!("segment {s}"),
            Server::Port(n, s, _) => format!("port {n} {s}"),
        }
    }
}

/// What a frame does at one stage of its way.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// Served by `server` for `ns`, which it holds for `hold` (a wire's interframe gap
    /// after the frame). On a shared segment (`slot` > 0) the frame of `station` may first
    /// have to win the medium from other stations waiting for it.
    Serve {
        server: usize,
        ns: Nanos,
        hold: Nanos,
        station: usize,
        slot: Nanos,
    },
    Delay(Nanos),
}

/// What a frame is, for what happens when it is through.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Segment `k` of message `message` (an index into the iteration's messages).
    Data {
        message: usize,
        k: usize,
    },
    Ack,
}

#[derive(Debug)]
struct Frame {
    kind: Kind,
    stages: Vec<Stage>,
    /// Sent for a timed step (its own, or the ACK of one's message).
    timed: bool,
}

/// The timed iteration's outcome.
pub(super) struct Flow {
    /// Per rank, from when it began the timed steps to when the last message it receives
    /// in them reached it (0 for a rank that only sends).
    pub(super) times: Vec<Nanos>,
    /// From the first rank's start to the last rank's end.
    pub(super) completion: Nanos,
    /// The server the timed steps' frames kept busy the longest, and for how long.
    pub(super) busiest: Option<(String, Nanos)>,
}

/// The servers, their state, and the ways frames take through them.
struct Servers<'a> {
    t: &'a Topology,
    p: &'a ModelParams,
    index: BTreeMap<Server, usize>,
    free: Vec<Nanos>,
    busy: Vec<Nanos>,
    /// Per shared segment, the frames waiting for it: station, order of arrival, frame, stage.
    waiting: Vec<Vec<(usize, usize, usize, usize)>>,
    /// Per shared segment, whether a frame holds it (its idle event is due).
    carrying: Vec<bool>,
    /// Who wins a contended bus.
    rng: ChaCha8Rng,
    /// Per bonded interface, the slave its next frame leaves on.
    next_slave: BTreeMap<(NodeName, IfName), usize>,
}

impl Servers<'_> {
    fn id(&mut self, s: Server) -> usize {
        let n = self.index.len();
        let id = *self.index.entry(s).or_insert(n);
        if id == self.free.len() {
            self.free.push(0);
            self.busy.push(0);
            self.waiting.push(Vec::new());
            self.carrying.push(false);
        }
        id
    }

    fn host(&mut self, node: &NodeName, charge: Charge, len: u32, out: &mut Vec<Stage>) {
        let ns = charge.of(len);
        if ns > 0 {
            let server = self.id(Server::Host(node.clone()));
            out.push(Stage::Serve {
                server,
                ns,
                hold: ns,
                station: 0,
                slot: 0,
            });
        }
    }

    /// The stages of one frame of kernel length `len` along `hops`: the first node sends
    /// it, the others forward it, the last receives it.
    fn way(&mut self, hops: &[Hop], len: u32) -> Vec<Stage> {
        let mut out = Vec::new();
        let (t, p) = (self.t, self.p);
        for (i, hop) in hops.iter().enumerate() {
            let c = costs_of(t, &hop.from);
            let charge = if i == 0 {
                Charge::send(&c)
            } else {
                Charge::forward(&c)
            };
            self.host(&hop.from, charge, len, &mut out);
            let w = hop_wires(t, hop, p);
            let lanes: Vec<_> = w.lanes.into_iter().take(w.stripes).collect();
            if !lanes.is_empty() {
                let turn = self
                    .next_slave
                    .entry((hop.from.clone(), hop.dev.clone()))
                    .or_default();
                let lane = &lanes[*turn % lanes.len()];
                *turn += 1;
                let mut seen: BTreeSet<&Name> = BTreeSet::new();
                // Who sends onto each shared wire: the node, and past a switch joining two
                // segments, the switch (one station per segment it joins from).
                let mut station = self.id(Server::Host(hop.from.clone()));
                for wire in lane {
                    let server = if wire.shared {
                        Server::Bus(wire.segment.clone())
                    } else if seen.insert(&wire.segment) {
                        Server::Port(hop.from.clone(), wire.segment.clone(), true)
                    } else {
                        Server::Port(hop.to.clone(), wire.segment.clone(), false)
                    };
                    let server = self.id(server);
                    // The frame is through when its last bit is; the wire is free a gap
                    // later.
                    out.push(Stage::Serve {
                        server,
                        ns: wire.clock.frame(len),
                        hold: wire.clock.wire_time(len),
                        station,
                        slot: if wire.shared { wire.clock.slot() } else { 0 },
                    });
                    station = server;
                }
            }
            out.push(Stage::Delay(
                u64::try_from(p.hop_latency.as_nanos()).unwrap_or(u64::MAX),
            ));
        }
        if let Some(last) = hops.last() {
            let c = costs_of(t, &last.to);
            self.host(&last.to, Charge::receive(&c), len, &mut out);
        }
        out
    }
}

/// One iteration under way: the frames in flight, each rank's step, what it still awaits.
struct Iteration<'a> {
    ranks: &'a [PlannedRank],
    p: &'a ModelParams,
    /// Every message once, with its step.
    messages: Vec<(usize, Message)>,
    /// Per rank, its messages' indices in `messages`, step by step.
    sends: Vec<Vec<Vec<usize>>>,
    /// Per rank and step, how many messages it still awaits.
    awaited: Vec<Vec<usize>>,
    /// Per message, data frames not yet delivered.
    frames_left: Vec<usize>,
    /// Directions (from, to) some message of the program takes: a connection carrying
    /// data both ways.
    directions: BTreeSet<(usize, usize)>,
    step_of: Vec<usize>,
    /// The steps timed (the iteration between barriers), and per rank when it began them
    /// and when the last message it receives in them reached it.
    timed: Range<usize>,
    start: Vec<Option<Nanos>>,
    done: Vec<Nanos>,
    servers: Servers<'a>,
    frames: Vec<Frame>,
    /// (when, order of arrival, frame, its next stage)
    queue: BinaryHeap<Reverse<(Nanos, usize, usize, usize)>>,
    order: usize,
}

impl Iteration<'_> {
    fn enqueue(&mut self, at: Nanos, frame: usize, stage: usize) {
        self.queue.push(Reverse((at, self.order, frame, stage)));
        self.order += 1;
    }

    fn send(&mut self, at: Nanos, kind: Kind, step: usize, hops: &[Hop], len: u32) {
        let stages = self.servers.way(hops, len);
        let timed = self.timed.contains(&step);
        self.frames.push(Frame {
            kind,
            stages,
            timed,
        });
        self.enqueue(at, self.frames.len() - 1, 0);
    }

    /// Posts rank `r`'s sends of its current step at `at`, and moves it on past every step
    /// in which it has nothing more to receive.
    fn advance(&mut self, r: usize, at: Nanos) {
        let ranks = self.ranks;
        while let Some(sends) = self.sends[r].get(self.step_of[r]).cloned() {
            if self.step_of[r] == self.timed.start {
                self.start[r].get_or_insert(at);
            }
            for i in sends {
                let (step, (_, to, bytes)) = self.messages[i];
                let Some(path) = ranks[r].paths.get(to).and_then(Option::as_ref) else {
                    continue;
                };
                for (k, x) in payloads(bytes, self.p.segment_payload()).enumerate() {
                    let len = self.p.frame_len(x);
                    self.send(at, Kind::Data { message: i, k }, step, &path.hops, len);
                }
            }
            if self.awaited[r][self.step_of[r]] > 0 {
                return;
            }
            self.step_of[r] += 1;
        }
    }

    /// A data frame has reached its receiver's application at `at`.
    fn delivered(&mut self, at: Nanos, message: usize, k: usize) {
        let (step, (from, to, bytes)) = self.messages[message];
        let count = payloads(bytes, self.p.segment_payload()).count();
        let last = k + 1 == count;
        let exchange = self.directions.contains(&(to, from));
        let small = payloads(bytes, self.p.segment_payload())
            .last()
            .unwrap_or(0)
            < QUICK_ACK_BYTES;
        if acked(k, count) || (last && !(exchange && small)) {
            let ranks = self.ranks;
            if let Some(path) = ranks[from].paths.get(to).and_then(Option::as_ref) {
                let len = self.p.ack_len();
                self.send(at, Kind::Ack, step, &path.reply, len);
            }
        }
        self.frames_left[message] -= 1;
        if self.frames_left[message] > 0 {
            return;
        }
        self.awaited[to][step] -= 1;
        if self.timed.contains(&step) {
            self.done[to] = self.done[to].max(at);
        }
        if step == self.step_of[to] && self.awaited[to][step] == 0 {
            self.step_of[to] += 1;
            self.advance(to, at);
        }
    }

    fn run(&mut self) {
        for r in 0..self.ranks.len() {
            self.advance(r, 0);
        }
        while let Some(Reverse((at, _, frame, stage))) = self.queue.pop() {
            if frame == BUS_FREE {
                self.bus_free(at, stage);
                continue;
            }
            match self.frames[frame].stages.get(stage).copied() {
                None => {
                    if let Kind::Data { message, k } = self.frames[frame].kind {
                        self.delivered(at, message, k);
                    }
                }
                Some(Stage::Delay(ns)) => self.enqueue(at + ns, frame, stage + 1),
                Some(Stage::Serve {
                    server,
                    station,
                    slot,
                    ..
                }) if slot > 0 => {
                    let order = self.order;
                    self.order += 1;
                    self.servers.waiting[server].push((station, order, frame, stage));
                    if self.servers.free[server] <= at && !self.servers.carrying[server] {
                        self.bus_free(at, server);
                    }
                }
                Some(Stage::Serve {
                    server, ns, hold, ..
                }) => {
                    let start = at.max(self.servers.free[server]);
                    self.servers.free[server] = start + hold;
                    if self.frames[frame].timed {
                        self.servers.busy[server] += hold;
                    }
                    self.enqueue(start + ns, frame, stage + 1);
                }
            }
        }
    }

    /// Shared segment `server` has gone idle at `at`: every station with a frame waiting
    /// for it transmits at once, and after the contention the stations' number costs on
    /// average, one of them, any with the same chance, has it for its oldest frame.
    fn bus_free(&mut self, at: Nanos, server: usize) {
        let waiting = &mut self.servers.waiting[server];
        if waiting.is_empty() {
            self.servers.carrying[server] = false;
            return;
        }
        let stations: BTreeSet<usize> = waiting.iter().map(|w| w.0).collect();
        let winner = *stations
            .iter()
            .nth(self.servers.rng.random_range(0..stations.len()))
            .expect("a station waits");
        let (i, _) = waiting
            .iter()
            .enumerate()
            .filter(|(_, w)| w.0 == winner)
            .min_by_key(|(_, w)| w.1)
            .expect("the winner waits");
        let (_, _, frame, stage) = waiting.swap_remove(i);
        let Some(Stage::Serve { ns, hold, slot, .. }) =
            self.frames[frame].stages.get(stage).copied()
        else {
            unreachable!("a frame waits for a bus only at a bus stage");
        };
        let lost = (contention_slots(stations.len()) * slot as f64).round() as Nanos;
        let start = at + lost;
        self.servers.free[server] = start + hold;
        self.servers.carrying[server] = true;
        if self.frames[frame].timed {
            self.servers.busy[server] += lost + hold;
        }
        self.enqueue(start + ns, frame, stage + 1);
        self.enqueue(start + hold, BUS_FREE, server);
    }
}

/// Linux acknowledges at once, when the application reads it, a segment of at least its
/// estimate of the peer's segment size, which starts at TCP's default MSS (536 bytes,
/// `TCP_MSS_DEFAULT`); a smaller one's ACK waits (40 ms at least) for data going back.
const QUICK_ACK_BYTES: u64 = 536;

/// The seed of the draws that decide contended buses: the model gives the same figure
/// every time.
const CONTENTION_SEED: u64 = 1976;

/// In the event queue, in place of a frame: a shared segment (the stage's place) goes idle.
const BUS_FREE: usize = usize::MAX;

/// The mean number of contention slots before one of `q` stations, all ready at once, has
/// the medium: (1 − A) / A with A = (1 − 1/q)^(q − 1), the chance that exactly one of them
/// transmits in a slot when each does with probability 1/q (Metcalfe & Boggs, "Ethernet:
/// Distributed Packet Switching for Local Computer Networks", CACM 1976). 0 for one station.
pub(super) fn contention_slots(q: usize) -> f64 {
    if q <= 1 {
        return 0.0;
    }
    let q = q as f64;
    let a = (1.0 - 1.0 / q).powf(q - 1.0);
    (1.0 - a) / a
}

/// Runs `steps` among `ranks` on their paths, each rank through them all, and times each
/// rank through the steps of `timed`.
pub(super) fn run(
    t: &Topology,
    ranks: &[PlannedRank],
    steps: &[Vec<Message>],
    timed: Range<usize>,
    p: &ModelParams,
) -> Flow {
    let n = ranks.len();
    let messages: Vec<(usize, Message)> = steps
        .iter()
        .enumerate()
        .flat_map(|(s, step)| step.iter().map(move |&m| (s, m)))
        .collect();
    let mut sends = vec![vec![Vec::new(); steps.len()]; n];
    let mut awaited = vec![vec![0usize; steps.len()]; n];
    for (i, &(s, (from, to, _))) in messages.iter().enumerate() {
        sends[from][s].push(i);
        awaited[to][s] += 1;
    }
    let mut it = Iteration {
        ranks,
        p,
        frames_left: messages
            .iter()
            .map(|(_, m)| payloads(m.2, p.segment_payload()).count())
            .collect(),
        directions: messages.iter().map(|(_, m)| (m.0, m.1)).collect(),
        messages,
        sends,
        awaited,
        step_of: vec![0; n],
        timed,
        start: vec![None; n],
        done: vec![0; n],
        servers: Servers {
            t,
            p,
            index: BTreeMap::new(),
            free: Vec::new(),
            busy: Vec::new(),
            waiting: Vec::new(),
            carrying: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(CONTENTION_SEED),
            next_slave: BTreeMap::new(),
        },
        frames: Vec::new(),
        queue: BinaryHeap::new(),
        order: 0,
    };
    it.run();
    let times: Vec<Nanos> = (0..n)
        .map(|r| match it.start[r] {
            Some(s) if it.done[r] > s => it.done[r] - s,
            _ => 0,
        })
        .collect();
    let first = it.start.iter().flatten().copied().min().unwrap_or(0);
    let last = it.done.iter().copied().max().unwrap_or(0);
    let busiest = it
        .servers
        .index
        .iter()
        .map(|(s, &i)| (s.describe(), it.servers.busy[i]))
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)));
    Flow {
        times,
        completion: last.saturating_sub(first),
        busiest,
    }
}
