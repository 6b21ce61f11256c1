//! Renders the cluster's compose file from its [`Project`]: one service per node and per
//! switch, one management network, a docker network per segment shaped by token buckets, and
//! the tool's own wires described beside them (`x-orchestrate-wires`, which compose ignores).
//!
//! The file is meant to be read: the whole cluster in one file. Compose runs the containers
//! and networks it lists; the wires, rates, shared media and interface names are made by
//! orchestrate after the containers start (on the host, outside the nodes' namespaces), so
//! `docker compose up` by hand gives the containers without the medium emulator's wires.

use std::fmt::Write;

use super::project::{CAPABILITIES, DEVICES, Labels, Network, Project, Service};
use crate::vcluster::wires::veth::Owner;

/// A YAML scalar: JSON strings are valid YAML and need no further thought about quoting.
fn q(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

/// A YAML flow sequence of strings.
fn seq(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| q(s)).collect();
    format!("[{}]", quoted.join(", "))
}

pub fn render(p: &Project) -> String {
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# Virtual cluster {:?} for topology {:?} ({}).\n\
         # Written by `orchestrate cluster up`; `orchestrate cluster down` removes it all.\n\
         #\n\
         # By hand: docker-compose -p {} -f compose.yaml ps   (or `docker compose ...`)\n\
         # Wires, rates, shared media and interface names are made by orchestrate on the\n\
         # host after the containers start (x-orchestrate-wires below); an `up` by hand\n\
         # gives the containers without them.\n",
        p.cluster.as_str(),
        p.topology,
        p.source,
        p.cluster.project(),
    );
    y.push_str("services:\n");
    for s in &p.services {
        render_service(&mut y, p, s);
    }
    y.push_str("\nnetworks:\n");
    for n in &p.networks {
        render_network(&mut y, n);
    }
    render_wires(&mut y, p);
    y
}

/// The tool's own wires: one veth pair per port of a segment the medium emulator carries,
/// the inside end named as the topology says, the outside end on the host for the emulator.
fn render_wires(y: &mut String, p: &Project) {
    if p.wires.is_empty() {
        return;
    }
    y.push_str(
        "\n# Veth pairs orchestrate makes itself, one per port of a segment the medium\n\
         # emulator carries: `inside` in the service's namespace, `outside` on the host, on no\n\
         # bridge, read and written by the emulator alone. They go with their container.\n\
         x-orchestrate-wires:\n",
    );
    for w in &p.wires {
        let (kind, owner) = match &w.owner {
            Owner::Node(n) => ("node", n),
            Owner::Switch(s) => ("switch", s),
        };
        let _ = writeln!(
            y,
            "  - {{{kind}: {}, inside: {}, segment: {}, outside: {}}}",
            q(owner),
            q(&w.inside),
            q(&p.segment_names[w.segment.index()]),
            q(&w.outside)
        );
    }
}

fn render_service(y: &mut String, p: &Project, s: &Service) {
    let _ = writeln!(y, "  {}:", q(&s.key));
    if let Some(comment) = s.comment {
        let _ = writeln!(y, "    # {comment}");
    }
    let _ = writeln!(y, "    image: {}", q(&p.image));
    let _ = writeln!(y, "    container_name: {}", q(&s.container_name));
    let _ = writeln!(y, "    hostname: {}", q(&s.key));
    // docker's init reaps what SSH sessions and experiments leave behind.
    y.push_str("    init: true\n");
    let _ = writeln!(y, "    cap_add: {}", seq(&CAPABILITIES));
    let _ = writeln!(y, "    devices: {}", seq(&DEVICES));
    y.push_str("    sysctls:\n");
    for (k, v) in s.sysctls() {
        let _ = writeln!(y, "      {k}: {}", q(v));
    }
    labels(y, &s.labels);
    if !s.mounts.is_empty() {
        y.push_str("    volumes:\n");
        for m in &s.mounts {
            let _ = writeln!(
                y,
                "      - {}",
                q(&format!("./{}:{}:ro", m.source.display(), m.target))
            );
        }
    }
    if s.networks.is_empty() {
        // Its every port is a wire of the tool's (x-orchestrate-wires).
        y.push_str("    network_mode: \"none\"\n");
    } else {
        y.push_str("    networks:\n");
        for (key, becomes) in &s.networks {
            let _ = writeln!(y, "      {}: {{}}  # {becomes}", q(key));
        }
    }
    let _ = writeln!(y, "    command: {}", seq(s.command));
}

fn render_network(y: &mut String, n: &Network) {
    let _ = writeln!(y, "  {}:", q(&n.key));
    let _ = writeln!(y, "    # {}", n.comment);
    let _ = writeln!(y, "    name: {}", q(&n.name));
    if n.internal {
        y.push_str("    internal: true\n");
    } else {
        y.push_str("    driver: bridge\n");
    }
    if let Some(subnet) = n.subnet {
        // The engine's own numbering, which the nodes never use (see Project).
        let _ = writeln!(
            y,
            "    ipam:\n      config:\n        - subnet: {}",
            q(&subnet.to_string())
        );
    }
    if !n.driver_opts.is_empty() {
        y.push_str("    driver_opts:\n");
        for (k, v) in n.driver_opts {
            let _ = writeln!(y, "      {k}: {}", q(v));
        }
    }
    labels(y, &n.labels);
}

fn labels(y: &mut String, labels: &Labels) {
    y.push_str("    labels:\n");
    for (k, v) in labels {
        let _ = writeln!(y, "      {k}: {}", q(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::names::ClusterName;
    use crate::vcluster::wires::mesh;

    /// The switched mesh, every segment shaped by token buckets (a docker network each).
    fn rendered() -> String {
        let c = ClusterName::parse("sw").unwrap();
        let mut w = mesh(true);
        for s in &mut w.segments {
            s.emulation = crate::vcluster::wires::Emulation::Rate;
        }
        render(&Project::new(
            &c,
            &w,
            "orchestrate-node:abc",
            "topologies/switched-mesh-4x4.toml",
        ))
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
    fn the_medium_emulators_wires_are_described_beside_the_services() {
        let c = ClusterName::parse("sw").unwrap();
        let w = mesh(true);
        let y = render(&Project::new(&c, &w, "orchestrate-node:abc", "t.toml"));
        assert!(!y.contains("org.orchestrate.role: \"segment\""), "{y}");
        let wires = y.split("x-orchestrate-wires:\n").nth(1).expect("the wires");
        let ports = w.nodes.iter().map(|n| n.ports.len()).sum::<usize>()
            + w.switches.iter().map(|s| s.segments.len()).sum::<usize>();
        assert_eq!(
            wires.lines().filter(|l| l.starts_with("  - {")).count(),
            ports
        );
        let n07 = wires
            .lines()
            .find(|l| l.contains("node: \"n07\"") && l.contains("inside: \"eth2\""))
            .expect("n07's eth2");
        assert!(
            n07.contains(&format!("outside: \"{}w", c.ifb_prefix())),
            "{n07}"
        );
        assert!(wires.contains("switch: \"switch-"), "{wires}");
        // A switch all of whose ports are wires joins no docker network.
        assert!(y.contains("network_mode: \"none\""));
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
