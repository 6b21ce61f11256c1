//! The most a placement's wires can carry: an upper bound on a token-test cell's aggregate
//! that no measurement can exceed, whatever the hosts, the stacks or CSMA/CD do.
//!
//! Only what physics forces is counted: each token's data frames (header, payload, FCS,
//! preamble and gap) on every wire they cross, both directions of the exchange, and nothing
//! else: no ACKs (a reply may carry them), no collisions, no host costs, no per-hop latency.
//! The resources are
//! - a shared segment: every frame any pair puts on it, both ways (half duplex);
//! - a switched segment's port, per direction: the frames into the switch from the sender and
//!   out of it towards the receiver (full duplex);
//! - each pair itself: a token exchange is one message out and one back, so a pair never
//!   completes exchanges faster than its frames can be serialised along its path.
//!
//! The bound is the largest total exchange rate (a linear program: maximise the pairs' summed
//! rates with every resource busy at most all of its time) times the token's size.

use std::collections::BTreeMap;

use microlp::{ComparisonOp, OptimizationDirection, Problem};

use super::params::{ModelParams, Transport};
use super::wires::{Wire, hop_wires, payloads};
use crate::plan::placement::Placement;
use crate::spec::{Name, NodeName};
use crate::topology::Topology;
use crate::topology::paths::Hop;

/// What a frame occupies for its wire time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum WireResource {
    Shared(Name),
    /// A switched segment's port: the segment, the node at the port, into the switch (`true`)
    /// or out of it.
    Port(Name, NodeName, bool),
    /// The pair's own exchange, one message at a time.
    Pair(usize),
}

/// The aggregate of `placement`'s pairs at `size` bytes can never exceed this (Mbit/s),
/// whichever of its ways (ECMP) each pair's connection takes;
/// `None` when the placement has no pairs, when the bound cannot be computed, and under
/// MPTCP (its scheduler may split a connection's frames over its subflows in any
/// proportion, which a fixed share per wire does not bound).
pub fn token_wire_capacity(
    t: &Topology,
    placement: &Placement,
    size: u64,
    p: &ModelParams,
) -> Option<f64> {
    if p.transport == Transport::Mptcp {
        return None;
    }
    let payload: Vec<u64> = payloads(size, p.segment_payload()).collect();
    let mut demand: Vec<BTreeMap<WireResource, f64>> = Vec::new();
    for (i, pair) in placement.pairs.iter().enumerate() {
        // One rate per way the pair may take (ECMP): the bound lets a pair split its
        // exchanges over its ways in any proportion, which covers whichever one the kernel's
        // hash picks. Its turns are its own on every way.
        for way in pair.path.ways() {
            let mut d = BTreeMap::new();
            let out = direction(t, &way.hops, &payload, p, &mut d);
            let back = direction(t, &way.reply, &payload, p, &mut d);
            d.insert(WireResource::Pair(i), (out + back) * 1e-9);
            demand.push(d);
        }
    }
    let exchanges_per_s = max_total_rate(&demand)?;
    Some(exchanges_per_s * size as f64 * 8.0 / 1e6)
}

/// The aggregate of `placement`'s pairs streaming one way (client to server: `stream` and
/// `filecopy`) can never exceed this (Mbit/s of payload): every data frame full, nothing but
/// data frames on the wires, and no turns to wait for (a stream keeps its pipe full). Smaller
/// writes or segments only lower what a wire carries, so the bound holds for every size.
/// `None` as for [`token_wire_capacity`].
pub fn bulk_wire_capacity(t: &Topology, placement: &Placement, p: &ModelParams) -> Option<f64> {
    if p.transport == Transport::Mptcp {
        return None;
    }
    let full = [p.segment_payload()];
    // One rate per way each pair may take, as for tokens.
    let demand: Vec<BTreeMap<WireResource, f64>> = placement
        .pairs
        .iter()
        .flat_map(|pair| pair.path.ways())
        .map(|way| {
            let mut d = BTreeMap::new();
            direction(t, &way.hops, &full, p, &mut d);
            d
        })
        .collect();
    let segments_per_s = max_total_rate(&demand)?;
    Some(segments_per_s * full[0] as f64 * 8.0 / 1e6)
}

/// Charges one message's frames along `hops` to the wires they occupy; returns the least
/// time the message can take end to end on them (ns): however frames pipeline, the first
/// must reach the busiest wire, all must cross it, and the last must cross the rest.
fn direction(
    t: &Topology,
    hops: &[Hop],
    payload: &[u64],
    p: &ModelParams,
    demand: &mut BTreeMap<WireResource, f64>,
) -> f64 {
    let lens: Vec<u32> = payload.iter().map(|&x| p.frame_len(x)).collect();
    let (first, last) = (lens[0], lens[lens.len() - 1]);
    // Per wire crossed (first lane of each hop), the share of the frames it carries.
    let mut path: Vec<(Wire, f64)> = Vec::new();
    for hop in hops {
        let w = hop_wires(t, hop, p);
        let share = 1.0 / w.stripes as f64;
        // Round-robin stripes every frame over the lanes; the others keep to their lanes
        // (broadcast sends every frame on each).
        for lane in &w.lanes {
            // A switched segment appears twice in a lane: into its switch, then out of it.
            let mut entered: Vec<&Name> = Vec::new();
            for wire in lane {
                let busy: f64 = lens.iter().map(|&l| wire.clock.wire_time(l) as f64).sum();
                let r = if wire.shared {
                    WireResource::Shared(wire.segment.clone())
                } else {
                    let into_switch = !entered.contains(&&wire.segment);
                    entered.push(&wire.segment);
                    let node = if into_switch { &hop.from } else { &hop.to };
                    WireResource::Port(wire.segment.clone(), node.clone(), into_switch)
                };
                *demand.entry(r).or_default() += busy * 1e-9 * share;
            }
        }
        for wire in w.lanes.first().into_iter().flatten() {
            path.push((wire.clone(), share));
        }
    }
    (0..path.len())
        .map(|j| {
            let before: f64 = path[..j]
                .iter()
                .map(|(w, _)| w.clock.frame(first) as f64)
                .sum();
            let (w, share) = &path[j];
            let all: f64 = lens
                .iter()
                .map(|&l| w.clock.wire_time(l) as f64)
                .sum::<f64>()
                * share;
            let after: f64 = path[j + 1..]
                .iter()
                .map(|(w, _)| w.clock.frame(last) as f64)
                .sum();
            before + all + after
        })
        .fold(0.0, f64::max)
}

/// The largest sum of pair rates with every resource busy at most all of the time.
fn max_total_rate(demand: &[BTreeMap<WireResource, f64>]) -> Option<f64> {
    if demand.is_empty() {
        return None;
    }
    let mut lp = Problem::new(OptimizationDirection::Maximize);
    let rates: Vec<_> = demand
        .iter()
        .map(|_| lp.add_var(1.0, (0.0, f64::INFINITY)))
        .collect();
    let mut by_resource: BTreeMap<&WireResource, Vec<(microlp::Variable, f64)>> = BTreeMap::new();
    for (d, &r) in demand.iter().zip(&rates) {
        for (res, &secs) in d {
            if secs > 0.0 {
                by_resource.entry(res).or_default().push((r, secs));
            }
        }
    }
    for terms in by_resource.values() {
        lp.add_constraint(terms.as_slice(), ComparisonOp::Le, 1.0);
    }
    // Only a proven optimum bounds the rates: a merely feasible solution is lower than the
    // optimum and would call possible figures impossible.
    let microlp::SolveOutcome::Solution(solution) = lp.solve().ok()? else {
        return None;
    };
    if solution.status() != microlp::SolutionStatus::Optimal {
        return None;
    }
    let total = solution.objective();
    (total.is_finite() && total > 0.0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair_on(res: &[(WireResource, f64)]) -> BTreeMap<WireResource, f64> {
        res.iter().cloned().collect()
    }

    #[test]
    fn pairs_on_one_bus_share_it_and_a_lone_pair_is_held_by_its_own_turns() {
        let bus = || WireResource::Shared("bus".parse::<Name>().unwrap());
        // Seven pairs, each needing 1 ms of the bus and 1 ms of its own turn per exchange.
        let seven: Vec<_> = (0..7)
            .map(|i| pair_on(&[(bus(), 1e-3), (WireResource::Pair(i), 1e-3)]))
            .collect();
        assert!((max_total_rate(&seven).unwrap() - 1000.0).abs() < 1e-6);
        // One pair whose turn takes longer than its bus time: its turns bind.
        let one = vec![pair_on(&[(bus(), 1e-3), (WireResource::Pair(0), 4e-3)])];
        assert!((max_total_rate(&one).unwrap() - 250.0).abs() < 1e-6);
        assert_eq!(max_total_rate(&[]), None);
    }
}
