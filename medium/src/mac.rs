//! The CSMA/CD MAC of a shared 10 Mbit/s segment (a bus or a hub), as IEEE 802.3 has it:
//! 1-persistent carrier sense, collision detection, jam, truncated binary exponential backoff
//! and a give-up after 16 attempts; a finite transmit queue per station.
//!
//! The model is a state machine in time it is told (`advance(now)`), so the same code runs in
//! simulated time ([`crate::sim`]) and against `CLOCK_MONOTONIC` in the real-time emulator.
//!
//! How a transmission is decided:
//! - A station may start when its head frame is ready (arrived, or its backoff is over) and
//!   the medium has been idle for the inter-frame gap. Stations that became ready while the
//!   medium was busy (deferred) all start at the same moment, one gap after it went idle —
//!   which is why two waiters always collide.
//! - Stations that start within the collision window of the first (the signal's round trip
//!   on the cable) collide: the medium carries preamble and jam, then each collider waits
//!   `r` slots, `r` uniform in `[0, 2^min(n,10) − 1]` after its `n`-th collision, drawn from
//!   the segment's seeded generator. After 16 attempts the frame is dropped and counted.
//! - A lone starter holds the medium for its frame; the frame reaches every other station
//!   when its last bit does, and the next start can come one gap later — from another
//!   station; the sender itself needs its transmitter's turnaround first
//!   ([`BusParams::turnaround`]).

use std::collections::VecDeque;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

use crate::stats::SegmentCounters;
use crate::time::{Nanos, WireClock};

/// After this many attempts a frame is dropped.
pub const MAX_ATTEMPTS: u32 = 16;
/// The backoff range stops doubling after this many collisions.
pub const BACKOFF_LIMIT: u32 = 10;

/// Settings of one shared segment.
#[derive(Debug, Clone, Copy)]
pub struct BusParams {
    pub clock: WireClock,
    /// Stations that start within this time of each other collide: the round-trip
    /// propagation time of the cable (a few µs for a lab segment of 10BASE2).
    pub collision_window: Nanos,
    /// Frames a station holds before it drops new ones (a NIC's buffer and the driver's
    /// transmit queue).
    pub queue_limit: usize,
    /// After its own frame, how long a station's transmitter needs before its next frame can
    /// start (the controller's end-of-frame handling and its fetch of the next buffer). Longer
    /// than the gap, it lets a station that deferred (a TCP receiver's ACK) take the wire
    /// alone instead of colliding with the sender's next frame at every gap.
    pub turnaround: Nanos,
    pub seed: u64,
}

/// A frame handed to the MAC: what it carries, its length as the kernel sees it (header and
/// payload, no FCS), and when it became ready to send.
#[derive(Debug, Clone)]
pub struct Queued<F> {
    pub frame: F,
    pub len: u32,
    pub ready: Nanos,
}

/// A frame that made it across: sent by `station`, its last bit at every other station at
/// `at`.
#[derive(Debug, Clone)]
pub struct Carried<F> {
    pub station: usize,
    pub frame: F,
    pub len: u32,
    pub at: Nanos,
}

#[derive(Debug)]
struct Station<F> {
    queue: VecDeque<Queued<F>>,
    /// Collisions the head frame has had.
    attempts: u32,
    /// Not before this time (the end of a backoff).
    backoff_until: Nanos,
}

impl<F> Station<F> {
    /// When the head frame may contend, if there is one.
    fn ready_at(&self) -> Option<Nanos> {
        self.queue.front().map(|q| q.ready.max(self.backoff_until))
    }
}

#[derive(Debug)]
enum Activity {
    Frame { station: usize, end: Nanos },
    Collision { stations: Vec<usize>, end: Nanos },
}

impl Activity {
    fn end(&self) -> Nanos {
        match self {
            Activity::Frame { end, .. } | Activity::Collision { end, .. } => *end,
        }
    }
}

/// One shared segment: its stations' queues and the medium between them.
#[derive(Debug)]
pub struct Bus<F> {
    params: BusParams,
    stations: Vec<Station<F>>,
    activity: Option<Activity>,
    /// The medium is free for a new start from here (the gap after the last activity).
    free_from: Nanos,
    /// Nothing before this time can still change: decisions up to it are made.
    decided: Nanos,
    rng: ChaCha8Rng,
    counters: SegmentCounters,
}

impl<F> Bus<F> {
    pub fn new(stations: usize, params: BusParams) -> Bus<F> {
        Bus {
            params,
            stations: (0..stations)
                .map(|_| Station {
                    queue: VecDeque::new(),
                    attempts: 0,
                    backoff_until: 0,
                })
                .collect(),
            activity: None,
            free_from: 0,
            decided: 0,
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            counters: SegmentCounters::default(),
        }
    }

    pub fn counters(&self) -> &SegmentCounters {
        &self.counters
    }

    pub fn stations(&self) -> usize {
        self.stations.len()
    }

    /// Frames waiting at `station`.
    pub fn queued(&self, station: usize) -> usize {
        self.stations[station].queue.len()
    }

    /// A station has a frame to send from `ready` on. A time before what is already decided
    /// counts as the earliest moment still open (a late reader cannot rewrite the past).
    /// Returns the frame back when the station's queue is full (counted as a drop).
    pub fn enqueue(&mut self, station: usize, mut q: Queued<F>) -> Result<(), F> {
        let s = &mut self.stations[station];
        if s.queue.len() >= self.params.queue_limit {
            self.counters.queue_drops += 1;
            return Err(q.frame);
        }
        q.ready = q.ready.max(self.decided);
        s.queue.push_back(q);
        Ok(())
    }

    /// When the model next has something to decide, if anything is pending.
    pub fn next_event(&self) -> Option<Nanos> {
        match &self.activity {
            Some(a) => Some(a.end()),
            None => self
                .earliest_start()
                .map(|s| s + self.params.collision_window),
        }
    }

    /// The earliest a frame can reach the other stations: exactly when the frame on the wire
    /// does, if one is on it; otherwise a frame's time (the shortest frame's) after the next
    /// moment one may start, if any station is waiting. A floor, not a promise: a collision
    /// puts it off.
    pub fn earliest_delivery(&self) -> Option<Nanos> {
        let shortest = self.params.clock.frame(0);
        match &self.activity {
            Some(Activity::Frame { end, .. }) => Some(*end),
            Some(Activity::Collision { end, .. }) => Some(end + shortest),
            None => self.earliest_start().map(|s| s + shortest),
        }
    }

    fn earliest_start(&self) -> Option<Nanos> {
        self.stations
            .iter()
            .filter_map(Station::ready_at)
            .map(|r| r.max(self.free_from))
            .min()
    }

    /// Decides everything up to `now`; frames that finished crossing go to `out`.
    pub fn advance(&mut self, now: Nanos, out: &mut Vec<Carried<F>>) {
        loop {
            if let Some(a) = &self.activity {
                if a.end() > now {
                    break;
                }
                let a = self.activity.take().expect("checked above");
                self.finish(a, out);
                continue;
            }
            let Some(start) = self.earliest_start() else {
                break;
            };
            let window_end = start + self.params.collision_window;
            if window_end > now {
                break;
            }
            self.begin(start, window_end);
        }
        self.decided = self.decided.max(now);
    }

    /// The medium is idle and someone starts at `start`: everyone ready by the end of the
    /// collision window starts too.
    fn begin(&mut self, start: Nanos, window_end: Nanos) {
        let free_from = self.free_from;
        let starters: Vec<usize> = self
            .stations
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let t = s.ready_at()?.max(free_from);
                (t == start || t < window_end).then_some(i)
            })
            .collect();
        for &i in &starters {
            if self.stations[i].ready_at().is_some_and(|r| r < free_from) {
                self.counters.deferrals += 1;
            }
        }
        let clock = self.params.clock;
        if let [station] = starters[..] {
            let len = self.stations[station].queue[0].len;
            self.activity = Some(Activity::Frame {
                station,
                end: start + clock.frame(len),
            });
        } else {
            self.counters.collisions += 1;
            self.counters.collided_attempts += starters.len() as u64;
            self.activity = Some(Activity::Collision {
                stations: starters,
                end: start + self.params.collision_window + clock.collision(),
            });
        }
    }

    fn finish(&mut self, a: Activity, out: &mut Vec<Carried<F>>) {
        let clock = self.params.clock;
        let gap = clock.gap();
        match a {
            Activity::Frame { station, end } => {
                let s = &mut self.stations[station];
                let q = s.queue.pop_front().expect("a sending station has a frame");
                s.attempts = 0;
                s.backoff_until = end + self.params.turnaround;
                self.counters.frames += 1;
                self.counters.bytes += u64::from(q.len);
                self.counters.carried_ns += clock.wire_time(q.len);
                out.push(Carried {
                    station,
                    frame: q.frame,
                    len: q.len,
                    at: end,
                });
                self.free_from = end + gap;
            }
            Activity::Collision { stations, end } => {
                let started = end - clock.collision() - self.params.collision_window;
                self.counters.collision_ns += end + gap - started;
                for i in stations {
                    let s = &mut self.stations[i];
                    s.attempts += 1;
                    if s.attempts >= MAX_ATTEMPTS {
                        s.queue.pop_front();
                        s.attempts = 0;
                        s.backoff_until = 0;
                        self.counters.excess_collision_drops += 1;
                    } else {
                        let k = s.attempts.min(BACKOFF_LIMIT);
                        let r: u64 = self.rng.random_range(0..(1u64 << k));
                        s.backoff_until = end + r * clock.slot();
                    }
                }
                self.free_from = end + gap;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bus(stations: usize) -> Bus<u32> {
        Bus::new(
            stations,
            BusParams {
                clock: WireClock::new(10_000_000),
                collision_window: 0,
                queue_limit: 4,
                turnaround: 0,
                seed: 7,
            },
        )
    }

    fn q(frame: u32, len: u32, ready: Nanos) -> Queued<u32> {
        Queued { frame, len, ready }
    }

    #[test]
    fn a_lone_frame_on_an_idle_wire_spends_its_serialization_time() {
        let mut b = bus(2);
        b.enqueue(0, q(1, 60, 1_000)).unwrap();
        let mut out = Vec::new();
        b.advance(1_000 + 57_599, &mut out);
        assert!(out.is_empty(), "delivered before its last bit");
        b.advance(1_000 + 57_600, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].at, 1_000 + 57_600);
        assert_eq!(b.counters().collisions, 0);
    }

    #[test]
    fn the_earliest_delivery_is_known_before_the_start_is_decided() {
        let mut b = bus(2);
        b.params.collision_window = 2_000;
        assert_eq!(b.earliest_delivery(), None);
        // Waiting for its collision window to close: not on the wire yet, but it cannot
        // arrive before a shortest frame's time after its start.
        b.enqueue(0, q(1, 1514, 1_000)).unwrap();
        let mut out = Vec::new();
        b.advance(1_500, &mut out);
        assert_eq!(b.next_event(), Some(3_000));
        assert_eq!(b.earliest_delivery(), Some(1_000 + 57_600));
        // On the wire: exactly its last bit.
        b.advance(3_000, &mut out);
        assert_eq!(b.earliest_delivery(), Some(1_000 + 1_230_400 - 9_600));
        b.advance(2_000_000, &mut out);
        assert_eq!((out.len(), b.earliest_delivery()), (1, None));
    }

    #[test]
    fn back_to_back_frames_keep_the_gap() {
        let mut b = bus(2);
        b.enqueue(0, q(1, 1514, 0)).unwrap();
        b.enqueue(0, q(2, 1514, 0)).unwrap();
        let mut out = Vec::new();
        b.advance(10_000_000, &mut out);
        assert_eq!(out[0].at, 1_220_800);
        assert_eq!(out[1].at - out[0].at, 1_230_400);
    }

    #[test]
    fn two_waiters_collide_when_the_wire_goes_idle() {
        let mut b = bus(3);
        b.enqueue(0, q(1, 1514, 0)).unwrap();
        // Both become ready while station 0 holds the wire: they defer, then collide.
        b.enqueue(1, q(2, 60, 100_000)).unwrap();
        b.enqueue(2, q(3, 60, 200_000)).unwrap();
        let mut out = Vec::new();
        b.advance(100_000_000, &mut out);
        assert_eq!(out.len(), 3, "all three get through in the end");
        let c = b.counters();
        assert!(c.collisions >= 1);
        assert!(c.deferrals >= 2);
        assert_eq!(c.excess_collision_drops, 0);
    }

    #[test]
    fn a_waiter_takes_the_wire_alone_while_the_sender_turns_around() {
        let mut b = bus(2);
        b.params.turnaround = 20_000;
        // Station 0 has two frames back to back; station 1's frame (an ACK) comes up while
        // the first is on the wire.
        b.enqueue(0, q(1, 1514, 0)).unwrap();
        b.enqueue(0, q(2, 1514, 0)).unwrap();
        b.enqueue(1, q(3, 60, 500_000)).unwrap();
        let mut out = Vec::new();
        b.advance(100_000_000, &mut out);
        let order: Vec<u32> = out.iter().map(|c| c.frame).collect();
        assert_eq!(order, [1, 3, 2]);
        assert_eq!(b.counters().collisions, 0);
        assert_eq!(out[1].at, 1_220_800 + 9_600 + 57_600);
    }

    #[test]
    fn stations_within_the_window_collide_and_one_at_its_edge_defers() {
        let mut b = bus(3);
        b.params.collision_window = 2_000;
        b.enqueue(0, q(1, 60, 0)).unwrap();
        b.enqueue(1, q(2, 60, 1_999)).unwrap();
        let mut out = Vec::new();
        b.advance(2_000, &mut out);
        assert_eq!(b.counters().collisions, 1);

        let mut b = bus(3);
        b.params.collision_window = 2_000;
        b.enqueue(0, q(1, 60, 0)).unwrap();
        b.enqueue(1, q(2, 60, 2_000)).unwrap();
        b.advance(1_000_000, &mut out);
        assert_eq!(b.counters().collisions, 0);
        assert_eq!(b.counters().deferrals, 1);
    }

    #[test]
    fn a_frame_is_dropped_after_sixteen_collisions() {
        // A window longer than any backoff: every attempt of both stations collides.
        let mut b = bus(2);
        b.params.collision_window = 10_000_000_000;
        b.enqueue(0, q(1, 60, 0)).unwrap();
        b.enqueue(1, q(2, 60, 0)).unwrap();
        let mut out = Vec::new();
        b.advance(u64::MAX / 4, &mut out);
        assert!(out.is_empty());
        let c = b.counters();
        assert_eq!(c.collisions, u64::from(MAX_ATTEMPTS));
        assert_eq!(c.excess_collision_drops, 2);
        assert_eq!(c.collided_attempts, 2 * u64::from(MAX_ATTEMPTS));
    }

    #[test]
    fn backoff_draws_stay_in_the_truncated_binary_range() {
        // After the n-th collision a station waits r slots, r in [0, 2^min(n,10) - 1]: the
        // wait before the next attempt is a multiple of the slot and never beyond the range.
        for seed in 0..20 {
            let mut b = bus(2);
            b.params.seed = seed;
            b.rng = ChaCha8Rng::seed_from_u64(seed);
            b.params.collision_window = 10_000_000_000;
            b.enqueue(0, q(1, 60, 0)).unwrap();
            b.enqueue(1, q(2, 60, 0)).unwrap();
            let slot = b.params.clock.slot();
            let mut out = Vec::new();
            let mut n = 0u32;
            while n < 12 {
                let t = b.next_event().expect("both stations keep a frame");
                let colliding = matches!(b.activity, Some(Activity::Collision { .. }));
                b.advance(t, &mut out);
                if !colliding {
                    continue;
                }
                // The n-th collision just ended at t: look at the draws it made.
                n += 1;
                for s in &b.stations {
                    let wait = s.backoff_until - t;
                    assert_eq!(wait % slot, 0);
                    assert!(wait / slot < 1 << n.min(BACKOFF_LIMIT), "n={n}: {wait}");
                }
            }
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let mut b = bus(1);
        for i in 0..4 {
            b.enqueue(0, q(i, 60, 0)).unwrap();
        }
        assert_eq!(b.enqueue(0, q(9, 60, 0)), Err(9));
        assert_eq!(b.counters().queue_drops, 1);
    }

    #[test]
    fn the_same_seed_decides_the_same_way() {
        let run = || {
            let mut b = bus(4);
            for s in 0..4 {
                for k in 0..4 {
                    b.enqueue(s, q(s as u32 * 10 + k, 60, 0)).unwrap();
                }
            }
            let mut out = Vec::new();
            b.advance(1_000_000_000, &mut out);
            out.iter().map(|c| (c.frame, c.at)).collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
        assert_eq!(run().len(), 16);
    }

    #[test]
    fn a_late_arrival_cannot_start_in_the_past() {
        let mut b = bus(2);
        let mut out = Vec::new();
        b.advance(5_000, &mut out);
        b.enqueue(0, q(1, 60, 1_000)).unwrap();
        b.advance(1_000_000, &mut out);
        assert_eq!(out[0].at, 5_000 + 57_600);
    }
}
