//! The plan as a person reads it: configurations, placements with their paths, points in run
//! order with estimates, and every node's scripts.

use std::fmt::Write as _;
use std::time::Duration;

use crate::spec::NodeName;
use crate::spec::topology::Medium;
use crate::topology::paths;

use super::sweep::{Configuration, Plan};

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
    for c in &plan.configurations {
        configuration(&mut s, c);
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
    for c in &plan.configurations {
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

fn configuration(s: &mut String, c: &Configuration) {
    let t = &c.topology;
    let _ = writeln!(
        s,
        "\nConfiguration {}: {} (bonding {})",
        c.id,
        t.name,
        c.bonding_label()
    );
    if let Some(d) = &t.description {
        let _ = writeln!(s, "  {d}");
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
    // Host profiles and emulation, grouped: most topologies give every node the same.
    let mut hosts: Vec<(String, Vec<&str>)> = Vec::new();
    for n in &t.nodes {
        let d = n.host.describe();
        match hosts.iter_mut().find(|(h, _)| *h == d) {
            Some((_, v)) => v.push(n.name.as_str()),
            None => hosts.push((d, vec![n.name.as_str()])),
        }
    }
    for (d, nodes) in &hosts {
        let who = if nodes.len() == t.nodes.len() {
            "every node".to_string()
        } else {
            nodes.join(", ")
        };
        let _ = writeln!(s, "  host: {who}: {d}");
    }
    let mut emulations: Vec<(String, Vec<&str>)> = Vec::new();
    for seg in &t.segments {
        let e = seg.emulation.to_string();
        match emulations.iter_mut().find(|(x, _)| *x == e) {
            Some((_, v)) => v.push(seg.name.as_str()),
            None => emulations.push((e, vec![seg.name.as_str()])),
        }
    }
    for (e, segs) in &emulations {
        let which = if segs.len() == t.segments.len() {
            "every segment".to_string()
        } else {
            segs.join(", ")
        };
        let _ = writeln!(s, "  emulation: {which}: {e}");
    }
    // Reachability, grouped: most topologies give every node the same profile.
    let mut profiles: Vec<(ReachProfile, Vec<&NodeName>)> = Vec::new();
    for n in &t.nodes {
        let r = paths::reach_by_hops(t, &n.name);
        match profiles.iter_mut().find(|(p, _)| *p == r) {
            Some((_, v)) => v.push(&n.name),
            None => profiles.push((r, vec![&n.name])),
        }
    }
    for (profile, nodes) in &profiles {
        let who = if nodes.len() == t.nodes.len() {
            "every node".to_string()
        } else {
            nodes
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
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
    for e in &c.placements {
        let p = &e.placement;
        let _ = writeln!(
            s,
            "  workload {} {} x{} (busiest segment carries {} pair(s)):",
            e.workload,
            p.kind.as_str(),
            e.pairs,
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
            let via = pair.path.forwarders();
            let via = if via.is_empty() {
                String::new()
            } else {
                format!(
                    " via {}",
                    via.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(",")
                )
            };
            let segs: Vec<&str> = pair.path.segments.iter().map(|x| x.as_str()).collect();
            let _ = writeln!(
                s,
                "    {} -> {} at {}: {} hop(s){}; segments {}",
                pair.client,
                pair.server,
                pair.path.target,
                pair.path.hop_count(),
                via,
                segs.join(",")
            );
        }
    }
    for n in &c.notes {
        let _ = writeln!(s, "  note: {n}");
    }
}
