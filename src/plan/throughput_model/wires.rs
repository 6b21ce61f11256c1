//! The wires a hop's frames cross, as the model and the wire-capacity bound both see them:
//! per bond slave (or MPTCP subflow) a lane of wires in order, switched segments twice (into
//! the switch, stored, out of it).

use orchestrate_medium::time::WireClock;

use super::params::{ModelParams, Transport};
use crate::spec::Name;
use crate::spec::topology::{BondMode, Medium};
use crate::topology::Topology;
use crate::topology::paths::Hop;

/// Payload bytes of each TCP segment of a message of `size` bytes.
pub(crate) fn payloads(size: u64, mss: u64) -> impl Iterator<Item = u64> {
    let frames = size.div_ceil(mss).max(1);
    (0..frames).map(move |k| (size - k * mss).min(mss))
}

/// One wire a frame is serialized on.
#[derive(Debug, Clone)]
pub(super) struct Wire {
    pub(super) segment: Name,
    pub(super) clock: WireClock,
    /// Half duplex, shared with every station (the frame's ACKs too).
    pub(super) shared: bool,
}

/// A hop's wires: per physical slave, the wires crossed in order, and how many ways a bond
/// stripes the hop's frames.
pub(super) struct HopWires {
    pub(super) lanes: Vec<Vec<Wire>>,
    pub(super) stripes: usize,
}

fn wires_of(seg: &crate::topology::Segment, out: &mut Vec<Wire>) {
    let w = Wire {
        segment: seg.name.clone(),
        clock: WireClock::new(seg.rate.bits_per_s().max(1)),
        shared: seg.medium == Medium::Shared,
    };
    // A switched segment: into the switch, stored, then out of it.
    let times = if w.shared { 1 } else { 2 };
    out.extend(std::iter::repeat_n(w, times));
}

pub(super) fn hop_wires(t: &Topology, hop: &Hop, p: &ModelParams) -> HopWires {
    let from = t.node(&hop.from).expect("path nodes exist");
    let to = t.node(&hop.to).expect("path nodes exist");
    let (physical, stripes) = match from.bonds.iter().find(|b| b.name == hop.dev) {
        // Only balance-rr stripes one flow over several slaves; the other modes keep a flow on
        // one (xor), send it on all (broadcast) or on the active one (active-backup).
        Some(b) if b.mode == BondMode::BalanceRr => (b.slaves.clone(), b.slaves.len()),
        Some(b) if b.mode == BondMode::Broadcast => (b.slaves.clone(), 1),
        Some(b) => (b.slaves.iter().take(1).cloned().collect(), 1),
        None if p.transport == Transport::Mptcp && from.mptcp.is_some() => {
            let direct = direct_interfaces(t, from, to);
            let n = direct.len();
            (direct, n)
        }
        None => (vec![hop.dev.clone()], 1),
    };
    let mut lanes = Vec::new();
    for ifname in &physical {
        let Some(seg) = from.interface(ifname).and_then(|i| t.segment(&i.segment)) else {
            continue;
        };
        let mut lane = Vec::new();
        wires_of(seg, &mut lane);
        // The receiver's segment on the same network, if another (a switch joins them).
        for other in &to.interfaces {
            if let Some(o) = t.segment(&other.segment)
                && o.network == seg.network
                && o.name != seg.name
            {
                wires_of(o, &mut lane);
            }
        }
        lanes.push(lane);
    }
    HopWires {
        stripes: stripes.clamp(1, lanes.len().max(1)),
        lanes,
    }
}

/// `from`'s interfaces on a network `to` is on too: the paths an MPTCP subflow each takes
/// between neighbours.
fn direct_interfaces(
    t: &Topology,
    from: &crate::topology::Node,
    to: &crate::topology::Node,
) -> Vec<crate::spec::IfName> {
    let network = |i: &crate::topology::Interface| t.segment(&i.segment).map(|s| &s.network);
    from.interfaces
        .iter()
        .filter(|i| {
            to.interfaces
                .iter()
                .any(|o| network(o).is_some() && network(o) == network(i))
        })
        .map(|i| i.name.clone())
        .collect()
}
