//! A segment as the engine sees it: stations in, frames out to the stations they are for,
//! whatever the medium. A shared segment is one CSMA/CD bus; a switched segment is a
//! full-duplex link per port into a store-and-forward switch with a queue per output port.

use crate::frame::Frame;
use crate::learn::AddressTable;
use crate::link::Link;
use crate::mac::{Bus, BusParams, Carried, Queued};
use crate::stats::SegmentCounters;
use crate::time::{Nanos, WireClock};

/// A frame reaching `station` (its last bit) at `at`.
#[derive(Debug, Clone)]
pub struct Delivery<F> {
    pub station: usize,
    pub frame: F,
    pub at: Nanos,
}

#[derive(Debug)]
pub enum Segment<F> {
    Shared {
        bus: Box<Bus<F>>,
        table: AddressTable,
    },
    Switched {
        /// Station -> switch.
        up: Vec<Link<F>>,
        /// Switch -> station.
        down: Vec<Link<F>>,
        table: AddressTable,
        counters: SegmentCounters,
    },
}

impl<F: Frame> Segment<F> {
    pub fn shared(stations: usize, params: BusParams) -> Segment<F> {
        Segment::Shared {
            bus: Box::new(Bus::new(stations, params)),
            table: AddressTable::default(),
        }
    }

    pub fn switched(stations: usize, clock: WireClock, queue_limit: usize) -> Segment<F> {
        let links = || {
            (0..stations)
                .map(|_| Link::new(clock, queue_limit))
                .collect()
        };
        Segment::Switched {
            up: links(),
            down: links(),
            table: AddressTable::default(),
            counters: SegmentCounters::default(),
        }
    }

    pub fn counters(&self) -> SegmentCounters {
        match self {
            Segment::Shared { bus, .. } => *bus.counters(),
            Segment::Switched { counters, .. } => *counters,
        }
    }

    /// `station` has `frame` ready at `ready`. False when it was dropped (counted).
    pub fn enqueue(&mut self, station: usize, frame: F, ready: Nanos) -> bool {
        let q = Queued {
            len: frame.wire_len(),
            frame,
            ready,
        };
        match self {
            Segment::Shared { bus, .. } => bus.enqueue(station, q).is_ok(),
            Segment::Switched { up, counters, .. } => {
                let ok = up[station].enqueue(q).is_ok();
                if !ok {
                    counters.queue_drops += 1;
                }
                ok
            }
        }
    }

    /// The earliest a frame can reach a station (see [`Bus::earliest_delivery`]): on a switch,
    /// a downlink's frame, or one a frame arriving at the switch is forwarded as (store and
    /// forward: the shortest frame's time after it is in).
    pub fn earliest_delivery(&self) -> Option<Nanos> {
        match self {
            Segment::Shared { bus, .. } => bus.earliest_delivery(),
            Segment::Switched { up, down, .. } => {
                let out = down.iter().filter_map(Link::earliest_arrival);
                let through = up.iter().filter_map(Link::earliest_forward);
                out.chain(through).min()
            }
        }
    }

    pub fn next_event(&self) -> Option<Nanos> {
        match self {
            Segment::Shared { bus, .. } => bus.next_event(),
            Segment::Switched { up, down, .. } => {
                up.iter().chain(down).filter_map(Link::next_event).min()
            }
        }
    }

    /// Decides everything up to `now`; frames that reached a station go to `out`.
    pub fn advance(&mut self, now: Nanos, out: &mut Vec<Delivery<F>>) {
        match self {
            Segment::Shared { bus, table } => {
                let mut carried = Vec::new();
                bus.advance(now, &mut carried);
                let stations = bus.stations();
                for c in carried {
                    fan_out(table, stations, c, out);
                }
            }
            Segment::Switched {
                up,
                down,
                table,
                counters,
            } => advance_switch(up, down, table, counters, now, out),
        }
    }
}

/// Hands a carried frame to each station it is for (cloning only for the extra ones).
fn fan_out<F: Frame>(
    table: &mut AddressTable,
    stations: usize,
    c: Carried<F>,
    out: &mut Vec<Delivery<F>>,
) {
    if let Some(src) = c.frame.src() {
        table.learn(src, c.station);
    }
    let to = table.recipients(c.frame.dst(), c.station, stations);
    let Some((&last, rest)) = to.split_last() else {
        return;
    };
    for &s in rest {
        out.push(Delivery {
            station: s,
            frame: c.frame.clone(),
            at: c.at,
        });
    }
    out.push(Delivery {
        station: last,
        frame: c.frame,
        at: c.at,
    });
}

/// The switch in time order: a frame fully received on a port's uplink is queued on the
/// downlinks it is for (store and forward), which clock it out to their stations.
fn advance_switch<F: Frame>(
    up: &mut [Link<F>],
    down: &mut [Link<F>],
    table: &mut AddressTable,
    counters: &mut SegmentCounters,
    now: Nanos,
    out: &mut Vec<Delivery<F>>,
) {
    let stations = up.len();
    loop {
        let next = up
            .iter()
            .chain(down.iter())
            .filter_map(Link::next_event)
            .min();
        let Some(t) = next.filter(|&t| t <= now) else {
            break;
        };
        let mut received = Vec::new();
        for (s, link) in up.iter_mut().enumerate() {
            link.advance(t, s, Some(&mut *counters), &mut received);
        }
        let mut switched = Vec::new();
        for c in received {
            fan_out(table, stations, c, &mut switched);
        }
        for d in switched {
            let q = Queued {
                len: d.frame.wire_len(),
                frame: d.frame,
                ready: d.at,
            };
            if down[d.station].enqueue(q).is_err() {
                counters.queue_drops += 1;
            }
        }
        let mut sent = Vec::new();
        for (s, link) in down.iter_mut().enumerate() {
            link.advance(t, s, None, &mut sent);
        }
        // On a downlink the "sender" recorded is the port it leads to.
        out.extend(sent.into_iter().map(|c| Delivery {
            station: c.station,
            frame: c.frame,
            at: c.at,
        }));
    }
    // Nothing is left to happen by `now`; this only marks `now` as decided on every link.
    for link in up.iter_mut().chain(down.iter_mut()) {
        let mut none = Vec::new();
        link.advance(now, 0, None, &mut none);
        debug_assert!(none.is_empty(), "everything up to now was handled above");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dst: u8, src: u8, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
        f
    }

    #[test]
    fn a_switch_stores_and_forwards_at_each_ports_rate() {
        let mut s: Segment<Vec<u8>> = Segment::switched(3, WireClock::new(10_000_000), 10);
        // Station 1 announces itself; unknown destinations flood.
        s.enqueue(1, frame(0xff, 1, 60), 0);
        let mut out = Vec::new();
        s.advance(1_000_000, &mut out);
        let mut to: Vec<usize> = out.iter().map(|d| d.station).collect();
        to.sort();
        assert_eq!(to, [0, 2]);
        // Two hops of a minimum frame: up, then down.
        assert_eq!(out[0].at, 2 * 57_600);
        out.clear();
        s.enqueue(0, frame(1, 0, 1514), 2_000_000);
        // Before the switch has it, a delivery can come no sooner than a shortest frame's
        // time after it is in (store and forward); once it is on the way down, exactly.
        s.advance(2_000_000, &mut out);
        assert_eq!(s.earliest_delivery(), Some(2_000_000 + 1_220_800 + 57_600));
        s.advance(2_000_000 + 1_220_800, &mut out);
        assert_eq!(s.earliest_delivery(), Some(2_000_000 + 2 * 1_220_800));
        s.advance(10_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].station, 1);
        assert_eq!(out[0].at, 2_000_000 + 2 * 1_220_800);
        assert_eq!(s.counters().collisions, 0);
        // Each frame counted once (on its way into the switch), not again per output port.
        assert_eq!(s.counters().frames, 2);
    }

    #[test]
    fn a_bus_delivers_to_the_learnt_owner_only() {
        let params = BusParams {
            clock: WireClock::new(10_000_000),
            collision_window: 0,
            queue_limit: 10,
            turnaround: 0,
            seed: 1,
        };
        let mut s: Segment<Vec<u8>> = Segment::shared(3, params);
        s.enqueue(2, frame(0xff, 2, 60), 0);
        let mut out = Vec::new();
        s.advance(1_000_000, &mut out);
        assert_eq!(out.len(), 2);
        out.clear();
        s.enqueue(0, frame(2, 0, 60), 1_000_000);
        s.advance(2_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].station, out[0].at), (2, 1_057_600));
    }
}
