//! The wires the tool makes itself: one veth pair per port of a segment the medium emulator
//! carries, its inside end made in the node's (or switch's) namespace and named as the
//! topology says, as containerlab makes its links. The outside end stays on the host, on no
//! bridge, for the emulator alone.
//!
//! Made this way rather than as a docker network per segment, a wire costs the engine
//! nothing: no network, no endpoint, no attach per container, and nothing the engine can keep
//! after the container is gone (a 20.10 engine sometimes keeps an endpoint of a removed
//! container and then refuses to remove its network until it restarts). The pair dies with
//! the container's namespace; `down` removes any end a failed `up` left on the host, by the
//! names recorded in the state file before anything was made.
//!
//! The inside ends' Receive Packet Steering is set afterwards from the host's shell in the
//! node's network namespace ([`super::netns::steer_receive`]), not on the host before a
//! move: moving a made device into a namespace costs 17 ms a device here, 8.7 s for a 16×16
//! mesh's 512 wires.

use super::netns::{self, Ns};
use super::wiring::{SegmentId, Wiring, switch_service};
use crate::vcluster::error::{Error, Result};
use crate::vcluster::names::ClusterName;

/// Whose port a wire is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// A node, by name.
    Node(String),
    /// A switch, by its service name; its ports join the switch's bridge.
    Switch(String),
}

/// One wire: a veth pair between the host and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wire {
    pub owner: Owner,
    /// The port's name inside its owner (the topology's interface, or a switch's `portN`).
    pub inside: String,
    pub segment: SegmentId,
    /// The end that stays on the host, for the medium emulator.
    pub outside: String,
    /// The inside end's name until its owner names it (made in the owner's namespace).
    pub staging: String,
}

/// The bridge inside a switch that joins its ports.
pub const SWITCH_BRIDGE: &str = "br0";

/// Every wire of the cluster: each port on a segment the medium emulator carries, nodes'
/// ports first in node and port order, then switches' ports. The order numbers the wires, so
/// the same wiring always gets the same names.
pub fn plan(cluster: &ClusterName, wiring: &Wiring) -> Vec<Wire> {
    let node_ports = wiring.nodes.iter().flat_map(|n| {
        n.ports
            .iter()
            .map(move |p| (Owner::Node(n.name.clone()), p.interface.clone(), p.segment))
    });
    let switch_ports = wiring.switches.iter().flat_map(|sw| {
        sw.segments.iter().enumerate().map(move |(i, id)| {
            (
                Owner::Switch(switch_service(&sw.name)),
                format!("port{i}"),
                *id,
            )
        })
    });
    node_ports
        .chain(switch_ports)
        .filter(|(_, _, id)| wiring.carries_frames(*id))
        .enumerate()
        .map(|(k, (owner, inside, segment))| Wire {
            owner,
            inside,
            segment,
            outside: cluster.wire_end(k),
            staging: cluster.wire_staging(k),
        })
        .collect()
}

/// The wires of one owner.
pub fn of<'a>(wires: &'a [Wire], owner: &Owner) -> Vec<&'a Wire> {
    wires.iter().filter(|w| &w.owner == owner).collect()
}

/// Every name the wires use on the host (and the inside ends' staging names, for an `up` of
/// an earlier build that made them on the host): what `down` looks for when an `up` died
/// half-way.
pub fn host_names(wires: &[Wire]) -> Vec<String> {
    wires
        .iter()
        .flat_map(|w| [w.outside.clone(), w.staging.clone()])
        .collect()
}

/// Makes `wires`, each inside end made straight in its owner's namespace (as `ip link ... netns`
/// takes it: a process id, or a named namespace's name, which `netns_of` gives) under its
/// staging name, all in one `ip -batch`. Made on the host and moved,
/// an end costs 17 ms here (the move waits for the network stack's RCU grace period, once per
/// device: 0.53 s for 32 wires, against 13 ms made in place). The outside ends come up on
/// the host with IPv6 off: the host must not speak on a wire. Each owner then names its
/// ends with [`name_inside`].
pub fn create(wires: &[Wire], netns_of: impl Fn(&Owner) -> Result<String>) -> Result<()> {
    if wires.is_empty() {
        return Ok(());
    }
    let what = "making the cluster's wires";
    let mut adds = Vec::new();
    for w in wires {
        adds.push(format!(
            "link add {} type veth peer name {} netns {}",
            w.outside,
            w.staging,
            netns_of(&w.owner)?
        ));
    }
    netns::ip_batch(Ns::Host, what, &adds)?;
    for w in wires {
        quiet(&w.outside)?;
    }
    let ups: Vec<String> = wires
        .iter()
        .map(|w| format!("link set dev {} up", w.outside))
        .collect();
    netns::ip_batch(Ns::Host, what, &ups)
}

/// Names `wires` (all of one owner, made there by [`create`]) inside its namespace `ns` and
/// brings them up, a switch's onto its bridge. `bridge_made`: the bridge exists already
/// (`up` made it for ports on docker networks), so it is joined rather than made.
pub fn name_inside(wires: &[&Wire], ns: Ns, bridge_made: bool, what: &str) -> Result<()> {
    if wires.is_empty() {
        return Ok(());
    }
    netns::ip_batch(ns, what, &inside_lines(wires, bridge_made))
}

/// Inside the owner: names, the switch's bridge (made unless `bridge_made`), and
/// everything up.
pub fn inside_lines(wires: &[&Wire], bridge_made: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let switch = wires.iter().any(|w| matches!(w.owner, Owner::Switch(_)));
    for w in wires {
        lines.push(format!("link set dev {} name {}", w.staging, w.inside));
        if switch {
            lines.push(format!("link set dev {} master {SWITCH_BRIDGE}", w.inside));
        }
        lines.push(format!("link set dev {} up", w.inside));
    }
    if switch {
        if !bridge_made {
            lines.insert(0, format!("link add {SWITCH_BRIDGE} type bridge"));
        }
        lines.push(format!("link set dev {SWITCH_BRIDGE} up"));
    }
    lines
}

/// IPv6 off on a wire's outside end (no router solicitations and the like): every frame on
/// an emulated wire is a node's.
pub fn quiet(ifname: &str) -> Result<()> {
    let knob = format!("/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6");
    if std::path::Path::new(&knob).exists() {
        std::fs::write(&knob, "1")
            .map_err(|e| Error::io("turning IPv6 off on a wire", &knob, e))?;
    }
    Ok(())
}

/// Removes the ends of `names` still on the host (deleting one end of a pair removes both,
/// so an end that vanished meanwhile is fine). Returns how many it removed.
pub fn remove_left(names: &[String]) -> Result<usize> {
    let mut removed = 0;
    for name in names {
        let here = |n: &String| -> Result<bool> {
            Ok(netns::links(Ns::Host)?.iter().any(|l| &l.ifname == n))
        };
        if !here(name)? {
            continue;
        }
        let line = format!("link del dev {name}");
        match netns::ip_batch(Ns::Host, "removing a wire left on the host", &[line]) {
            Ok(()) => removed += 1,
            Err(e) if here(name)? => return Err(e),
            Err(_) => {}
        }
    }
    Ok(removed)
}

/// The host's links whose names `keep` accepts.
pub fn find(keep: impl Fn(&str) -> bool) -> Result<Vec<String>> {
    Ok(netns::links(Ns::Host)?
        .into_iter()
        .map(|l| l.ifname)
        .filter(|n| keep(n))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::wiring::{Emulation, tests::mesh};
    use super::*;

    #[test]
    fn every_port_of_an_emulated_segment_gets_a_wire_numbered_in_wiring_order() {
        let c = ClusterName::parse("mesh").unwrap();
        let w = mesh(true);
        let wires = plan(&c, &w);
        let ports: usize = w
            .nodes
            .iter()
            .flat_map(|n| &n.ports)
            .filter(|p| w.carries_frames(p.segment))
            .count()
            + w.switches
                .iter()
                .flat_map(|s| &s.segments)
                .filter(|id| w.carries_frames(**id))
                .count();
        assert_eq!(wires.len(), ports);
        assert!(!wires.is_empty());
        for (k, wire) in wires.iter().enumerate() {
            assert_eq!(wire.outside, c.wire_end(k));
            assert_eq!(wire.staging, c.wire_staging(k));
        }
        // Nodes first, in order; then switches.
        let first_switch = wires
            .iter()
            .position(|w| matches!(w.owner, Owner::Switch(_)))
            .unwrap_or(wires.len());
        assert!(
            wires[first_switch..]
                .iter()
                .all(|w| matches!(w.owner, Owner::Switch(_)))
        );
        assert_eq!(host_names(&wires).len(), 2 * wires.len());
    }

    #[test]
    fn segments_shaped_by_token_buckets_get_no_wire_of_the_tools() {
        let c = ClusterName::parse("mesh").unwrap();
        let mut w = mesh(true);
        for s in &mut w.segments {
            s.emulation = Emulation::Rate;
        }
        assert!(plan(&c, &w).is_empty());
    }

    #[test]
    fn a_switchs_wires_join_its_bridge_and_a_nodes_do_not() {
        let wire = |owner: Owner, k: usize| Wire {
            owner,
            inside: format!("port{k}"),
            segment: mesh(true).segment_ids().next().unwrap(),
            outside: format!("ocabcdew{k}"),
            staging: format!("ocabcdex{k}"),
        };
        let sw = [
            wire(Owner::Switch("switch-core".into()), 0),
            wire(Owner::Switch("switch-core".into()), 1),
        ];
        let lines = inside_lines(&sw.iter().collect::<Vec<_>>(), false);
        assert_eq!(lines.first().unwrap(), "link add br0 type bridge");
        assert!(lines.contains(&"link set dev ocabcdex1 name port1".to_string()));
        assert!(lines.contains(&"link set dev port1 master br0".to_string()));
        assert_eq!(lines.last().unwrap(), "link set dev br0 up");
        let joined = inside_lines(&sw.iter().collect::<Vec<_>>(), true);
        assert!(
            !joined.iter().any(|l| l.starts_with("link add")),
            "{joined:?}"
        );
        assert!(joined.contains(&"link set dev port0 master br0".to_string()));
        let node = [wire(Owner::Node("n01".into()), 0)];
        let lines = inside_lines(&node.iter().collect::<Vec<_>>(), false);
        assert!(lines.iter().all(|l| !l.contains("br0")), "{lines:?}");
        assert_eq!(
            lines,
            ["link set dev ocabcdex0 name port0", "link set dev port0 up"]
        );
    }
}
