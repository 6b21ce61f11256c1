//! The event loop: one pass reads what the ports have, lets the engine catch up to the
//! present, writes what is due and publishes statistics when asked; between passes it sleeps
//! until shortly before the next moment a frame can be due, and spins the rest.
//!
//! Its clock, its ports and its waiting are parameters ([`Clock`], [`PortIo`], [`Wait`]) so
//! that tests drive it with a fake clock and in-memory ports. They are generic parameters,
//! not trait objects: the clock is read and a port written once per delivered frame, and a
//! monomorphised loop over [`super::clock::Monotonic`], [`super::port::Port`] and
//! [`super::wait::Epolled`] is the same code as one written against them directly.

use std::sync::atomic::Ordering;

use crate::config::MediumConfig;
use crate::engine::{DueFrame, Engine};
use crate::time::Nanos;

use super::clock::Clock;
use super::measured::Measured;
use super::port::PortIo;
use super::publish::Shared;
use super::spin_budget::{self, SpinBudget};
use super::timing::Timing;
use super::wait::{Ready, Sleep, Wait};

/// Frames read from one port before the others and the clock get their turn.
pub const RECV_BATCH: usize = 32;

/// What the loop has to say when it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    /// Frames that were due at a port that refused them.
    pub send_errors: u64,
    /// How long the full spin was withheld ([`SpinBudget::withheld_ns`]).
    pub spin_withheld_ns: u64,
}

/// Runs `config`'s medium on `ports` (indexed as `config.ports`) until `waiter` reports a
/// stop, publishing into `shared` when the control thread asks.
pub fn run<C: Clock, P: PortIo, W: Wait>(
    config: &MediumConfig,
    clock: &C,
    ports: &[P],
    waiter: &mut W,
    shared: &Shared<C>,
    timing: Timing,
) -> Stopped {
    let mut pass = Pass {
        clock,
        ports,
        engine: Engine::new(config),
        lateness: Measured::new(config.segments.len()),
        advanced: 0,
        send_errors: 0,
        buf: Vec::new(),
        out: Vec::new(),
    };
    let mut ready = Vec::with_capacity(ports.len() + 1);
    let mut budget = SpinBudget::new(clock.now(), clock.thread_cpu());
    loop {
        let now = clock.now();
        if now.saturating_sub(budget.last()) >= spin_budget::ACCOUNT_EVERY {
            budget.account(now, clock.thread_cpu());
        }
        let sleep = sleep_for(&pass.engine, now, budget.spin_ns(timing.spin_ns));
        waiter.wait(sleep, &mut ready);
        // Read once a pass, and only when a frame came: two clock reads are not free here.
        let mut offset = None;
        for &r in &ready {
            match r {
                Ready::Stop => {
                    return Stopped {
                        send_errors: pass.send_errors,
                        spin_withheld_ns: budget.withheld_ns(),
                    };
                }
                Ready::Port(i) => {
                    if !pass.read(i, &mut offset) {
                        waiter.forget(i);
                    }
                }
            }
        }
        pass.deliver();
        if shared.wanted.load(Ordering::Acquire) {
            shared.publish(&pass.engine, &mut pass.lateness);
        }
    }
}

/// How long the loop may sleep at `now`: awake, spinning, from `spin_ns` before the earliest
/// moment a frame can be due at a port. Not only before a delivery already decided: a
/// decision made on waking (who starts on a bus, a frame fully into a switch) can make one
/// due a shortest frame's time later, so a thread that slept until that decision and woke
/// late would deliver late. The decisions themselves are computed from their exact times
/// whenever made.
pub fn sleep_for(engine: &Engine<Vec<u8>>, now: Nanos, spin_ns: Nanos) -> Sleep {
    let spin_from = engine
        .earliest_delivery()
        .map(|e| e.saturating_sub(spin_ns));
    match engine.next_deadline() {
        None => Sleep::Idle,
        Some(d) if d <= now => Sleep::Poll,
        Some(_) if spin_from.is_some_and(|s| s <= now) => Sleep::Poll,
        Some(d) => Sleep::Until(spin_from.map_or(d, |s| s.min(d))),
    }
}

/// The loop's state across passes.
struct Pass<'a, C, P> {
    clock: &'a C,
    ports: &'a [P],
    engine: Engine<Vec<u8>>,
    lateness: Measured,
    /// How far the engine has been advanced: a frame stamped before it starts now (what is
    /// decided stays decided), one stamped after it starts when it arrived.
    advanced: Nanos,
    send_errors: u64,
    buf: Vec<u8>,
    out: Vec<DueFrame<Vec<u8>>>,
}

impl<C: Clock, P: PortIo> Pass<'_, C, P> {
    /// Hands what port `i` has to the engine, a bounded batch: a node flooding its port must
    /// not keep this thread from delivering (the waiter reports the port again). False when
    /// the port failed and is no longer to be read. `offset` is the receive stamps' offset,
    /// read on the first frame of a pass.
    #[inline]
    fn read(&mut self, i: usize, offset: &mut Option<Nanos>) -> bool {
        let port = &self.ports[i];
        for _ in 0..RECV_BATCH {
            match port.recv(&mut self.buf) {
                Ok(Some(r)) => {
                    let read = self.clock.now();
                    let offset = *offset.get_or_insert_with(|| self.clock.realtime_offset());
                    let arrived = arrival(r.stamp_realtime, offset, read);
                    let segment = self.engine.segment_of(i);
                    if let Some(at) = arrived {
                        self.lateness.ingress[segment].record(read - at);
                    }
                    let at = arrived.unwrap_or(read);
                    let entered = at.max(self.advanced);
                    self.lateness.entry[segment].record(entered - at);
                    self.engine.arrive(i, r.frame, entered);
                }
                Ok(None) => break,
                Err(e) => {
                    // The interface is gone (its container was removed): stop watching it;
                    // the other ports go on.
                    eprintln!("medium: port {}: {e}; no longer read", port.name());
                    return false;
                }
            }
        }
        true
    }

    /// Catches the engine up to now and writes what is due, each frame's lateness taken
    /// when it is written (a write takes time; the frames behind it are that much later).
    #[inline]
    fn deliver(&mut self) {
        let now = self.clock.now();
        self.engine.advance(now, &mut self.out);
        self.advanced = now;
        for o in self.out.drain(..) {
            let late = self.clock.now().saturating_sub(o.due);
            self.lateness.egress[self.engine.segment_of(o.port)].record(late);
            if self.ports[o.port].send(&o.frame).is_err() {
                self.send_errors += 1;
            }
        }
    }
}

/// Receive stamps further from the read than this are not arrival times (a clock step, or a
/// kernel that left the sender's delivery time on the frame).
const STAMP_PLAUSIBLE: Nanos = 1_000_000_000;

/// When a frame read at `read` (monotonic) arrived, from its kernel stamp on
/// CLOCK_REALTIME and the clocks' `offset`; `None` without a plausible stamp.
fn arrival(stamp_realtime: Option<u64>, offset: Nanos, read: Nanos) -> Option<Nanos> {
    let at = stamp_realtime?.checked_sub(offset)?;
    (at <= read && read - at < STAMP_PLAUSIBLE).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_becomes_an_arrival_only_when_plausible() {
        let offset = 1_000_000_000_000;
        let read = 5_000_000_000;
        // 30 µs before the read: an arrival.
        assert_eq!(
            arrival(Some(offset + read - 30_000), offset, read),
            Some(read - 30_000)
        );
        // After the read, more than a second before it, or missing: not an arrival.
        assert_eq!(arrival(Some(offset + read + 1), offset, read), None);
        assert_eq!(
            arrival(Some(offset + read - 2_000_000_000), offset, read),
            None
        );
        assert_eq!(arrival(None, offset, read), None);
        // A monotonic stamp left on the frame reads as decades before the read.
        assert_eq!(arrival(Some(read - 10), offset, read), None);
    }
}
