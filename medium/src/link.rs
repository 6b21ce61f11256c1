//! One direction of a full-duplex link: a FIFO transmit queue and the frame clock, no
//! contention. A switched port is two of these (towards the switch and back).

use std::collections::VecDeque;

use crate::mac::{Carried, Queued};
use crate::stats::SegmentCounters;
use crate::time::{Nanos, WireClock};

#[derive(Debug)]
pub struct Link<F> {
    clock: WireClock,
    queue_limit: usize,
    queue: VecDeque<Queued<F>>,
    /// The frame on the wire and when its last bit arrives.
    sending: Option<Nanos>,
    free_from: Nanos,
    decided: Nanos,
}

impl<F> Link<F> {
    pub fn new(clock: WireClock, queue_limit: usize) -> Link<F> {
        Link {
            clock,
            queue_limit,
            queue: VecDeque::new(),
            sending: None,
            free_from: 0,
            decided: 0,
        }
    }

    /// Returns the frame back when the queue is full (the caller counts the drop).
    pub fn enqueue(&mut self, mut q: Queued<F>) -> Result<(), F> {
        if self.queue.len() >= self.queue_limit {
            return Err(q.frame);
        }
        q.ready = q.ready.max(self.decided);
        self.queue.push_back(q);
        Ok(())
    }

    fn next_start(&self) -> Option<Nanos> {
        self.queue.front().map(|q| q.ready.max(self.free_from))
    }

    pub fn next_event(&self) -> Option<Nanos> {
        self.sending.or_else(|| self.next_start())
    }

    /// The earliest a frame can arrive at the far end: exactly when the frame on the wire
    /// does, or the shortest frame's time after the next one may start.
    pub fn earliest_arrival(&self) -> Option<Nanos> {
        self.sending
            .or_else(|| self.next_start().map(|s| s + self.clock.frame(0)))
    }

    /// The earliest a frame this link carries into a store-and-forward hop can be clocked out
    /// of it again at the same rate: the shortest frame's time after it is in.
    pub fn earliest_forward(&self) -> Option<Nanos> {
        self.earliest_arrival().map(|t| t + self.clock.frame(0))
    }

    /// Frames whose last bit has arrived by `now` go to `out` (with `station` as the sender)
    /// and, when `counters` is given, their wire time to it. (A frame crossing a switch is
    /// counted once, on the link into the switch.)
    pub fn advance(
        &mut self,
        now: Nanos,
        station: usize,
        mut counters: Option<&mut SegmentCounters>,
        out: &mut Vec<Carried<F>>,
    ) {
        loop {
            if let Some(end) = self.sending {
                if end > now {
                    break;
                }
                let q = self.queue.pop_front().expect("a busy link has a frame");
                self.sending = None;
                self.free_from = end + self.clock.gap();
                if let Some(c) = counters.as_deref_mut() {
                    c.frames += 1;
                    c.bytes += u64::from(q.len);
                    c.carried_ns += self.clock.wire_time(q.len);
                }
                out.push(Carried {
                    station,
                    frame: q.frame,
                    len: q.len,
                    at: end,
                });
                continue;
            }
            match self.next_start() {
                Some(start) if start <= now => {
                    // Full duplex: a frame behind another only queues; nothing defers.
                    self.sending = Some(start + self.clock.frame(self.queue[0].len));
                }
                _ => break,
            }
        }
        self.decided = self.decided.max(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_follow_each_other_at_the_wire_rate() {
        let mut l = Link::new(WireClock::new(10_000_000), 10);
        for i in 0..3 {
            l.enqueue(Queued {
                frame: i,
                len: 1514,
                ready: 0,
            })
            .unwrap();
        }
        let mut c = SegmentCounters::default();
        let mut out = Vec::new();
        l.advance(10_000_000, 0, Some(&mut c), &mut out);
        let at: Vec<Nanos> = out.iter().map(|c| c.at).collect();
        assert_eq!(at, [1_220_800, 2_451_200, 3_681_600]);
        assert_eq!(c.frames, 3);
        assert_eq!(c.deferrals, 0);
    }
}
