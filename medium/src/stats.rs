//! What a segment did: counters kept by the MAC models, and the real-time emulator's record
//! of its own lateness. Snapshots are plain data (serde) so that the controller can store
//! them beside the measurements.

use serde::{Deserialize, Serialize};

use crate::time::Nanos;

/// Cumulative counters of one segment. Subtracting two snapshots gives what happened between
/// them ([`SegmentCounters::since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentCounters {
    /// Frames carried to the end (delivered to the other stations).
    pub frames: u64,
    /// Their bytes as the kernel sees them (header and payload, no FCS, no padding).
    pub bytes: u64,
    /// Time the medium spent on those frames, gaps included (ns). Utilisation is this over
    /// the elapsed time; a saturated wire with no collisions is at 1.
    pub carried_ns: u64,
    /// Collisions (one per contention that more than one station entered).
    pub collisions: u64,
    /// Transmission attempts that ended in a collision (each collision has two or more).
    pub collided_attempts: u64,
    /// Time the medium spent in collisions and the gap after them (ns).
    pub collision_ns: u64,
    /// Frames dropped after 16 attempts.
    pub excess_collision_drops: u64,
    /// Frames dropped because a station's transmit queue was full.
    pub queue_drops: u64,
    /// Transmissions that had to wait for the medium to go idle first.
    pub deferrals: u64,
}

impl SegmentCounters {
    /// What happened since `earlier`, a snapshot of the same segment.
    pub fn since(&self, earlier: &SegmentCounters) -> SegmentCounters {
        SegmentCounters {
            frames: self.frames - earlier.frames,
            bytes: self.bytes - earlier.bytes,
            carried_ns: self.carried_ns - earlier.carried_ns,
            collisions: self.collisions - earlier.collisions,
            collided_attempts: self.collided_attempts - earlier.collided_attempts,
            collision_ns: self.collision_ns - earlier.collision_ns,
            excess_collision_drops: self.excess_collision_drops - earlier.excess_collision_drops,
            queue_drops: self.queue_drops - earlier.queue_drops,
            deferrals: self.deferrals - earlier.deferrals,
        }
    }

    /// Share of `elapsed` the medium carried frames.
    pub fn utilisation(&self, elapsed: Nanos) -> f64 {
        if elapsed == 0 {
            0.0
        } else {
            self.carried_ns as f64 / elapsed as f64
        }
    }

    /// Collisions per frame carried.
    pub fn collisions_per_frame(&self) -> f64 {
        if self.frames == 0 {
            0.0
        } else {
            self.collisions as f64 / self.frames as f64
        }
    }

    pub fn add(&mut self, other: &SegmentCounters) {
        self.frames += other.frames;
        self.bytes += other.bytes;
        self.carried_ns += other.carried_ns;
        self.collisions += other.collisions;
        self.collided_attempts += other.collided_attempts;
        self.collision_ns += other.collision_ns;
        self.excess_collision_drops += other.excess_collision_drops;
        self.queue_drops += other.queue_drops;
        self.deferrals += other.deferrals;
    }
}

/// Percentiles of how late the emulator sent frames against their deadlines (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Lateness {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// A histogram of lateness in ns, 1 ns to 100 ms (anything later counts as 100 ms), 2
/// significant digits: small enough to merge and clear every few milliseconds.
#[derive(Debug, Clone)]
pub struct LatenessHistogram(hdrhistogram::Histogram<u64>);

impl Default for LatenessHistogram {
    fn default() -> Self {
        LatenessHistogram(
            hdrhistogram::Histogram::new_with_bounds(1, 100_000_000, 2)
                .expect("valid histogram bounds"),
        )
    }
}

impl LatenessHistogram {
    pub fn record(&mut self, late_ns: Nanos) {
        self.0.saturating_record(late_ns.max(1));
    }

    pub fn merge(&mut self, other: &LatenessHistogram) {
        // Same bounds on both sides: cannot fail.
        let _ = self.0.add(&other.0);
    }

    pub fn clear(&mut self) {
        self.0.reset();
    }

    pub fn summary(&self) -> Lateness {
        let h = &self.0;
        let us = |ns: u64| ns as f64 / 1000.0;
        if h.is_empty() {
            return Lateness::default();
        }
        Lateness {
            samples: h.len(),
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// One segment's statistics over an interval, as the emulator reports them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentReport {
    pub segment: String,
    /// `shared` (CSMA/CD bus) or `switched` (full-duplex ports).
    pub medium: String,
    pub rate_bps: u64,
    /// Length of the interval, ns.
    pub elapsed_ns: u64,
    #[serde(flatten)]
    pub counters: SegmentCounters,
    pub lateness: Lateness,
}

impl SegmentReport {
    pub fn utilisation(&self) -> f64 {
        self.counters.utilisation(self.elapsed_ns)
    }
}

/// Whether a run's timing can be trusted: the emulator flags lateness whose p99 exceeds a
/// tenth of a minimum frame's time on the wire (6.72 µs at 10 Mbit/s).
pub fn lateness_flagged(lateness: &Lateness, rate_bps: u64) -> bool {
    let min_frame_us = crate::time::WireClock::new(rate_bps).wire_time(0) as f64 / 1000.0;
    lateness.samples > 0 && lateness.p99_us > min_frame_us / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_subtracts_every_counter() {
        let a = SegmentCounters {
            frames: 10,
            bytes: 1000,
            collisions: 3,
            deferrals: 4,
            ..Default::default()
        };
        let mut b = a;
        b.add(&SegmentCounters {
            frames: 5,
            bytes: 50,
            collisions: 1,
            queue_drops: 2,
            ..Default::default()
        });
        let d = b.since(&a);
        assert_eq!(
            (d.frames, d.bytes, d.collisions, d.queue_drops, d.deferrals),
            (5, 50, 1, 2, 0)
        );
        assert!((d.collisions_per_frame() - 0.2).abs() < 1e-12);
    }

    #[test]
    fn lateness_is_flagged_above_a_tenth_of_a_minimum_frame() {
        let mut h = LatenessHistogram::default();
        for _ in 0..1000 {
            h.record(5_000);
        }
        assert!(!lateness_flagged(&h.summary(), 10_000_000));
        for _ in 0..100 {
            h.record(50_000);
        }
        assert!(lateness_flagged(&h.summary(), 10_000_000));
    }
}
