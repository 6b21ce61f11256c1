//! How a trial's payload accumulated over time: the bytes delivered so far, sampled every
//! [`INTERVAL_NS`] (as iperf3's intervals and flent's samples keep them).
//!
//! A trial's record gives only its total, and the controller must count what each pair moved
//! inside the window in which all pairs ran. Pro-rating the total assumes an even rate, which a
//! busy shared bus does not give: one pair may move most of its bytes while the others wait.
//! With the samples the count is exact at each sample and linear only within one interval.
//!
//! Sampling costs one monotonic clock read per message; a sample is kept at the first message
//! completed after each interval boundary, stamped with that message's own time, so every
//! sample is a true (time, bytes) point of the trial.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The interval between samples, ns: fine enough that the window's edges cut at most one
/// interval of each pair's traffic, coarse enough that a 60 s trial keeps 6000 samples.
pub const INTERVAL_NS: u64 = 10_000_000;

/// Samples of a trial: `bytes[i]` payload delivered by `offset_ns[i]` after the trial's start
/// (`start_unix_ns` of its record). Ascending in both; the last sample is the trial's end.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct Progress {
    pub offset_ns: Vec<u64>,
    pub bytes: Vec<u64>,
}

/// Takes the samples during a trial.
#[derive(Debug)]
pub struct Meter {
    start: Instant,
    next_ns: u64,
    samples: Progress,
}

impl Meter {
    /// A meter for a trial that started at `start` (the trial's stopwatch).
    pub fn start(start: Instant) -> Meter {
        Meter {
            start,
            next_ns: INTERVAL_NS,
            samples: Progress::default(),
        }
    }

    /// `bytes` delivered so far: kept if an interval boundary has passed since the last
    /// sample.
    #[inline]
    pub fn delivered(&mut self, bytes: u64) {
        let now = self.start.elapsed().as_nanos() as u64;
        if now >= self.next_ns {
            self.samples.offset_ns.push(now);
            self.samples.bytes.push(bytes);
            // The next boundary after now: a stall of several intervals leaves no empty
            // samples, and linear interpolation across it is exact (nothing moved).
            self.next_ns = (now / INTERVAL_NS + 1) * INTERVAL_NS;
        }
    }

    /// The samples, closed by the trial's end: `bytes` in all after `elapsed_ns`.
    pub fn finish(mut self, elapsed_ns: u64, bytes: u64) -> Progress {
        if self.samples.offset_ns.last() != Some(&elapsed_ns) {
            self.samples.offset_ns.push(elapsed_ns);
            self.samples.bytes.push(bytes);
        }
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn samples_once_per_interval_and_closes_at_the_end() {
        // A trial that "started" 35 ms ago: the first message completes past three
        // boundaries, and is kept once, at its own time.
        let start = Instant::now() - Duration::from_millis(35);
        let mut m = Meter::start(start);
        m.delivered(100);
        m.delivered(200); // same interval: not kept
        let p = m.finish(40_000_000, 300);
        assert_eq!(p.bytes, [100, 300]);
        assert!(p.offset_ns[0] >= 35_000_000 && p.offset_ns[0] < 40_000_000);
        assert_eq!(p.offset_ns[1], 40_000_000);
    }

    #[test]
    fn a_short_trial_has_its_end_alone() {
        let mut m = Meter::start(Instant::now());
        m.delivered(64);
        let p = m.finish(1_000, 64);
        assert_eq!((p.offset_ns, p.bytes), (vec![1_000], vec![64]));
    }
}
