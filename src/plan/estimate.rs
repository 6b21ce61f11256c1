//! Time estimates for points, from the wire rates: good to tens of percent, which is what a
//! person deciding whether to start a run needs.

use std::time::Duration;

use crate::spec::experiment::Pattern;
use crate::topology::Topology;

use super::experiment::{Amount, Workload};
use super::placement::Placement;
use super::throughput_model::collectives::CollectivePrediction;

/// Starting servers, the barrier and collecting records, per point.
pub const POINT_OVERHEAD: Duration = Duration::from_millis(500);
/// The ranks of a collective connecting all to all, per point.
const RANKS_CONNECT: Duration = Duration::from_millis(500);
/// Bytes of Ethernet (with preamble and gap), IP and TCP headers per frame.
const FRAME_OVERHEAD: u64 = 38 + 20 + 32;
const MSS: u64 = 1448;
/// Per-hop latency assumed on top of the wire time (stack, forwarding, scheduling).
const HOP_LATENCY: Duration = Duration::from_micros(200);

/// Estimated wall time of one run of `w` at `size` on `placement`; `None` if it is too long
/// for a [`Duration`].
pub fn point(t: &Topology, w: &Workload, size: u64, placement: &Placement) -> Option<Duration> {
    let measured = match w.amount {
        Amount::Duration(d) => d,
        Amount::Exchanges(n) => {
            let per = per_exchange(t, w, size, placement)?;
            let counted = per.checked_mul(u32::try_from(n).ok()?)?;
            let warmup = per.checked_mul(u32::try_from(w.warmup).ok()?)?;
            // A run held to a minimum time lasts at least that long; its warm-up is not.
            counted
                .max(w.min_duration.unwrap_or_default())
                .checked_add(warmup)?
        }
    };
    measured.checked_add(POINT_OVERHEAD)
}

/// Estimated wall time of one run of collective `w` at the size `c` predicts: connecting
/// the ranks, the warm-up, the timed iterations and the checked one, each followed by a
/// barrier (taken as a quarter of an iteration, at least a millisecond).
pub fn collective_point(w: &Workload, c: &CollectivePrediction) -> Option<Duration> {
    let iteration = Duration::try_from_secs_f64(c.completion_us * 1e-6).ok()?;
    let with_barrier = iteration.checked_add((iteration / 4).max(Duration::from_millis(1)))?;
    let untimed = with_barrier.checked_mul(u32::try_from(w.warmup).ok()?.checked_add(1)?)?;
    let timed = match w.amount {
        Amount::Duration(d) => {
            // The duration counts the iterations alone; the barriers between them add on.
            let ratio = with_barrier.as_secs_f64() / iteration.as_secs_f64().max(1e-9);
            Duration::try_from_secs_f64(d.as_secs_f64() * ratio).ok()?
        }
        Amount::Exchanges(n) => with_barrier.checked_mul(u32::try_from(n).ok()?)?,
    };
    timed
        .checked_add(untimed)?
        .checked_add(RANKS_CONNECT)?
        .checked_add(POINT_OVERHEAD)
}

fn per_exchange(t: &Topology, w: &Workload, size: u64, placement: &Placement) -> Option<Duration> {
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
        .unwrap_or(1);
    let frames = size.div_ceil(MSS).max(1);
    // In floating point: the product of a large size, the frames and the sharing pairs can
    // exceed u64, and a second here or there does not matter.
    let wire_bits = (size as f64 + frames as f64 * FRAME_OVERHEAD as f64) * 8.0;
    // Pairs sharing the busiest segment take turns on it.
    let share = placement.max_segment_load.max(1) as f64;
    let one_way = Duration::try_from_secs_f64(wire_bits * share / rate as f64)
        .ok()?
        .checked_add(HOP_LATENCY)?;
    let trips: u32 = match w.pattern {
        Pattern::Token | Pattern::Pingpong | Pattern::Pipeline => 2,
        Pattern::Stream | Pattern::Load | Pattern::Filecopy => 1,
        // Collectives are not planned as pairs (the spec refuses them as a pair workload).
        Pattern::Halo | Pattern::Alltoall | Pattern::Allreduce | Pattern::Bcast => 1,
    };
    one_way
        .checked_mul(trips)?
        .checked_mul(u32::try_from(hops).ok()?)
}
