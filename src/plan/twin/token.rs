//! The token test in simulated time: each pair's producer sends a token, its consumer sends it
//! back as soon as the last byte is in, and the producer sends the next as soon as the reply
//! is in, every frame through the medium engine.
//!
//! TCP is what the analytic model assumes too ([`crate::plan::throughput_model`]): segments of
//! the MSS with timestamps, a pure ACK after every second segment except where the reply
//! carries it, the window never closing (a token fits the initial window). A node's own stack
//! (the emulated cluster's veths and kernels) is [`ModelParams::hop_latency`] before each frame
//! of a hop enters the wire. A frame the medium drops (sixteen collisions, a full queue, a
//! busy CPU's backlog) is sent again after Linux's least retransmission timeout, 200 ms; the
//! outcome counts these.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use orchestrate_medium::engine::{DueFrame, Engine};
use orchestrate_medium::time::Nanos;

use super::network::{Network, Received, TwinFrame};
use crate::plan::throughput_model::{ModelParams, acked, payloads};
use crate::spec::IfName;
use crate::topology::Topology;

/// Linux's least retransmission timeout.
const RTO_NS: Nanos = 200_000_000;

/// One hop of a pair's path, by node index.
#[derive(Debug, Clone)]
pub(super) struct TwinHop {
    pub(super) from: usize,
    pub(super) dev: IfName,
    pub(super) to: usize,
}

/// A pair's two ways: producer to consumer, and back.
#[derive(Debug, Clone)]
pub(super) struct TwinPair {
    pub(super) forth: Vec<TwinHop>,
    pub(super) back: Vec<TwinHop>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Forth,
    Back,
}

impl Way {
    fn other(self) -> Way {
        match self {
            Way::Forth => Way::Back,
            Way::Back => Way::Forth,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    /// Segment `k` of the message numbered `message`.
    Data {
        message: u64,
        k: usize,
    },
    Ack,
}

#[derive(Debug, Clone, Copy)]
struct Packet {
    pair: usize,
    way: Way,
    kind: Kind,
    len: u32,
    hop: usize,
}

/// What each pair's receiving end holds of the message under way.
#[derive(Debug, Clone)]
struct Exchange {
    /// Messages sent so far (requests and replies alternate: even ones go forth).
    message: u64,
    got: Vec<bool>,
    /// When the message under way was sent, and how long the last one took: the timer waits
    /// for at least three of those, as TCP's timeout grows with the round trip it measures.
    started: Nanos,
    last_took: Nanos,
    /// When each exchange completed in the counted window.
    window: Vec<Nanos>,
}

impl Exchange {
    fn timeout(&self) -> Nanos {
        RTO_NS.max(3 * self.last_took)
    }
}

enum Pending {
    /// A frame enters the medium at a port.
    Enter { port: usize, frame: TwinFrame },
    /// The retransmission timer of a pair's message.
    Timer { pair: usize, message: u64 },
}

/// What the simulated token test gave.
#[derive(Debug, Clone, PartialEq)]
pub struct TwinOutcome {
    /// Producer's tokens over the counted window, summed over the pairs, Mbit/s.
    pub aggregate_mbit_s: f64,
    pub per_pair_mbit_s: Vec<f64>,
    /// Exchanges counted, over all pairs.
    pub exchanges: u64,
    /// Collisions per frame carried, over every segment.
    pub collisions_per_frame: f64,
    /// Frames sent again after the retransmission timeout.
    pub retransmissions: u64,
}

/// How long the twin runs a cell.
#[derive(Debug, Clone, Copy)]
pub struct TwinLength {
    /// Simulated time before exchanges count.
    pub warmup_ns: Nanos,
    /// Exchanges every pair completes in the counted window before the run ends ...
    pub exchanges: u64,
    /// ... unless this much simulated time passes first.
    pub limit_ns: Nanos,
}

impl Default for TwinLength {
    /// Past TCP's first round trips and the switches' learning, and enough exchanges that
    /// the rate's last-exchange rounding is below 1%.
    fn default() -> Self {
        TwinLength {
            warmup_ns: 200_000_000,
            exchanges: 100,
            limit_ns: 30_000_000_000,
        }
    }
}

pub(super) struct TokenSim<'a> {
    t: &'a Topology,
    net: Network,
    engine: Engine<TwinFrame>,
    pairs: Vec<TwinPair>,
    size: u64,
    p: ModelParams,
    payloads: Vec<u64>,
    packets: Vec<Option<Packet>>,
    free: Vec<usize>,
    events: BinaryHeap<Reverse<(Nanos, u64, usize)>>,
    event_slots: Vec<Option<Pending>>,
    free_events: Vec<usize>,
    seq: u64,
    exchanges: Vec<Exchange>,
    retransmissions: u64,
}

impl<'a> TokenSim<'a> {
    pub(super) fn new(
        t: &'a Topology,
        pairs: Vec<TwinPair>,
        size: u64,
        p: ModelParams,
        seed: u64,
    ) -> TokenSim<'a> {
        let net = Network::of(t, seed);
        let engine = Engine::new(&net.config);
        let payloads: Vec<u64> = payloads(size, p.segment_payload()).collect();
        let exchanges = pairs
            .iter()
            .map(|_| Exchange {
                message: 0,
                got: vec![false; payloads.len()],
                started: 0,
                last_took: 0,
                window: Vec::new(),
            })
            .collect();
        TokenSim {
            t,
            net,
            engine,
            pairs,
            size,
            p,
            payloads,
            packets: Vec::new(),
            free: Vec::new(),
            events: BinaryHeap::new(),
            event_slots: Vec::new(),
            free_events: Vec::new(),
            seq: 0,
            exchanges,
            retransmissions: 0,
        }
    }

    fn schedule(&mut self, at: Nanos, event: Pending) {
        let slot = match self.free_events.pop() {
            Some(i) => {
                self.event_slots[i] = Some(event);
                i
            }
            None => {
                self.event_slots.push(Some(event));
                self.event_slots.len() - 1
            }
        };
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, slot)));
    }

    fn hops(&self, pair: usize, way: Way) -> &[TwinHop] {
        match way {
            Way::Forth => &self.pairs[pair].forth,
            Way::Back => &self.pairs[pair].back,
        }
    }

    /// Puts `packet` on hop `packet.hop` of its way, `hop_latency` after `at`.
    fn send_hop(&mut self, at: Nanos, packet: Packet, id: usize) {
        let hops = self.hops(packet.pair, packet.way);
        let hop = hops[packet.hop].clone();
        let origin = hops[0].from;
        let Some((out, to_port)) = self.net.route(self.t, hop.from, &hop.dev, hop.to) else {
            // A path the plan checked always has a wire; without one the packet is lost
            // and the timer sends it again.
            self.release(id);
            return;
        };
        let frame = TwinFrame {
            len: packet.len,
            src: self.net.mac(out),
            dst: self.net.mac(to_port),
            ipv4_src: self.net.ipv4(origin),
            to_port,
            packet: id,
        };
        self.packets[id] = Some(packet);
        let latency = u64::try_from(self.p.hop_latency.as_nanos()).unwrap_or(u64::MAX);
        self.schedule(at + latency, Pending::Enter { port: out, frame });
    }

    fn new_packet(&mut self, packet: Packet) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.packets[i] = Some(packet);
                i
            }
            None => {
                self.packets.push(Some(packet));
                self.packets.len() - 1
            }
        }
    }

    fn release(&mut self, id: usize) {
        self.packets[id] = None;
        self.free.push(id);
    }

    /// Sends segment `k` of the pair's current message.
    fn send_segment(&mut self, at: Nanos, pair: usize, k: usize) {
        let message = self.exchanges[pair].message;
        let way = if message % 2 == 0 {
            Way::Forth
        } else {
            Way::Back
        };
        let packet = Packet {
            pair,
            way,
            kind: Kind::Data { message, k },
            len: self.p.frame_len(self.payloads[k]),
            hop: 0,
        };
        let id = self.new_packet(packet);
        self.send_hop(at, packet, id);
    }

    /// Starts the pair's next message (a token, or its return) at `at`.
    fn send_message(&mut self, at: Nanos, pair: usize) {
        let e = &mut self.exchanges[pair];
        e.got.iter_mut().for_each(|g| *g = false);
        e.started = at;
        let message = e.message;
        let timeout = e.timeout();
        for k in 0..self.payloads.len() {
            self.send_segment(at, pair, k);
        }
        self.schedule(at + timeout, Pending::Timer { pair, message });
    }

    fn delivered(&mut self, d: DueFrame<TwinFrame>, window_from: Nanos) {
        match self.net.received(d.port, &d.frame) {
            Received::Ignored => {}
            Received::Switched(out) => self.schedule(
                d.due,
                Pending::Enter {
                    port: out,
                    frame: d.frame,
                },
            ),
            Received::AtNode(n) => {
                let id = d.frame.packet;
                let Some(mut packet) = self.packets[id] else {
                    return;
                };
                let last = self.hops(packet.pair, packet.way).len() - 1;
                if self.hops(packet.pair, packet.way)[packet.hop].to != n {
                    return;
                }
                if packet.hop < last {
                    packet.hop += 1;
                    self.send_hop(d.due, packet, id);
                    return;
                }
                self.release(id);
                self.arrived(d.due, packet, window_from);
            }
        }
    }

    /// `packet` reached the end of its way at `at`.
    fn arrived(&mut self, at: Nanos, packet: Packet, window_from: Nanos) {
        let Kind::Data { message, k } = packet.kind else {
            return;
        };
        let pair = packet.pair;
        let n = self.payloads.len();
        if acked(k, n) {
            let ack = Packet {
                pair,
                way: packet.way.other(),
                kind: Kind::Ack,
                len: self.p.ack_len(),
                hop: 0,
            };
            let id = self.new_packet(ack);
            self.send_hop(at, ack, id);
        }
        let e = &mut self.exchanges[pair];
        if message != e.message || e.got[k] {
            return;
        }
        e.got[k] = true;
        if e.got.iter().any(|g| !g) {
            return;
        }
        e.message += 1;
        e.last_took = at - e.started;
        if packet.way == Way::Back && at >= window_from {
            e.window.push(at);
        }
        self.send_message(at, pair);
    }

    /// The retransmission timer: the segments the receiver lacks go again.
    fn timer(&mut self, at: Nanos, pair: usize, message: u64) {
        let e = &self.exchanges[pair];
        if e.message != message {
            return;
        }
        let missing: Vec<usize> = (0..e.got.len()).filter(|&k| !e.got[k]).collect();
        let timeout = e.timeout();
        self.retransmissions += missing.len() as u64;
        for k in missing {
            self.send_segment(at, pair, k);
        }
        self.schedule(at + timeout, Pending::Timer { pair, message });
    }

    pub(super) fn run(mut self, length: TwinLength) -> TwinOutcome {
        for pair in 0..self.pairs.len() {
            self.send_message(0, pair);
        }
        let window_from = length.warmup_ns;
        let mut out = Vec::new();
        let mut end = length.limit_ns;
        loop {
            let next_event = self.events.peek().map(|Reverse((at, _, _))| *at);
            let Some(now) = [next_event, self.engine.next_deadline()]
                .into_iter()
                .flatten()
                .min()
            else {
                break;
            };
            if now > length.limit_ns {
                break;
            }
            while let Some(&Reverse((at, _, slot))) = self.events.peek() {
                if at > now {
                    break;
                }
                self.events.pop();
                let event = self.event_slots[slot].take().expect("a scheduled event");
                self.free_events.push(slot);
                match event {
                    Pending::Enter { port, frame } => self.engine.arrive(port, frame, at),
                    Pending::Timer { pair, message } => self.timer(at, pair, message),
                }
            }
            self.engine.advance(now, &mut out);
            for d in std::mem::take(&mut out) {
                self.delivered(d, window_from);
            }
            if self
                .exchanges
                .iter()
                .all(|e| e.window.len() as u64 > length.exchanges)
            {
                end = now;
                break;
            }
        }
        self.outcome(window_from, end)
    }

    fn outcome(&self, window_from: Nanos, end: Nanos) -> TwinOutcome {
        let span = end.saturating_sub(window_from).max(1) as f64 / 1e9;
        let per_pair: Vec<f64> = self
            .exchanges
            .iter()
            .map(|e| {
                // From the first counted exchange to the last: no partial exchange at either
                // end of the window.
                let rate = match (e.window.first(), e.window.last()) {
                    (Some(a), Some(b)) if b > a => {
                        (e.window.len() - 1) as f64 / ((b - a) as f64 / 1e9)
                    }
                    _ => e.window.len() as f64 / span,
                };
                rate * self.size as f64 * 8.0 / 1e6
            })
            .collect();
        let counters = self.engine.segment_counters();
        let frames: u64 = counters.iter().map(|c| c.frames).sum();
        let collisions: u64 = counters.iter().map(|c| c.collisions).sum();
        TwinOutcome {
            aggregate_mbit_s: per_pair.iter().sum(),
            per_pair_mbit_s: per_pair,
            exchanges: self.exchanges.iter().map(|e| e.window.len() as u64).sum(),
            collisions_per_frame: if frames == 0 {
                0.0
            } else {
                collisions as f64 / frames as f64
            },
            retransmissions: self.retransmissions,
        }
    }
}
