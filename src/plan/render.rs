//! The plan as a person reads it: configurations, placements with their paths, points in run
//! order with estimates, and every node's scripts.

use std::fmt::Write as _;
use std::time::Duration;

use crate::spec::NodeName;
use crate::spec::topology::Medium;
use crate::topology::Topology;
use crate::topology::forwarding::Forwarding;

use super::placement::PlannedPair;
use super::sweep::{Configuration, PlacementEntry, Plan};

/// (hops, nodes reached in that many hops), by hops.
type ReachProfile = Vec<(usize, usize)>;

/// "7m 40s", to the second.
pub fn human(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs_f64().round() as u64)).to_string()
}

pub fn text(plan: &Plan, node: Option<&NodeName>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Plan for {} (seed {}): {} configuration(s), {} point(s), estimated {}",
        plan.experiment,
        plan.seed,
        plan.configurations.len(),
        plan.points.len(),
        human(plan.estimate)
    );
    if let Some(n) = node {
        // One node's view: what it is in each configuration and its scripts; the point table
        // and the topology's summary are every node's, printed without --node.
        for c in plan.measured_configurations() {
            node_view(&mut s, c, n);
        }
        let _ = writeln!(
            s,
            "\n{} point(s) in all; `orchestrate plan` without --node lists them.",
            plan.points.len()
        );
    } else {
        for c in &plan.configurations {
            match c.repeats {
                Some(first) => drift_check(&mut s, c, first, plan),
                None => configuration(&mut s, c),
            }
        }
        let _ = writeln!(s, "\nPoints, in run order:");
        let _ = writeln!(
            s,
            "{:>5}  {:<26} {:<12} {:<9} {:<12} {:>5} {:>8} {:>4} {:>8}",
            "#", "topology", "bonding", "pattern", "placement", "pairs", "size", "rep", "estimate"
        );
        for p in &plan.points {
            let _ = writeln!(
                s,
                "{:>5}  {:<26} {:<12} {:<9} {:<12} {:>5} {:>8} {:>4} {:>7.1}s",
                p.id,
                p.topology.as_str(),
                p.bonding,
                p.pattern.as_str(),
                p.placement.as_str(),
                p.pairs,
                crate::spec::ByteSize(p.size_bytes).to_string(),
                p.rep,
                p.estimate.as_secs_f64()
            );
        }
    }
    // The drift check applies its configuration's scripts again: shown once.
    for c in plan.measured_configurations() {
        for sc in c
            .scripts
            .iter()
            .filter(|sc| node.is_none_or(|n| *n == sc.node))
        {
            let _ = writeln!(
                s,
                "\n=== {} apply, configuration {} ({}, bonding {}) ===\n{}",
                sc.node,
                c.id,
                c.topology.name,
                c.bonding_label(),
                sc.apply.trim_end()
            );
            let _ = writeln!(
                s,
                "\n=== {} teardown, configuration {} ===\n{}",
                sc.node,
                c.id,
                sc.teardown.trim_end()
            );
        }
    }
    s
}

/// What `node` is in configuration `c`: its interfaces with their segments and addresses, its
/// bonds, whether it forwards, its routes' count and its host costs.
fn node_view(s: &mut String, c: &Configuration, node: &NodeName) {
    let t = &c.topology;
    heading(s, c);
    let Some(n) = t.node(node) else {
        let _ = writeln!(s, "  {node} is not in this topology");
        return;
    };
    for i in &n.interfaces {
        let on = match &i.attachment {
            crate::topology::Attachment::Address(a) => a.to_string(),
            crate::topology::Attachment::BondSlave(b) => format!("slave of {b}"),
        };
        let _ = writeln!(s, "  {}: segment {}, {on}", i.name, i.segment);
    }
    for b in &n.bonds {
        let _ = writeln!(
            s,
            "  {}: bond ({}) of {}, {}",
            b.name,
            b.mode,
            b.slaves
                .iter()
                .map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            b.address
        );
    }
    let _ = writeln!(
        s,
        "  {} route(s); {}; host: {}",
        n.routes.len(),
        if n.forwarding {
            "forwards for others"
        } else {
            "does not forward"
        },
        n.host.describe()
    );
}

/// One configuration: what it is, its hosts, wires and reach, then its placements and notes.
fn configuration(s: &mut String, c: &Configuration) {
    summary(s, c);
    let t = &c.topology;
    hosts(s, t);
    emulations(s, t);
    reach(s, t);
    for e in &c.placements {
        placement_entry(s, e);
    }
    for n in &c.notes {
        let _ = writeln!(s, "  note: {n}");
    }
}

/// The drift check: which configuration it applies again, and which of its cells it measures.
fn drift_check(s: &mut String, c: &Configuration, first: usize, plan: &Plan) {
    let points: Vec<_> = plan
        .points
        .iter()
        .filter(|p| p.configuration == c.id)
        .collect();
    let _ = writeln!(
        s,
        "\nConfiguration {}: configuration {first} ({}, bonding {}) again, the drift check",
        c.id,
        c.topology.name,
        c.bonding_label()
    );
    if let Some(p) = points.first() {
        let _ = writeln!(
            s,
            "  its reference cell ({} {}, {} pair(s), {}) measured {} time(s) more after every \
             other configuration: the report compares the two to show how far the machine \
             drifted between the first configuration and the last",
            p.pattern.as_str(),
            p.placement.as_str(),
            p.pairs,
            crate::spec::ByteSize(p.size_bytes),
            points.len()
        );
    }
}

/// "Configuration N: topology (bonding mode)", the line each configuration's part opens with.
fn heading(s: &mut String, c: &Configuration) {
    let _ = writeln!(
        s,
        "\nConfiguration {}: {} (bonding {})",
        c.id,
        c.topology.name,
        c.bonding_label()
    );
}

/// The configuration's heading, the topology's description and its counts.
fn summary(s: &mut String, c: &Configuration) {
    let t = &c.topology;
    heading(s, c);
    if let Some(d) = &t.description {
        let _ = writeln!(s, "  {}", crate::spec::escape_control(d));
    }
    let shared = t
        .segments
        .iter()
        .filter(|x| x.medium == Medium::Shared)
        .count();
    let _ = writeln!(
        s,
        "  {} nodes; {} segments ({} shared, {} switched); {} networks; {} subnets; {} forwarding nodes",
        t.nodes.len(),
        t.segments.len(),
        shared,
        t.segments.len() - shared,
        t.networks.len(),
        t.subnets.len(),
        t.forwarding_nodes().len()
    );
    if let Some(e) = t.nodes.iter().find_map(|n| n.ecmp.as_ref()) {
        let split = t
            .nodes
            .iter()
            .flat_map(|n| n.ecmp.iter().flat_map(|e| &e.routes))
            .filter(|r| r.nexthops.len() > 1)
            .count();
        let _ = writeln!(
            s,
            "  routing: ECMP to an address of every node's own on lo ({} hash: \
             net.ipv4.fib_multipath_hash_policy={}); {split} of its routes split over \
             equal-cost next hops",
            e.hash.as_str().to_uppercase(),
            e.hash.policy(),
        );
    }
}

/// Host profiles, grouped: most topologies give every node the same.
fn hosts(s: &mut String, t: &Topology) {
    let hosts = grouped(t.nodes.iter().map(|n| (n.host.describe(), n.name.as_str())));
    for (d, nodes) in &hosts {
        let who = every_or_list(nodes, t.nodes.len(), "every node");
        let _ = writeln!(s, "  host: {who}: {d}");
    }
}

/// Emulation, grouped: most topologies give every segment the same.
fn emulations(s: &mut String, t: &Topology) {
    let emulations = grouped(
        t.segments
            .iter()
            .map(|seg| (seg.emulation.to_string(), seg.name.as_str())),
    );
    for (e, segs) in &emulations {
        let which = every_or_list(segs, t.segments.len(), "every segment");
        let _ = writeln!(s, "  emulation: {which}: {e}");
    }
}

/// Nodes reached in each number of hops, grouped: most topologies give every node the same
/// profile.
fn reach(s: &mut String, t: &Topology) {
    let f = Forwarding::new(t);
    let profiles: Vec<(ReachProfile, Vec<&str>)> = grouped(
        t.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (f.reach_by_hops(i), n.name.as_str())),
    );
    for (profile, nodes) in &profiles {
        let who = every_or_list(nodes, t.nodes.len(), "every node");
        let parts: Vec<String> = profile
            .iter()
            .map(|(hops, count)| {
                format!(
                    "{count} node(s) in {hops} hop{}",
                    if *hops == 1 { "" } else { "s" }
                )
            })
            .collect();
        let _ = writeln!(s, "  reach: {who} reaches {}", parts.join(", "));
    }
}

/// Values grouped by key, the groups in the order their keys first appear.
fn grouped<K: PartialEq, V>(items: impl Iterator<Item = (K, V)>) -> Vec<(K, Vec<V>)> {
    let mut groups: Vec<(K, Vec<V>)> = Vec::new();
    for (key, value) in items {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(value),
            None => groups.push((key, vec![value])),
        }
    }
    groups
}

/// `every` when the group holds all `total` of them, else its names.
fn every_or_list(names: &[&str], total: usize, every: &str) -> String {
    if names.len() == total {
        every.to_string()
    } else {
        names.join(", ")
    }
}

/// One workload's placement: its busiest segment, the model's expectation where there is
/// one, and each pair's path.
fn placement_entry(s: &mut String, e: &PlacementEntry) {
    let p = &e.placement;
    if !p.ranks.is_empty() {
        rank_entry(s, e);
        return;
    }
    // Under ECMP a pair may cross any segment of any of its ways, the hash decides which.
    let split = p.pairs.iter().any(|x| !x.path.alternatives.is_empty());
    let _ = writeln!(
        s,
        "  workload {} {} x{} (busiest segment carries {}{} pair(s)):",
        e.workload,
        p.kind.as_str(),
        e.pairs,
        if split { "up to " } else { "" },
        p.max_segment_load
    );
    if !e.predictions.is_empty() {
        let parts: Vec<String> = e
            .predictions
            .iter()
            .map(|x| {
                format!(
                    "{} {:.2} ({})",
                    crate::spec::ByteSize(x.size_bytes),
                    x.aggregate_mbit_s,
                    x.limit()
                )
            })
            .collect();
        let _ = writeln!(s, "    model, aggregate Mbit/s: {}", parts.join(", "));
    }
    for pair in &p.pairs {
        pair_path(s, pair);
    }
}

/// A collective's placement: which rank sits on which node, the model's time per iteration
/// at each size, and what each of its steps sends over which paths.
fn rank_entry(s: &mut String, e: &PlacementEntry) {
    let p = &e.placement;
    let _ = writeln!(
        s,
        "  workload {} {}, {} ranks placed {}:",
        e.workload,
        e.collective.as_deref().unwrap_or("collective"),
        p.ranks.len(),
        p.kind.as_str()
    );
    let nodes: Vec<String> = p
        .ranks
        .iter()
        .enumerate()
        .map(|(r, x)| format!("{r} {}", x.node))
        .collect();
    for line in nodes.chunks(8) {
        let _ = writeln!(s, "    ranks: {}", line.join(", "));
    }
    if !e.collective_predictions.is_empty() {
        let parts: Vec<String> = e
            .collective_predictions
            .iter()
            .map(|x| {
                format!(
                    "{} {} ({})",
                    crate::spec::ByteSize(x.size_bytes),
                    human_us(x.time_us),
                    x.limit
                )
            })
            .collect();
        let _ = writeln!(s, "    model, time per iteration: {}", parts.join(", "));
    }
    for (i, step) in e.collective_steps.iter().enumerate() {
        let via = match step.forwarders.as_slice() {
            [] => "no forwarding".to_owned(),
            few if few.len() <= 4 => {
                let f: Vec<String> = few.iter().map(|(n, k)| format!("{n} x{k}")).collect();
                format!("forwarded by {}", f.join(", "))
            }
            many if many.iter().all(|f| f.1 == many[0].1) => {
                format!("forwarded by {} nodes, each x{}", many.len(), many[0].1)
            }
            // Sorted most first: the first forwards the most.
            many => format!(
                "forwarded by {} nodes, {} the most (x{})",
                many.len(),
                many[0].0,
                many[0].1
            ),
        };
        let busiest = step
            .busiest_segment
            .as_ref()
            .map(|(seg, k)| format!("; busiest segment {seg} carries {k} message(s)"))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "    step {}: {}; up to {} hop(s), {via}{busiest}",
            i + 1,
            step.messages,
            step.max_hops
        );
    }
}

/// A time in µs as people read it: µs, ms or s.
fn human_us(us: f64) -> String {
    if us < 1e3 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// A pair, where the client reaches the server, and the way there; where ECMP routes split,
/// every way the hash may pick.
fn pair_path(s: &mut String, pair: &PlannedPair) {
    let via = |forwarders: Vec<&NodeName>| {
        if forwarders.is_empty() {
            String::new()
        } else {
            format!(
                " via {}",
                forwarders
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
    };
    let segs: Vec<&str> = pair.path.segments.iter().map(|x| x.as_str()).collect();
    let ways = if pair.path.alternatives.is_empty() {
        via(pair.path.forwarders())
    } else {
        let each: Vec<String> = pair
            .path
            .ways()
            .iter()
            .map(|w| via(w.forwarders()).trim_start().to_owned())
            .map(|v| if v.is_empty() { "direct".to_owned() } else { v })
            .collect();
        format!(
            ", one of {} equal-cost ways by hash: {}",
            each.len(),
            each.join(" | ")
        )
    };
    let _ = writeln!(
        s,
        "    {} -> {} at {}: {} hop(s){}; segments {}",
        pair.client,
        pair.server,
        pair.path.target,
        pair.path.hop_count(),
        ways,
        segs.join(",")
    );
}
