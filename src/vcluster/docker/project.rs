//! What a cluster is made of in docker: one container per node and per switch, one management
//! network, and a network for each segment shaped by token buckets (`emulation = "rate"`).
//! The medium emulator's segments are no docker network: their wires are the tool's own veth
//! pairs ([`crate::vcluster::wires::veth`]), listed here so the compose file can describe
//! them. Described once, here: the compose file is rendered from it for people to read (and
//! run by hand), and `up` creates exactly it through the engine ([`super::create`]).

use std::net::Ipv4Addr;
use std::path::PathBuf;

use ipnet::Ipv4Net;

use crate::vcluster::names::{ClusterName, LABEL_CLUSTER, LABEL_NAME, LABEL_ROLE};
use crate::vcluster::wires::veth::{self, Wire};
use crate::vcluster::wires::{Medium, Node, SegmentId, Switch, Wiring, switch_service};

/// The compose key of a segment's network.
pub fn segment_network_key(segment: &str) -> String {
    format!("seg-{segment}")
}

pub const MGMT_NETWORK_KEY: &str = "mgmt";

/// Capabilities every container gets: experiment scripts change interfaces, routes and
/// qdiscs, and ping needs raw sockets.
pub const CAPABILITIES: [&str; 2] = ["NET_ADMIN", "NET_RAW"];
/// Devices every container gets (tun, for userspace bonds and tunnels).
pub const DEVICES: [&str; 1] = ["/dev/net/tun:/dev/net/tun"];

/// No host address on a segment's bridge (the host takes no part in experiments) and no NAT.
/// The network is not `internal`: with br_netfilter loaded, docker's internal-network rules
/// would drop bridged frames whose addresses are outside docker's own subnet, and the
/// controller numbers the experiment networks itself.
pub const SEGMENT_DRIVER_OPTS: [(&str, &str); 4] = [
    ("com.docker.network.bridge.inhibit_ipv4", "true"),
    ("com.docker.network.bridge.enable_ip_masquerade", "false"),
    ("com.docker.network.bridge.enable_icc", "true"),
    ("com.docker.network.driver.mtu", "1500"),
];

/// The labels that find a container or network again: cluster, role, name.
pub type Labels = [(&'static str, String); 3];

fn labels(c: &ClusterName, role: &str, name: &str) -> Labels {
    [
        (LABEL_CLUSTER, c.as_str().to_owned()),
        (LABEL_ROLE, role.to_owned()),
        (LABEL_NAME, name.to_owned()),
    ]
}

#[derive(Debug, Clone)]
pub struct Network {
    /// Its key in the compose file.
    pub key: String,
    /// The engine's name for it.
    pub name: String,
    pub comment: String,
    /// No route out of the machine (the management network).
    pub internal: bool,
    pub driver_opts: &'static [(&'static str, &'static str)],
    pub labels: Labels,
    /// The engine's addresses for it, when it must not come from the engine's default pools
    /// (segments: see [`Project::assign_segment_subnets`]).
    pub subnet: Option<Ipv4Net>,
    /// Containers on it: nodes' ports and switches' ports.
    pub stations: usize,
}

/// A file of the cluster's directory mounted read-only into a container.
#[derive(Debug, Clone)]
pub struct Mount {
    /// Relative to the cluster's directory.
    pub source: PathBuf,
    pub target: &'static str,
}

#[derive(Debug, Clone)]
pub struct Service {
    /// Its key in the compose file, and the container's hostname.
    pub key: String,
    pub comment: Option<&'static str>,
    pub container_name: String,
    /// IP forwarding on (a node the topology routes through).
    pub forwarding: bool,
    /// `net.ipv4.fib_multipath_hash_policy`, where the node routes with ECMP.
    pub multipath_hash_policy: Option<&'static str>,
    pub labels: Labels,
    pub mounts: Vec<Mount>,
    /// The networks' keys in the order the container joins them, each with what it becomes.
    /// None for a switch all of whose segments are the medium emulator's.
    pub networks: Vec<(String, String)>,
    pub command: &'static [&'static str],
}

impl Service {
    /// /proc/sys is read-only in a container, so forwarding is set here, on exactly the
    /// nodes the topology's routes go through, and so is ECMP's hash policy; IPv6 is off so
    /// its background chatter does not cross the measured wires.
    pub fn sysctls(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = vec![
            (
                "net.ipv4.ip_forward",
                if self.forwarding { "1" } else { "0" },
            ),
            ("net.ipv6.conf.all.disable_ipv6", "1"),
            ("net.ipv6.conf.default.disable_ipv6", "1"),
        ];
        if let Some(policy) = self.multipath_hash_policy {
            out.push(("net.ipv4.fib_multipath_hash_policy", policy));
        }
        out
    }
}

/// The whole cluster: services (nodes, then switches) and networks (management, then
/// segments).
#[derive(Debug, Clone)]
pub struct Project {
    pub cluster: ClusterName,
    pub topology: String,
    pub image: String,
    pub source: String,
    pub services: Vec<Service>,
    pub networks: Vec<Network>,
    /// The tool's own wires, made after the containers start.
    pub wires: Vec<Wire>,
    /// Every segment's name, by [`SegmentId`].
    pub segment_names: Vec<String>,
}

impl Project {
    pub fn new(cluster: &ClusterName, wiring: &Wiring, image: &str, source: &str) -> Project {
        let mut services: Vec<Service> = wiring
            .nodes
            .iter()
            .map(|n| node(cluster, wiring, n))
            .collect();
        services.extend(wiring.switches.iter().map(|s| switch(cluster, wiring, s)));
        let mut networks = vec![Network {
            key: MGMT_NETWORK_KEY.into(),
            name: cluster.network_name(MGMT_NETWORK_KEY),
            comment: "SSH from the host; no route out of the machine.".into(),
            internal: true,
            driver_opts: &[],
            labels: labels(cluster, "mgmt", MGMT_NETWORK_KEY),
            subnet: None,
            stations: wiring.nodes.len(),
        }];
        networks.extend(
            wiring
                .segment_ids()
                .filter(|id| !wiring.carries_frames(*id))
                .map(|id| segment_network(cluster, wiring, id)),
        );
        Project {
            cluster: cluster.clone(),
            topology: wiring.topology.clone(),
            image: image.to_owned(),
            source: source.to_owned(),
            services,
            networks,
            wires: veth::plan(cluster, wiring),
            segment_names: wiring.segments.iter().map(|s| s.name.clone()).collect(),
        }
    }

    pub fn network(&self, key: &str) -> Option<&Network> {
        self.networks.iter().find(|n| n.key == key)
    }

    /// Gives every segment network a subnet of its own from [`SEGMENT_POOL`], clear of
    /// `used` (the engine's networks' subnets) and of each other.
    ///
    /// The engine insists on numbering every network, but the nodes never use its addresses
    /// on a segment (they are flushed and the controller numbers the interfaces): taken from
    /// the engine's default pools, which hold about 30 networks here, they would stop a
    /// 16x16 mesh (32 segments) from coming up at all. The bridges carry no host address, so
    /// these subnets are never routed on the host.
    pub fn assign_segment_subnets(&mut self, used: &[Ipv4Net]) -> Result<(), String> {
        let mut taken: Vec<Ipv4Net> = used.to_vec();
        for n in self.networks.iter_mut().filter(|n| !n.internal) {
            // The engine's gateway, network and broadcast addresses, and every station.
            let hosts = n.stations + 3;
            let prefix = 32 - hosts.next_power_of_two().trailing_zeros().max(2) as u8;
            let subnet = SEGMENT_POOL
                .subnets(prefix)
                .map_err(|e| e.to_string())?
                .find(|s| !taken.iter().any(|t| t.contains(s) || s.contains(t)))
                .ok_or_else(|| {
                    format!(
                        "no /{prefix} is left in {SEGMENT_POOL} for network {} ({} stations): \
                         the engine's other networks hold it",
                        n.name, n.stations
                    )
                })?;
            taken.push(subnet);
            n.subnet = Some(subnet);
        }
        Ok(())
    }
}

/// Where segment networks' subnets come from: RFC 2544's benchmarking block, which no
/// network outside a test bed uses.
pub const SEGMENT_POOL: Ipv4Net = Ipv4Net::new_assert(Ipv4Addr::new(198, 18, 0, 0), 15);

/// A node: sshd with its pinned host key and the cluster's login key, on the management
/// network and on each of its segments.
fn node(c: &ClusterName, wiring: &Wiring, node: &Node) -> Service {
    let n = &node.name;
    let mut networks = vec![(MGMT_NETWORK_KEY.to_owned(), "renamed to mgmt0".to_owned())];
    networks.extend(
        node.ports
            .iter()
            .filter(|p| !wiring.carries_frames(p.segment))
            .map(|p| {
                (
                    segment_network_key(&wiring.segment(p.segment).name),
                    format!("becomes {} (no address)", p.interface),
                )
            }),
    );
    Service {
        key: n.clone(),
        comment: None,
        container_name: c.container_name(n),
        forwarding: node.forwarding,
        multipath_hash_policy: node.multipath_hash.map(|h| h.policy()),
        labels: labels(c, "node", n),
        mounts: vec![
            Mount {
                source: format!("nodes/{n}/ssh_host_ed25519_key").into(),
                target: "/etc/ssh/ssh_host_ed25519_key",
            },
            Mount {
                source: format!("nodes/{n}/ssh_host_ed25519_key.pub").into(),
                target: "/etc/ssh/ssh_host_ed25519_key.pub",
            },
            Mount {
                source: "authorized_keys".into(),
                target: "/root/.ssh/authorized_keys",
            },
        ],
        networks,
        command: &["/usr/sbin/sshd", "-D", "-e"],
    }
}

/// A switch: a container with one port on each segment it joins.
fn switch(c: &ClusterName, wiring: &Wiring, sw: &Switch) -> Service {
    let key = switch_service(&sw.name);
    Service {
        container_name: c.container_name(&key),
        comment: Some("A switch: orchestrate bridges its ports (port0, port1, ...) inside it."),
        forwarding: false,
        multipath_hash_policy: None,
        labels: labels(c, "switch", &sw.name),
        mounts: Vec::new(),
        networks: sw
            .segments
            .iter()
            .enumerate()
            .filter(|(_, id)| !wiring.carries_frames(**id))
            .map(|(i, id)| {
                (
                    segment_network_key(&wiring.segment(*id).name),
                    format!("port{i}"),
                )
            })
            .collect(),
        command: &["sleep", "infinity"],
        key,
    }
}

/// A segment's docker network: a plain bridge the host neither addresses nor NATs.
fn segment_network(c: &ClusterName, w: &Wiring, id: SegmentId) -> Network {
    let s = w.segment(id);
    let key = segment_network_key(&s.name);
    Network {
        name: c.network_name(&key),
        comment: format!(
            "{} segment at {} bit/s ({} members).",
            match s.medium {
                Medium::Shared => "Shared",
                Medium::Switched => "Switched",
            },
            s.rate_bps,
            w.members(id).len()
        ),
        internal: false,
        driver_opts: &SEGMENT_DRIVER_OPTS,
        labels: labels(c, "segment", &s.name),
        subnet: None,
        stations: w.members(id).len()
            + w.switches
                .iter()
                .filter(|sw| sw.segments.contains(&id))
                .count(),
        key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::wires::mesh;

    /// The switched mesh with every segment shaped by token buckets: a docker network each.
    fn project() -> Project {
        let c = ClusterName::parse("sw").unwrap();
        let mut w = mesh(true);
        for s in &mut w.segments {
            s.emulation = crate::vcluster::wires::Emulation::Rate;
        }
        Project::new(&c, &w, "orchestrate-node:abc", "t.toml")
    }

    #[test]
    fn the_medium_emulators_segments_are_wires_of_the_tools_not_docker_networks() {
        let c = ClusterName::parse("sw").unwrap();
        let w = mesh(true);
        let p = Project::new(&c, &w, "orchestrate-node:abc", "t.toml");
        assert_eq!(p.networks.len(), 1, "only the management network");
        assert!(p.networks[0].internal);
        for s in &p.services {
            assert!(
                s.networks.iter().all(|(key, _)| key == MGMT_NETWORK_KEY),
                "{} joins {:?}",
                s.key,
                s.networks
            );
        }
        let ports = w.nodes.iter().map(|n| n.ports.len()).sum::<usize>()
            + w.switches.iter().map(|s| s.segments.len()).sum::<usize>();
        assert_eq!(p.wires.len(), ports);
    }

    #[test]
    fn segment_subnets_are_disjoint_from_the_engines_and_each_other_and_hold_their_stations() {
        let mut p = project();
        let used: Vec<Ipv4Net> = vec!["198.18.0.0/24".parse().unwrap()];
        p.assign_segment_subnets(&used).unwrap();
        let segments: Vec<&Network> = p.networks.iter().filter(|n| !n.internal).collect();
        assert_eq!(segments.len(), 8);
        let mut seen: Vec<Ipv4Net> = used.clone();
        for n in &segments {
            let s = n.subnet.expect("a subnet");
            assert!(SEGMENT_POOL.contains(&s), "{s} outside the pool");
            assert!(
                !seen.iter().any(|t| t.contains(&s) || s.contains(t)),
                "{s} overlaps {seen:?}"
            );
            assert!(
                s.hosts().count() > n.stations, // and the engine's gateway
                "{s} too small for {n:?}"
            );
            seen.push(s);
        }
        // The management network keeps the engine's own pool.
        assert!(p.networks.iter().any(|n| n.internal && n.subnet.is_none()));
    }

    #[test]
    fn a_full_pool_is_an_error_that_names_the_network() {
        let mut p = project();
        let e = p.assign_segment_subnets(&[SEGMENT_POOL]).unwrap_err();
        assert!(
            e.contains("orchestrate-sw-seg-") && e.contains("198.18.0.0/15"),
            "{e}"
        );
    }
}
