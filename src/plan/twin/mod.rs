//! The simulated twin: a token-test cell run in simulated time on the medium emulator's own
//! MAC ([`orchestrate_medium::engine::Engine`]: CSMA/CD with collisions and backoff, switches
//! that store and forward, each node's CPU charged per frame), with TCP and the nodes' stacks
//! modelled as the analytic model assumes them ([`token`]).
//!
//! It answers what the real-time emulator cannot keep time for. The emulator must place every
//! frame within a contention slot of when the wire would have carried it, and on a machine
//! whose one write into a veth takes 15 to 21 µs (p99) it can for a 10 Mbit/s slot (51.2 µs)
//! but not for a 100 Mbit/s one (5.12 µs). The twin decides the same contentions from exact
//! times. What it leaves out is what only real nodes show: their stacks' variance, the
//! kernel's TCP beyond its segments and delayed ACKs, the host stalls the emulator screens
//! for. So its figures are a forecast, checked against the emulator where the emulator keeps
//! its bound (the 10 Mbit/s study), and never shown as a measurement.
//!
//! Plain TCP over interfaces and bonds only: a configuration running MPTCP gets no twin, and
//! where ECMP gives a pair several ways the twin takes the plan's first.

mod network;
mod token;

use crate::plan::placement::Placement;
use crate::plan::throughput_model::ModelParams;
use crate::spec::Rate;
use crate::topology::{NamedHostCosts, Topology};
use token::{TokenSim, TwinHop, TwinPair};
pub use token::{TwinLength, TwinOutcome};

/// The token test of `placement` at `size` bytes on `t`, in simulated time; `None` for what
/// the twin does not model (MPTCP, a path through a node the topology does not have).
pub fn token(
    t: &Topology,
    placement: &Placement,
    size: u64,
    p: &ModelParams,
    seed: u64,
    length: TwinLength,
) -> Option<TwinOutcome> {
    if t.nodes.iter().any(|n| n.mptcp.is_some()) || placement.pairs.is_empty() {
        return None;
    }
    let hops = |hops: &[crate::topology::paths::Hop]| -> Option<Vec<TwinHop>> {
        hops.iter()
            .map(|h| {
                Some(TwinHop {
                    from: t.node_index(&h.from)?,
                    dev: h.dev.clone(),
                    to: t.node_index(&h.to)?,
                })
            })
            .collect()
    };
    let pairs = placement
        .pairs
        .iter()
        .map(|pair| {
            Some(TwinPair {
                forth: hops(&pair.path.hops).filter(|h| !h.is_empty())?,
                back: hops(&pair.path.reply).filter(|h| !h.is_empty())?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(TokenSim::new(t, pairs, size, *p, seed).run(length))
}

/// `t` with every segment at `rate` and every node charged `host`: the same wiring, paths and
/// addresses on other wires and other hosts (a forecast's other side).
pub fn rewired(t: &Topology, rate: Rate, host: &NamedHostCosts) -> Topology {
    let mut out = t.clone();
    for s in &mut out.segments {
        s.rate = rate;
    }
    for n in &mut out.nodes {
        n.host = host.clone();
    }
    out
}

#[cfg(test)]
mod tests;
