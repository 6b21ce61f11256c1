//! The twin's wires: the medium engine's configuration for a topology (the same segments,
//! stations and host costs the real-time emulator is given), every port's address and owner,
//! and which port a node sends a frame to its next hop from.

use std::collections::HashMap;

use orchestrate_medium::config::{
    DEFAULT_COLLISION_WINDOW_NS, DEFAULT_QUEUE_LIMIT, MediumConfig, NodeSpec, PortSpec, SegmentSpec,
};
use orchestrate_medium::frame::Frame;
use orchestrate_medium::learn::Mac;
use orchestrate_medium::time::WireClock;

use crate::spec::IfName;
use crate::spec::topology::BondMode;
use crate::topology::Topology;

/// A frame in the twin: its length and addresses, and which of the twin's packets it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TwinFrame {
    pub(super) len: u32,
    pub(super) src: Mac,
    pub(super) dst: Mac,
    /// The address of the node that sent the packet first: a node charges a frame from
    /// another source as forwarded, as the emulator does.
    pub(super) ipv4_src: [u8; 4],
    /// The port the frame is addressed to (a switch finds it by this).
    pub(super) to_port: usize,
    pub(super) packet: usize,
}

impl Frame for TwinFrame {
    fn wire_len(&self) -> u32 {
        self.len
    }
    fn dst(&self) -> Option<Mac> {
        Some(self.dst)
    }
    fn src(&self) -> Option<Mac> {
        Some(self.src)
    }
    fn ipv4_src(&self) -> Option<[u8; 4]> {
        Some(self.ipv4_src)
    }
}

/// Who is behind a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// A node's interface.
    Node(usize),
    /// A switch joining the segments of a network: it forwards a frame for a station on
    /// another of its segments once it has received the whole frame.
    Switch,
}

#[derive(Debug, Clone)]
struct Port {
    owner: Owner,
    segment: usize,
    mac: Mac,
}

/// What became of a frame a port received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Received {
    /// The node it was addressed to has it.
    AtNode(usize),
    /// A switch sends it on out of this port.
    Switched(usize),
    /// A copy for somebody else (a hub repeats every frame until stations are learnt).
    Ignored,
}

/// The topology as the twin's engine and packets see it.
pub(super) struct Network {
    pub(super) config: MediumConfig,
    ports: Vec<Port>,
    by_interface: HashMap<(usize, IfName), usize>,
    /// Per segment, its network's switch's port on it, if the network has a switch.
    switch_port: Vec<Option<usize>>,
    /// Per segment, the index of its network.
    network_of: Vec<usize>,
    ipv4: Vec<[u8; 4]>,
    /// Balance-rr's next slave, per (node, bond).
    next_slave: HashMap<(usize, IfName), usize>,
}

impl Network {
    pub(super) fn of(t: &Topology, seed: u64) -> Network {
        let mut ports = Vec::new();
        let mut specs = Vec::new();
        let mut by_interface = HashMap::new();
        let mut switch_port = vec![None; t.segments.len()];
        let network_of: Vec<usize> = t
            .segments
            .iter()
            .map(|s| {
                t.networks
                    .iter()
                    .position(|n| n.name == s.network)
                    .expect("every segment is on a network")
            })
            .collect();
        let mut add = |owner: Owner, segment: usize, ports: &mut Vec<Port>| {
            let i = ports.len();
            ports.push(Port {
                owner,
                segment,
                mac: [2, 0x7a, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8],
            });
            specs.push(PortSpec {
                ifname: format!("twin{i}"),
                segment,
                node: match owner {
                    Owner::Node(n) => Some(n),
                    Owner::Switch => None,
                },
            });
            i
        };
        for (s, seg) in t.segments.iter().enumerate() {
            for m in &seg.members {
                let n = t.node_index(&m.node).expect("members are nodes");
                let i = add(Owner::Node(n), s, &mut ports);
                by_interface.insert((n, m.interface.clone()), i);
            }
            let network = &t.networks[network_of[s]];
            if network.switch.is_some() && network.segments.len() > 1 {
                switch_port[s] = Some(add(Owner::Switch, s, &mut ports));
            }
        }
        let ipv4: Vec<[u8; 4]> = (0..t.nodes.len())
            .map(|i| [10, 254, (i >> 8) as u8, i as u8])
            .collect();
        let config = MediumConfig {
            segments: t
                .segments
                .iter()
                .map(|s| {
                    let rate_bps = s.rate.bits_per_s().max(1);
                    SegmentSpec {
                        name: s.name.to_string(),
                        medium: s.medium,
                        rate_bps,
                        collision_window_ns: DEFAULT_COLLISION_WINDOW_NS,
                        queue_limit: DEFAULT_QUEUE_LIMIT,
                        turnaround_ns: WireClock::new(rate_bps).turnaround(),
                    }
                })
                .collect(),
            ports: specs,
            nodes: t
                .nodes
                .iter()
                .zip(&ipv4)
                .map(|(n, ip)| NodeSpec {
                    name: n.name.to_string(),
                    costs: n.host.costs,
                    ipv4: vec![*ip],
                })
                .collect(),
            seed,
        };
        Network {
            config,
            ports,
            by_interface,
            switch_port,
            network_of,
            ipv4,
            next_slave: HashMap::new(),
        }
    }

    pub(super) fn ipv4(&self, node: usize) -> [u8; 4] {
        self.ipv4[node]
    }

    pub(super) fn mac(&self, port: usize) -> Mac {
        self.ports[port].mac
    }

    /// The port `from` sends out of towards `to` over `dev` (an interface, or a bond whose
    /// slave balance-rr takes in turn; the other modes keep to the first slave), and the port
    /// of `to` the frame is for. `None` when `to` is on none of that wire's networks.
    pub(super) fn route(
        &mut self,
        t: &Topology,
        from: usize,
        dev: &IfName,
        to: usize,
    ) -> Option<(usize, usize)> {
        let node = &t.nodes[from];
        let physical = match node.bonds.iter().find(|b| &b.name == dev) {
            Some(b) if b.mode == BondMode::BalanceRr && !b.slaves.is_empty() => {
                let next = self.next_slave.entry((from, dev.clone())).or_insert(0);
                let slave = b.slaves[*next % b.slaves.len()].clone();
                *next += 1;
                slave
            }
            Some(b) => b.slaves.first()?.clone(),
            None => dev.clone(),
        };
        let out = *self.by_interface.get(&(from, physical))?;
        let network = self.network_of[self.ports[out].segment];
        let dest = t.nodes[to].interfaces.iter().find_map(|i| {
            let p = *self.by_interface.get(&(to, i.name.clone()))?;
            (self.network_of[self.ports[p].segment] == network).then_some(p)
        })?;
        // On the same network through a switch, several of `to`'s interfaces could be: the one
        // on the sender's own segment needs no switch.
        let same_segment = t.nodes[to].interfaces.iter().find_map(|i| {
            let p = *self.by_interface.get(&(to, i.name.clone()))?;
            (self.ports[p].segment == self.ports[out].segment).then_some(p)
        });
        Some((out, same_segment.unwrap_or(dest)))
    }

    /// What became of `frame` at `port`.
    pub(super) fn received(&self, port: usize, frame: &TwinFrame) -> Received {
        let here = &self.ports[port];
        match here.owner {
            Owner::Node(n) if frame.dst == here.mac => Received::AtNode(n),
            Owner::Node(_) => Received::Ignored,
            Owner::Switch => {
                let target = self.ports[frame.to_port].segment;
                if target == here.segment {
                    return Received::Ignored;
                }
                match self.switch_port[target] {
                    Some(out) if self.network_of[target] == self.network_of[here.segment] => {
                        Received::Switched(out)
                    }
                    _ => Received::Ignored,
                }
            }
        }
    }
}
