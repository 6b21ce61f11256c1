//! Renders the cluster's compose file: one service per node and per switch, one management
//! network, one docker network per segment.
//!
//! The file is meant to be read. It carries the containers and wires; the rates, the shared
//! medium and the interface names are applied by orchestrate after the containers start (on
//! the host, outside the nodes' namespaces), so `docker compose up` by hand gives the right
//! wires but unshaped.

use std::fmt::Write;

use super::names::{ClusterName, LABEL_CLUSTER, LABEL_NAME, LABEL_ROLE};
use super::wiring::{Medium, Node, SegmentId, Switch, Wiring, switch_service};

/// The compose key of a segment's network.
pub fn segment_network_key(segment: &str) -> String {
    format!("seg-{segment}")
}

pub const MGMT_NETWORK_KEY: &str = "mgmt";

/// Everything the compose file needs besides the wiring.
pub struct ComposeInput<'a> {
    pub cluster: &'a ClusterName,
    pub wiring: &'a Wiring,
    pub image: &'a str,
    pub source: &'a str,
}

/// A YAML scalar: JSON strings are valid YAML and need no further thought about quoting.
fn q(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

pub fn render(input: &ComposeInput<'_>) -> String {
    let c = input.cluster;
    let w = input.wiring;
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# Virtual cluster {:?} for topology {:?} ({}).\n\
         # Written by `orchestrate cluster up`; `orchestrate cluster down` removes it all.\n\
         #\n\
         # By hand: docker-compose -p {} -f compose.yaml ps   (or `docker compose ...`)\n\
         # Rates, shared media and interface names are applied by orchestrate on the host\n\
         # after the containers start; an `up` by hand gives unshaped wires.\n",
        c.as_str(),
        w.topology,
        input.source,
        c.project(),
    );
    y.push_str("services:\n");
    for node in &w.nodes {
        render_node(&mut y, input, node);
    }
    for sw in &w.switches {
        render_switch(&mut y, input, sw);
    }
    y.push_str("\nnetworks:\n");
    let _ = writeln!(y, "  {}:", q(MGMT_NETWORK_KEY));
    let _ = writeln!(y, "    # SSH from the host; no route out of the machine.");
    let _ = writeln!(y, "    name: {}", q(&c.network_name(MGMT_NETWORK_KEY)));
    y.push_str("    internal: true\n");
    labels(&mut y, c, "mgmt", MGMT_NETWORK_KEY, 4);
    for id in w.segment_ids() {
        render_segment_network(&mut y, input, id);
    }
    y
}

/// A node: sshd with its pinned host key and the cluster's login key, on the management
/// network and on each of its segments.
fn render_node(y: &mut String, input: &ComposeInput<'_>, node: &Node) {
    let n = &node.name;
    let _ = writeln!(y, "  {}:", q(n));
    common_service(
        y,
        input,
        &Service {
            service: n,
            role: "node",
            name: n,
            forwarding: node.forwarding,
        },
    );
    y.push_str("    volumes:\n");
    let _ = writeln!(
        y,
        "      - {}\n      - {}\n      - {}",
        q(&format!(
            "./nodes/{n}/ssh_host_ed25519_key:/etc/ssh/ssh_host_ed25519_key:ro"
        )),
        q(&format!(
            "./nodes/{n}/ssh_host_ed25519_key.pub:/etc/ssh/ssh_host_ed25519_key.pub:ro"
        )),
        q("./authorized_keys:/root/.ssh/authorized_keys:ro"),
    );
    y.push_str("    networks:\n");
    let _ = writeln!(y, "      {}: {{}}  # renamed to mgmt0", q(MGMT_NETWORK_KEY));
    for p in &node.ports {
        let seg = &input.wiring.segment(p.segment).name;
        let _ = writeln!(
            y,
            "      {}: {{}}  # becomes {} (no address)",
            q(&segment_network_key(seg)),
            p.interface
        );
    }
    y.push_str("    command: [\"/usr/sbin/sshd\", \"-D\", \"-e\"]\n");
}

/// A switch: a container with one port on each segment it joins.
fn render_switch(y: &mut String, input: &ComposeInput<'_>, sw: &Switch) {
    let service = switch_service(&sw.name);
    let _ = writeln!(y, "  {}:", q(&service));
    let _ = writeln!(
        y,
        "    # A switch: orchestrate bridges its ports (port0, port1, ...) inside it."
    );
    common_service(
        y,
        input,
        &Service {
            service: &service,
            role: "switch",
            name: &sw.name,
            forwarding: false,
        },
    );
    y.push_str("    networks:\n");
    for (i, id) in sw.segments.iter().enumerate() {
        let _ = writeln!(
            y,
            "      {}: {{}}  # port{i}",
            q(&segment_network_key(&input.wiring.segment(*id).name))
        );
    }
    y.push_str("    command: [\"sleep\", \"infinity\"]\n");
}

/// A segment's docker network: a plain bridge the host neither addresses nor NATs.
fn render_segment_network(y: &mut String, input: &ComposeInput<'_>, id: SegmentId) {
    let (c, w) = (input.cluster, input.wiring);
    let s = w.segment(id);
    let key = segment_network_key(&s.name);
    let _ = writeln!(y, "  {}:", q(&key));
    let _ = writeln!(
        y,
        "    # {} segment at {} bit/s ({} members).",
        match s.medium {
            Medium::Shared => "Shared",
            Medium::Switched => "Switched",
        },
        s.rate_bps,
        w.members(id).len()
    );
    let _ = writeln!(y, "    name: {}", q(&c.network_name(&key)));
    y.push_str("    driver: bridge\n    driver_opts:\n");
    // No host address on the bridge (the host takes no part in experiments) and no NAT.
    // The network is not `internal`: with br_netfilter loaded, docker's internal-network
    // rules would drop bridged frames whose addresses are outside docker's own subnet,
    // and the controller numbers the experiment networks itself.
    for (k, v) in [
        ("com.docker.network.bridge.inhibit_ipv4", "true"),
        ("com.docker.network.bridge.enable_ip_masquerade", "false"),
        ("com.docker.network.bridge.enable_icc", "true"),
        ("com.docker.network.driver.mtu", "1500"),
    ] {
        let _ = writeln!(y, "      {k}: {}", q(v));
    }
    labels(y, c, "segment", &s.name, 4);
}

/// What sets one service's common part apart: its compose name, and its role and name in
/// the labels.
struct Service<'a> {
    service: &'a str,
    role: &'a str,
    name: &'a str,
    /// IP forwarding on (a node the topology routes through).
    forwarding: bool,
}

fn common_service(y: &mut String, input: &ComposeInput<'_>, s: &Service<'_>) {
    let c = input.cluster;
    let _ = writeln!(y, "    image: {}", q(input.image));
    let _ = writeln!(y, "    container_name: {}", q(&c.container_name(s.service)));
    let _ = writeln!(y, "    hostname: {}", q(s.service));
    // docker's init reaps what SSH sessions and experiments leave behind.
    y.push_str("    init: true\n");
    y.push_str("    cap_add: [\"NET_ADMIN\", \"NET_RAW\"]\n");
    y.push_str("    devices: [\"/dev/net/tun:/dev/net/tun\"]\n");
    y.push_str("    sysctls:\n");
    // /proc/sys is read-only in a container, so forwarding is set here, on exactly the nodes
    // the topology's routes go through; IPv6 is off so its background chatter does not cross
    // the measured wires.
    for (k, v) in [
        ("net.ipv4.ip_forward", if s.forwarding { "1" } else { "0" }),
        ("net.ipv6.conf.all.disable_ipv6", "1"),
        ("net.ipv6.conf.default.disable_ipv6", "1"),
    ] {
        let _ = writeln!(y, "      {k}: {}", q(v));
    }
    labels(y, c, s.role, s.name, 4);
}

fn labels(y: &mut String, c: &ClusterName, role: &str, name: &str, indent: usize) {
    let pad = " ".repeat(indent);
    let _ = writeln!(y, "{pad}labels:");
    for (k, v) in [
        (LABEL_CLUSTER, c.as_str()),
        (LABEL_ROLE, role),
        (LABEL_NAME, name),
    ] {
        let _ = writeln!(y, "{pad}  {k}: {}", q(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::wiring::tests::mesh;

    fn rendered() -> String {
        let c = ClusterName::parse("sw").unwrap();
        let w = mesh(true);
        render(&ComposeInput {
            cluster: &c,
            wiring: &w,
            image: "orchestrate-node:abc",
            source: "topologies/switched-mesh-4x4.toml",
        })
    }

    #[test]
    fn every_node_and_switch_is_a_labelled_service() {
        let y = rendered();
        assert_eq!(y.matches("org.orchestrate.role: \"node\"").count(), 16);
        assert_eq!(y.matches("org.orchestrate.role: \"switch\"").count(), 2);
        assert_eq!(y.matches("org.orchestrate.role: \"segment\"").count(), 8);
        assert!(y.contains("container_name: \"orchestrate-sw-n07\""));
        assert!(y.contains("name: \"orchestrate-sw-seg-row2\""));
        assert!(y.contains("\"seg-col3\": {}  # becomes eth2 (no address)"));
        assert!(!y.contains("StrictHostKeyChecking"));
    }

    #[test]
    fn segment_networks_give_the_host_no_address_and_no_nat() {
        let y = rendered();
        assert_eq!(
            y.matches("com.docker.network.bridge.inhibit_ipv4: \"true\"")
                .count(),
            8
        );
        assert_eq!(y.matches("enable_ip_masquerade: \"false\"").count(), 8);
        assert_eq!(y.matches("internal: true").count(), 1);
    }
}
