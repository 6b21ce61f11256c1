//! The event thread's record of its own timing, per segment: the three lateness histograms
//! a segment's report carries ([`crate::stats::SegmentReport`]). The event thread records
//! into its own copy and hands it over only when the control thread asks
//! ([`super::publish`]), so recording stays a histogram increment with no lock.

use crate::stats::LatenessHistogram;

pub struct Measured {
    /// How late frames were written to their ports after they were due.
    pub egress: Vec<LatenessHistogram>,
    /// How long frames waited at their ports before the event thread read them.
    pub ingress: Vec<LatenessHistogram>,
    /// How much later than it arrived a frame entered the emulated wire: 0 unless the
    /// engine had already decided past its arrival when it was read (what a late read
    /// changes; a frame read late is otherwise placed at its arrival).
    pub entry: Vec<LatenessHistogram>,
}

impl Measured {
    pub fn new(segments: usize) -> Measured {
        Measured {
            egress: vec![LatenessHistogram::default(); segments],
            ingress: vec![LatenessHistogram::default(); segments],
            entry: vec![LatenessHistogram::default(); segments],
        }
    }

    /// Adds `other`'s samples to these.
    pub fn merge(&mut self, other: &Measured) {
        for (mine, theirs) in [
            (&mut self.egress, &other.egress),
            (&mut self.ingress, &other.ingress),
            (&mut self.entry, &other.entry),
        ] {
            for (m, t) in mine.iter_mut().zip(theirs) {
                m.merge(t);
            }
        }
    }

    pub fn clear(&mut self) {
        self.egress
            .iter_mut()
            .chain(self.ingress.iter_mut())
            .chain(self.entry.iter_mut())
            .for_each(LatenessHistogram::clear);
    }
}
