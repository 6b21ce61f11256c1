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
//! A shared segment carries one frame at a time, under IEEE 802.3's rules as the standard
//! gives them (not the emulator's code): a station whose frame is ready sends when the
//! medium is idle, and stations that deferred to a frame all send when it ends; two or more
//! starting at once collide for their preamble, jam and the gap (192 bit times), then each
//! waits a whole number of slots drawn from [0, 2^n) after its n-th collision (truncated
//! binary exponential backoff). A sender's transmitter turns around for 128 bit times after
//! its frame, so one station that deferred to it (a receiver's ACK) sends alone. The draws
//! come from fixed seeds, and the parent module averages a fixed set of them. A
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
    /// Per shared segment, when its next decision is due: the end of the frame or collision
    /// on it, or the first backoff to run out (an idle event at any other time is stale).
    decision: Vec<Option<Nanos>>,
    /// Per shared segment and station: the collisions its oldest waiting frame has had, and
    /// when the backoff after the last of them ends.
    backoff: BTreeMap<(usize, usize), (u32, Nanos)>,
    /// The stations' backoff draws.
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
            self.decision.push(None);
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
                if self.servers.decision[stage] == Some(at) {
                    self.bus_free(at, stage);
                }
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
                    if self.servers.free[server] <= at {
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

    /// Shared segment `server` is idle at `at`: the 802.3 MAC, slot by slot. Every station
    /// whose oldest frame is out of backoff transmits now (a station that found the medium
    /// busy has deferred to this moment); one alone has the medium for its frame, two or more
    /// collide (preamble, jam and gap) and each backs off a whole number of slots drawn from
    /// [0, 2^n) after its n-th collision (n capped at 10: truncated binary exponential
    /// backoff). When
    /// every waiting station is still backing off, the medium stays idle until the first
    /// backoff ends, unless a new frame comes first.
    fn bus_free(&mut self, at: Nanos, server: usize) {
        let servers = &mut self.servers;
        servers.decision[server] = None;
        let waiting = &servers.waiting[server];
        if waiting.is_empty() {
            return;
        }
        // Each station's oldest frame and when it may send it.
        let mut heads: BTreeMap<usize, (usize, usize, Nanos)> = BTreeMap::new();
        for (i, w) in waiting.iter().enumerate() {
            let ready = servers
                .backoff
                .get(&(server, w.0))
                .map_or(at, |b| b.1.max(at));
            let head = heads.entry(w.0).or_insert((i, w.1, ready));
            if w.1 < head.1 {
                *head = (i, w.1, ready);
            }
        }
        let first = heads.values().map(|h| h.2).min().expect("a station waits");
        if first > at {
            servers.decision[server] = Some(first);
            self.enqueue(first, BUS_FREE, server);
            return;
        }
        let sending: Vec<(usize, usize)> = heads
            .iter()
            .filter(|(_, h)| h.2 <= at)
            .map(|(&station, h)| (station, h.0))
            .collect();
        let (_, _, frame, stage) = waiting[sending[0].1];
        let Some(Stage::Serve { ns, hold, slot, .. }) =
            self.frames[frame].stages.get(stage).copied()
        else {
            unreachable!("a frame waits for a bus only at a bus stage");
        };
        let bits = |n: u64| slot * n / SLOT_BITS;
        let servers = &mut self.servers;
        if let [(station, i)] = sending[..] {
            let (_, _, frame, stage) = servers.waiting[server].swap_remove(i);
            // The sender's transmitter turns around before its next frame: a station that
            // deferred to this frame (a receiver's ACK) has the medium alone after the gap.
            servers
                .backoff
                .insert((server, station), (0, at + ns + bits(TURNAROUND_BITS)));
            servers.free[server] = at + hold;
            if self.frames[frame].timed {
                servers.busy[server] += hold;
            }
            servers.decision[server] = Some(at + hold);
            self.enqueue(at + ns, frame, stage + 1);
            self.enqueue(at + hold, BUS_FREE, server);
            return;
        }
        // The colliders' preamble and jam, then the gap.
        let end = at + bits(COLLISION_BITS);
        let mut timed = false;
        for &(station, i) in &sending {
            timed |= self.frames[servers.waiting[server][i].2].timed;
            let entry = servers.backoff.entry((server, station)).or_insert((0, 0));
            entry.0 += 1;
            let window = 1u64 << entry.0.min(BACKOFF_LIMIT);
            entry.1 = end + servers.rng.random_range(0..window) * slot;
        }
        servers.free[server] = end;
        if timed {
            servers.busy[server] += end - at;
        }
        servers.decision[server] = Some(end);
        self.enqueue(end, BUS_FREE, server);
    }
}

/// A contention slot in bit times.
const SLOT_BITS: u64 = 512;

/// After its own frame, how long a station's transmitter needs before it can send again,
/// in bit times: longer than the gap (96), so a station that deferred to the frame sends
/// alone rather than colliding with the sender's next.
const TURNAROUND_BITS: u64 = 128;

/// What a collision holds the medium for, in bit times: the preamble (64) and the jam (32)
/// the colliders send, then the interframe gap (96).
const COLLISION_BITS: u64 = 192;

/// The collisions after which a station's backoff window stops doubling (802.3's
/// truncated binary exponential backoff: at most 1024 slots).
const BACKOFF_LIMIT: u32 = 10;

/// Linux acknowledges at once, when the application reads it, a segment of at least its
/// estimate of the peer's segment size, which starts at TCP's default MSS (536 bytes,
/// `TCP_MSS_DEFAULT`); a smaller one's ACK waits (40 ms at least) for data going back.
const QUICK_ACK_BYTES: u64 = 536;

/// The first seed of the backoff draws on contended buses: the model gives the same figure
/// every time.
const CONTENTION_SEED: u64 = 1976;

/// In the event queue, in place of a frame: a shared segment (the stage's place) goes idle.
const BUS_FREE: usize = usize::MAX;

/// Runs `steps` among `ranks` on their paths, each rank through them all, and times each
/// rank through the steps of `timed`.
pub(super) fn run(
    t: &Topology,
    ranks: &[PlannedRank],
    steps: &[Vec<Message>],
    timed: Range<usize>,
    p: &ModelParams,
    draw: u64,
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
            decision: Vec::new(),
            backoff: BTreeMap::new(),
            rng: ChaCha8Rng::seed_from_u64(CONTENTION_SEED + draw),
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
