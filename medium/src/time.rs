//! Time on the wire: nanoseconds as plain integers, and what a frame costs at a bit rate.
//!
//! Both clocks the medium runs on (simulated time, and `CLOCK_MONOTONIC` in the real-time
//! emulator) count nanoseconds from an origin of their own; the MAC model never reads a clock,
//! it is only told what time it is.

/// A point in time or a duration, in nanoseconds.
pub type Nanos = u64;

/// Preamble and start-of-frame delimiter, bytes.
pub const PREAMBLE_BYTES: u64 = 8;
/// Frame check sequence, bytes (the kernel's frame length does not include it).
pub const FCS_BYTES: u64 = 4;
/// The shortest frame on the wire, FCS included (payload padded to 46 bytes).
pub const MIN_FRAME_BYTES: u64 = 64;
/// Inter-frame gap, bits.
pub const IFG_BITS: u64 = 96;
/// Slot time, bits: the unit of backoff.
pub const SLOT_BITS: u64 = 512;
/// Jam signal after a collision is detected, bits.
pub const JAM_BITS: u64 = 32;
/// A transmitter's turnaround between two of its own frames, bits: longer than the gap, for
/// the reason the medium's configuration gives with its 10 Mbit/s default.
pub const TURNAROUND_BITS: u64 = 128;

/// The frame clock of one wire: how long bits take at its rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireClock {
    rate_bps: u64,
}

impl WireClock {
    /// # Panics
    /// On a rate of zero, which no validated topology has.
    pub fn new(rate_bps: u64) -> WireClock {
        assert!(rate_bps > 0, "a wire needs a non-zero rate");
        WireClock { rate_bps }
    }

    pub fn rate_bps(self) -> u64 {
        self.rate_bps
    }

    /// How long `bits` take on this wire, rounded to the nearest nanosecond.
    pub fn bits(self, bits: u64) -> Nanos {
        (bits * 1_000_000_000 + self.rate_bps / 2) / self.rate_bps
    }

    /// Bytes a frame of `len` bytes (as the kernel sees it: header and payload, no FCS)
    /// occupies on the wire before the gap: padding to the minimum, FCS and preamble.
    pub fn frame_bytes(len: u32) -> u64 {
        (u64::from(len) + FCS_BYTES).max(MIN_FRAME_BYTES) + PREAMBLE_BYTES
    }

    /// From the first bit of the preamble to the last bit of the FCS: when the frame has
    /// arrived at every other station.
    pub fn frame(self, len: u32) -> Nanos {
        self.bits(Self::frame_bytes(len) * 8)
    }

    /// The gap every station keeps after the medium goes idle.
    pub fn gap(self) -> Nanos {
        self.bits(IFG_BITS)
    }

    /// The frame and the gap after it: the wire time the frame takes from everyone.
    pub fn wire_time(self, len: u32) -> Nanos {
        self.frame(len) + self.gap()
    }

    /// How soon after its own frame a transmitter may start the next: [`TURNAROUND_BITS`],
    /// which scale with the rate as the NIC's own clock does.
    pub fn turnaround(self) -> Nanos {
        self.bits(TURNAROUND_BITS)
    }

    pub fn slot(self) -> Nanos {
        self.bits(SLOT_BITS)
    }

    /// How long a collision holds the medium: every colliding station sends its preamble
    /// before it can tell, then the jam.
    pub fn collision(self) -> Nanos {
        self.bits(PREAMBLE_BYTES * 8 + JAM_BITS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_megabit_frame_times_are_the_standards() {
        let w = WireClock::new(10_000_000);
        // Minimum frame: 64 + 8 + 12 byte-times = 67.2 µs with the gap.
        assert_eq!(w.wire_time(60), 67_200);
        // A 4-byte kernel frame is padded just the same.
        assert_eq!(w.wire_time(4), 67_200);
        // Full frame: 1514 + 4 + 8 + 12 = 1538 byte-times = 1230.4 µs.
        assert_eq!(w.wire_time(1514), 1_230_400);
        assert_eq!(w.slot(), 51_200);
        assert_eq!(w.gap(), 9_600);
        assert_eq!(w.collision(), 9_600);
    }

    #[test]
    fn the_turnaround_is_128_bit_times_at_any_rate() {
        // 12.8 µs at 10 Mbit/s, the configuration's default.
        assert_eq!(WireClock::new(10_000_000).turnaround(), 12_800);
        let fast = WireClock::new(100_000_000);
        assert_eq!(fast.turnaround(), 1_280);
        assert_eq!(fast.slot(), 5_120);
        // Still longer than the gap, as the medium's check requires.
        assert!(fast.turnaround() > fast.gap());
    }

    #[test]
    fn one_stream_gets_1448_of_1538() {
        // A full TCP segment with timestamps carries 1448 payload bytes in 1538 byte-times.
        let w = WireClock::new(10_000_000);
        let goodput = 1448.0 * 8.0 / (w.wire_time(1514) as f64 * 1e-9) / 1e6;
        assert!((goodput - 9.4148).abs() < 0.001, "{goodput}");
    }
}
