//! The whole medium of a cluster in one place: every segment's MAC, every node's CPU, and the
//! frames moving between them, in time order. The real-time emulator and the simulation both
//! drive it the same way: hand it frames as they arrive ([`Engine::arrive`]), ask when it next
//! has something to do ([`Engine::next_deadline`]), and let it catch up to the present
//! ([`Engine::advance`]), which yields the frames due at ports.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::config::{Medium, MediumConfig};
use crate::frame::Frame;
use crate::host::{HostCounters, HostCpu};
use crate::mac::BusParams;
use crate::segment::{Delivery, Segment};
use crate::stats::SegmentCounters;
use crate::time::{Nanos, WireClock};

/// A frame due at a port at `due`: write it to the port's interface then.
#[derive(Debug, Clone)]
pub struct DueFrame<F> {
    pub port: usize,
    pub frame: F,
    pub due: Nanos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The sending node's CPU is done with it: into the port's MAC.
    ToMac,
    /// The receiving node's CPU is done with it: out of the port.
    ToPort,
}

#[derive(Debug)]
struct Job<F> {
    at: Nanos,
    seq: u64,
    step: Step,
    port: usize,
    frame: F,
}

impl<F> PartialEq for Job<F> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<F> Eq for Job<F> {}
impl<F> PartialOrd for Job<F> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<F> Ord for Job<F> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

#[derive(Debug, Clone, Copy)]
struct PortPlace {
    segment: usize,
    station: usize,
    node: Option<usize>,
}

pub struct Engine<F> {
    segments: Vec<Segment<F>>,
    ports: Vec<PortPlace>,
    /// Per segment, per station: the port.
    stations: Vec<Vec<usize>>,
    hosts: Vec<HostCpu>,
    own_ipv4: Vec<Vec<[u8; 4]>>,
    /// Frames waiting for a node's CPU, by when it is done with them: on their way into a
    /// MAC, and on their way out of a port (kept apart so the next delivery is a peek).
    to_mac: BinaryHeap<Reverse<Job<F>>>,
    to_port: BinaryHeap<Reverse<Job<F>>>,
    seq: u64,
    /// The shortest frame's time on the fastest segment: how soon after it enters a MAC a
    /// frame may be delivered at the earliest.
    shortest_frame: Nanos,
}

impl<F: Frame> Engine<F> {
    /// # Panics
    /// On a config that does not pass [`MediumConfig::check`].
    pub fn new(config: &MediumConfig) -> Engine<F> {
        config.check().expect("a checked medium config");
        let mut stations: Vec<Vec<usize>> = vec![Vec::new(); config.segments.len()];
        let ports = config
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                stations[p.segment].push(i);
                PortPlace {
                    segment: p.segment,
                    station: stations[p.segment].len() - 1,
                    node: p.node,
                }
            })
            .collect();
        let segments = config
            .segments
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let clock = WireClock::new(s.rate_bps);
                let n = stations[i].len();
                match s.medium {
                    Medium::Shared => Segment::shared(
                        n,
                        BusParams {
                            clock,
                            collision_window: s.collision_window_ns,
                            queue_limit: s.queue_limit,
                            turnaround: s.turnaround_ns,
                            seed: config.seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                        },
                    ),
                    Medium::Switched => Segment::switched(n, clock, s.queue_limit),
                }
            })
            .collect();
        Engine {
            segments,
            ports,
            stations,
            hosts: config.nodes.iter().map(|n| HostCpu::new(n.costs)).collect(),
            own_ipv4: config.nodes.iter().map(|n| n.ipv4.clone()).collect(),
            to_mac: BinaryHeap::new(),
            to_port: BinaryHeap::new(),
            seq: 0,
            shortest_frame: config
                .segments
                .iter()
                .map(|s| WireClock::new(s.rate_bps).frame(0))
                .min()
                .unwrap_or(0),
        }
    }

    pub fn segment_counters(&self) -> Vec<SegmentCounters> {
        self.segments.iter().map(Segment::counters).collect()
    }

    pub fn host_counters(&self) -> Vec<HostCounters> {
        self.hosts.iter().map(|h| h.counters).collect()
    }

    /// The segment a port is on.
    pub fn segment_of(&self, port: usize) -> usize {
        self.ports[port].segment
    }

    fn schedule(&mut self, at: Nanos, step: Step, port: usize, frame: F) {
        self.seq += 1;
        let heap = match step {
            Step::ToMac => &mut self.to_mac,
            Step::ToPort => &mut self.to_port,
        };
        heap.push(Reverse(Job {
            at,
            seq: self.seq,
            step,
            port,
            frame,
        }));
    }

    /// A node sent `frame` out of `port` at `at`.
    pub fn arrive(&mut self, port: usize, frame: F, at: Nanos) {
        let place = self.ports[port];
        if let Some(n) = place.node {
            let host = &mut self.hosts[n];
            if !host.costs.is_free() {
                let forwarded = frame
                    .ipv4_src()
                    .is_some_and(|src| !self.own_ipv4[n].contains(&src));
                let cost = host.costs.send_cost(frame.wire_len(), forwarded);
                if let Some(done) = host.take(at, cost) {
                    host.counters.sent += 1;
                    host.counters.forwarded += u64::from(forwarded);
                    self.schedule(done, Step::ToMac, port, frame);
                }
                return;
            }
        }
        self.segments[place.segment].enqueue(place.station, frame, at);
    }

    /// The heap holding the earliest job (in scheduling order on a tie), and its time.
    fn next_job(&self) -> Option<(Nanos, Step)> {
        let key = |h: &BinaryHeap<Reverse<Job<F>>>| h.peek().map(|Reverse(j)| (j.at, j.seq));
        match (key(&self.to_mac), key(&self.to_port)) {
            (Some(m), Some(p)) if p < m => Some((p.0, Step::ToPort)),
            (Some(m), _) => Some((m.0, Step::ToMac)),
            (None, Some(p)) => Some((p.0, Step::ToPort)),
            (None, None) => None,
        }
    }

    /// When something next happens, if anything is pending.
    pub fn next_deadline(&self) -> Option<Nanos> {
        let job = self.next_job().map(|(at, _)| at);
        let seg = self.segments.iter().filter_map(Segment::next_event).min();
        match (job, seg) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest a frame can be due at a port, given what is pending: exactly when one
    /// is on its last wire or in its receiver's CPU; otherwise the shortest frame's time
    /// after the next decision that could put one on a wire (a sender's CPU finishing, a
    /// contention, a switch's input). These are the moments whose timing a node sees: the
    /// real-time loop must be awake before them, while the decisions in between are computed
    /// from their exact times whenever they are made.
    pub fn earliest_delivery(&self) -> Option<Nanos> {
        let received = self.to_port.peek().map(|Reverse(j)| j.at);
        let sent = self
            .to_mac
            .peek()
            .map(|Reverse(j)| j.at + self.shortest_frame);
        let on_wires = self.segments.iter().filter_map(Segment::earliest_delivery);
        received.into_iter().chain(sent).chain(on_wires).min()
    }

    /// Does everything due up to `now`, in time order; frames due at ports go to `out`.
    pub fn advance(&mut self, now: Nanos, out: &mut Vec<DueFrame<F>>) {
        let mut delivered = Vec::new();
        loop {
            let job = self.next_job();
            let seg = self
                .segments
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.next_event().map(|t| (t, i)))
                .min();
            match (job, seg) {
                // A job at the same time as a segment's event goes first: a frame that is
                // ready at t takes part in what the segment decides at t.
                (Some((j, step)), s) if j <= now && s.is_none_or(|(t, _)| j <= t) => {
                    let heap = match step {
                        Step::ToMac => &mut self.to_mac,
                        Step::ToPort => &mut self.to_port,
                    };
                    let Reverse(job) = heap.pop().expect("peeked");
                    self.run_job(job, out);
                }
                (_, Some((t, i))) if t <= now => {
                    self.segments[i].advance(t, &mut delivered);
                    for d in delivered.drain(..) {
                        self.deliver(i, d, out);
                    }
                }
                _ => break,
            }
        }
    }

    fn run_job(&mut self, job: Job<F>, out: &mut Vec<DueFrame<F>>) {
        let place = self.ports[job.port];
        if let Some(n) = place.node {
            self.hosts[n].done();
        }
        match job.step {
            Step::ToMac => {
                self.segments[place.segment].enqueue(place.station, job.frame, job.at);
            }
            Step::ToPort => out.push(DueFrame {
                port: job.port,
                frame: job.frame,
                due: job.at,
            }),
        }
    }

    fn deliver(&mut self, segment: usize, d: Delivery<F>, out: &mut Vec<DueFrame<F>>) {
        let port = self.stations[segment][d.station];
        if let Some(n) = self.ports[port].node {
            let host = &mut self.hosts[n];
            if !host.costs.is_free() {
                let cost = host.costs.receive_cost(d.frame.wire_len());
                if let Some(done) = host.take(d.at, cost) {
                    host.counters.received += 1;
                    self.schedule(done, Step::ToPort, port, d.frame);
                }
                return;
            }
        }
        out.push(DueFrame {
            port,
            frame: d.frame,
            due: d.at,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{NodeSpec, PortSpec, SegmentSpec};
    use crate::host::HostCosts;

    fn frame(dst: u8, src: u8, ip_src: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[26..30].copy_from_slice(&ip_src);
        f
    }

    /// Two buses joined by node 1, which forwards between them.
    fn two_buses(costs: HostCosts) -> MediumConfig {
        let seg = |name: &str| SegmentSpec {
            name: name.into(),
            medium: Medium::Shared,
            rate_bps: 10_000_000,
            collision_window_ns: 0,
            queue_limit: 10,
            turnaround_ns: 9_600,
        };
        let port = |ifname: &str, segment, node| PortSpec {
            ifname: ifname.into(),
            segment,
            node: Some(node),
        };
        let node = |name: &str, ip: [u8; 4]| NodeSpec {
            name: name.into(),
            costs,
            ipv4: vec![ip],
        };
        MediumConfig {
            segments: vec![seg("a"), seg("b")],
            ports: vec![
                port("v0", 0, 0),
                port("v1a", 0, 1),
                port("v1b", 1, 1),
                port("v2", 1, 2),
            ],
            nodes: vec![
                node("n0", [10, 0, 0, 1]),
                node("n1", [10, 0, 0, 2]),
                node("n2", [10, 0, 1, 3]),
            ],
            seed: 1,
        }
    }

    #[test]
    fn host_costs_delay_what_a_node_sends_receives_and_forwards() {
        let costs = HostCosts {
            send_ns: 100_000,
            receive_ns: 50_000,
            forward_ns: 30_000,
            per_byte_ps: 0,
        };
        let mut e: Engine<Vec<u8>> = Engine::new(&two_buses(costs));
        let mut out = Vec::new();
        // n0 -> n1 (own traffic): send cost, wire, receive cost.
        e.arrive(0, frame(0xff, 1, [10, 0, 0, 1]), 0);
        // In the sender's CPU: something happens then, and a frame can reach a port no
        // sooner than a shortest frame's time after it.
        assert_eq!(e.next_deadline(), Some(100_000));
        assert_eq!(e.earliest_delivery(), Some(100_000 + 57_600));
        e.advance(100_000, &mut out);
        // On the wire: its last bit is the next delivery.
        assert_eq!(e.earliest_delivery(), Some(100_000 + 57_600));
        e.advance(100_000 + 57_600, &mut out);
        // In the receiver's CPU: out of its port after the receive cost.
        assert_eq!(e.earliest_delivery(), Some(100_000 + 57_600 + 50_000));
        e.advance(1_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].port, out[0].due), (1, 100_000 + 57_600 + 50_000));
        out.clear();
        // n1 forwards n0's packet onto bus b: send + forward cost.
        e.arrive(2, frame(0xff, 11, [10, 0, 0, 1]), 2_000_000);
        e.advance(3_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].port, 3);
        assert_eq!(out[0].due, 2_000_000 + 130_000 + 57_600 + 50_000);
        let h = e.host_counters();
        assert_eq!((h[1].forwarded, h[1].sent, h[1].received), (1, 1, 1));
    }

    #[test]
    fn a_per_byte_cost_is_charged_on_both_ends_by_the_frames_length() {
        let costs = HostCosts {
            per_byte_ps: 10_000,
            ..HostCosts::default()
        };
        let mut e: Engine<Vec<u8>> = Engine::new(&two_buses(costs));
        let mut out = Vec::new();
        // A 60-byte frame: 600 ns to send, the wire, 600 ns to receive.
        e.arrive(0, frame(0xff, 1, [10, 0, 0, 1]), 0);
        e.advance(1_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].due, 600 + 57_600 + 600);
    }

    #[test]
    fn with_no_costs_only_the_wire_takes_time() {
        let mut e: Engine<Vec<u8>> = Engine::new(&two_buses(HostCosts::default()));
        let mut out = Vec::new();
        e.arrive(3, frame(0xff, 3, [10, 0, 1, 3]), 500);
        assert_eq!(e.next_deadline(), Some(500));
        e.advance(500, &mut out);
        assert_eq!(e.next_deadline(), Some(500 + 57_600));
        e.advance(10_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].port, out[0].due), (2, 500 + 57_600));
        assert_eq!(e.segment_counters()[1].frames, 1);
        assert_eq!(e.segment_counters()[0].frames, 0);
    }
}
