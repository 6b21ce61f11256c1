//! Time estimates for points, from the wire rates: good to tens of percent, which is what a
//! person deciding whether to start a run needs.

use std::time::Duration;

use crate::spec::experiment::Pattern;
use crate::topology::Topology;

use super::experiment::{Amount, Workload};
use super::placement::Placement;

/// Starting servers, the barrier and collecting records, per point.
pub const POINT_OVERHEAD: Duration = Duration::from_millis(500);
/// Bytes of Ethernet (with preamble and gap), IP and TCP headers per frame.
const FRAME_OVERHEAD: u64 = 38 + 20 + 32;
const MSS: u64 = 1448;
/// Per-hop latency assumed on top of the wire time (stack, forwarding, scheduling).
const HOP_LATENCY: Duration = Duration::from_micros(200);

/// Estimated wall time of one run of `w` at `size` on `placement`.
pub fn point(t: &Topology, w: &Workload, size: u64, placement: &Placement) -> Duration {
    let measured = match w.amount {
        Amount::Duration(d) => d,
        Amount::Exchanges(n) => {
            let per = per_exchange(t, w, size, placement);
            per * u32::try_from(n + w.warmup).unwrap_or(u32::MAX)
        }
    };
    measured + POINT_OVERHEAD
}

fn per_exchange(t: &Topology, w: &Workload, size: u64, placement: &Placement) -> Duration {
    let rate = t
        .segments
        .iter()
        .map(|s| s.rate.bits_per_s())
        .min()
        .unwrap_or(10_000_000)
        .max(1);
    let hops = placement
        .pairs
        .iter()
        .map(|p| p.path.hop_count())
        .max()
        .unwrap_or(1) as u64;
    let frames = size.div_ceil(MSS).max(1);
    let wire_bits = (size + frames * FRAME_OVERHEAD) * 8;
    // Pairs sharing the busiest segment take turns on it.
    let share = placement.max_segment_load.max(1) as u64;
    let one_way = Duration::from_secs_f64((wire_bits * share) as f64 / rate as f64) + HOP_LATENCY;
    let trips: u32 = match w.pattern {
        Pattern::Token | Pattern::Pingpong | Pattern::Pipeline => 2,
        Pattern::Stream | Pattern::Load | Pattern::Filecopy => 1,
    };
    one_way * trips * u32::try_from(hops).unwrap_or(1)
}
