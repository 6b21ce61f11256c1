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
    /// How late frames were written to their ports after they were due (egress).
    pub lateness: Lateness,
    /// How long frames waited at their ports before the emulator read them (ingress; from
    /// the kernel's receive stamps; empty from emulators that did not measure it).
    #[serde(default)]
    pub ingress: Lateness,
    /// How much later than it arrived a frame entered the emulated wire (0 unless the
    /// emulator had decided past its arrival before it read it; empty from emulators that
    /// did not measure it).
    #[serde(default)]
    pub entry: Lateness,
}

impl SegmentReport {
    pub fn utilisation(&self) -> f64 {
        self.counters.utilisation(self.elapsed_ns)
    }
}

/// The timing the emulator must keep on one segment for a point measured on it to count,
/// by segment kind; both ends are judged: how much later than its arrival a frame entered the
/// emulated wire, and how late it was written out (egress). How long a frame waited to be read
/// (ingress) is recorded but not judged: a frame read late still enters the wire at its
/// kernel receive stamp, unless the emulator had already decided past it, which is what the
/// first measure counts.
///
/// - **Shared (CSMA/CD)**: p99 within one contention slot, 512 bit times (51.2 µs at
///   10 Mbit/s). Who defers and who collides is decided from arrival times; an error under a
///   slot changes a decision only between frames the real medium would also have had in
///   contention within the same slot, where the outcome is a backoff draw anyway.
/// - **Switched (full duplex)**: the same 512 bit times. Nothing is decided between stations
///   by arrival order; lateness only adds to a frame's delay, and within this bound a late
///   frame still arrives before a back-to-back minimum frame behind it (672 bit times with
///   preamble and gap) would have finished.
///
/// On both, no frame later than [`MAX_LATENESS_US`]: a millisecond is longer than a 1500-byte
/// frame's time at 10 Mbit/s, so one such stall reorders the wire's timeline however rare.
///
/// The floor under any design on a virtual machine is what one write into a veth costs: its
/// p99 was 15–21 µs on a 2-vCPU machine of the project's kind, below a 10 Mbit/s slot but
/// above a 100 Mbit/s one (5.12 µs), so a 100 Mbit/s segment's points are judged against a
/// bound such a machine cannot keep, and say so.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimingBound {
    pub p99_us: f64,
    pub max_us: f64,
}

/// The longest any frame may wait at either end, µs.
pub const MAX_LATENESS_US: f64 = 1000.0;

/// The bound for a segment of `medium` (`shared` or `switched`) at `rate_bps`.
pub fn timing_bound(_medium: &str, rate_bps: u64) -> TimingBound {
    let slot_us = if rate_bps == 0 {
        0.0
    } else {
        crate::time::SLOT_BITS as f64 * 1e6 / rate_bps as f64
    };
    TimingBound {
        p99_us: slot_us,
        max_us: MAX_LATENESS_US,
    }
}

impl TimingBound {
    /// Whether `lateness` keeps this bound (nothing measured keeps it).
    pub fn kept_by(&self, lateness: &Lateness) -> bool {
        lateness.samples == 0 || (lateness.p99_us <= self.p99_us && lateness.max_us <= self.max_us)
    }
}

/// Whether a segment's report keeps its bound at both ends: the point's timing can be
/// trusted.
pub fn timing_kept(report: &SegmentReport) -> bool {
    let bound = timing_bound(&report.medium, report.rate_bps);
    bound.kept_by(&report.lateness) && bound.kept_by(&report.entry)
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
    fn the_bound_is_a_slot_at_p99_and_a_millisecond_at_most_at_both_ends() {
        let b = timing_bound("shared", 10_000_000);
        assert!((b.p99_us - 51.2).abs() < 1e-9);
        assert!((timing_bound("switched", 100_000_000).p99_us - 5.12).abs() < 1e-9);
        let mut h = LatenessHistogram::default();
        for _ in 0..990 {
            h.record(20_000);
        }
        for _ in 0..10 {
            h.record(60_000);
        }
        let report = |egress: Lateness, entry: Lateness| SegmentReport {
            segment: "s".into(),
            medium: "shared".into(),
            rate_bps: 10_000_000,
            elapsed_ns: 1,
            counters: SegmentCounters::default(),
            lateness: egress,
            // Reading late is recorded, not judged.
            ingress: Lateness {
                samples: 1,
                p99_us: 500.0,
                max_us: 5000.0,
                ..Lateness::default()
            },
            entry,
        };
        let good = h.summary();
        assert!(timing_kept(&report(good, good)));
        // An entry from an emulator that did not measure it is not held against it.
        assert!(timing_kept(&report(good, Lateness::default())));
        // 2% of frames over a slot: p99 is out.
        for _ in 0..20 {
            h.record(60_000);
        }
        assert!(!timing_kept(&report(good, h.summary())));
        assert!(!timing_kept(&report(h.summary(), good)));
        // One stall over a millisecond among many punctual frames.
        let mut s = LatenessHistogram::default();
        for _ in 0..10_000 {
            s.record(5_000);
        }
        s.record(1_500_000);
        assert!(s.summary().p99_us < 51.2);
        assert!(!timing_kept(&report(s.summary(), good)));
    }
}
