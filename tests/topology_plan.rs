//! The shipped topologies and experiments: they validate, resolve to the study's reachability,
//! render stable scripts, and plan as the README says.

mod common;

use assert_cmd::Command;
use orchestrate::spec::SourceFile;
use orchestrate::topology::{self, paths};
use proptest::prelude::*;

fn orchestrate() -> Command {
    Command::cargo_bin("orchestrate").unwrap()
}

fn reach(t: &topology::Topology) -> Vec<Vec<(usize, usize)>> {
    t.nodes
        .iter()
        .map(|n| paths::reach_by_hops(t, &n.name))
        .collect()
}

#[test]
fn validate_passes_on_every_shipped_file() {
    let mut files: Vec<String> = Vec::new();
    for dir in ["experiments", "topologies"] {
        for e in std::fs::read_dir(common::root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                files.push(p.display().to_string());
            }
        }
    }
    assert!(files.len() >= 6);
    let out = orchestrate()
        .arg("validate")
        .args(&files)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        files.len()
    );
}

#[test]
fn validate_fails_with_location_on_a_bad_file() {
    let bad = common::root().join("tests/specs/bad/bad-rate.toml");
    let out = orchestrate().arg("validate").arg(&bad).assert().failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("bad-rate.toml:5:8"), "{stderr}");
    assert!(stderr.contains("invalid rate"), "{stderr}");
}

#[test]
fn routed_mesh_reaches_six_nodes_directly_and_nine_through_a_forwarder() {
    let t = common::topology("routed-mesh-4x4");
    for r in reach(&t) {
        assert_eq!(r, vec![(1, 6), (2, 9)]);
    }
    assert_eq!(t.forwarding_nodes().len(), 16);
    // Every two-hop path goes through exactly one forwarding node, and forwarding is spread:
    // each node forwards for the same number of ordered pairs.
    let mut forwarded = std::collections::BTreeMap::new();
    for a in &t.nodes {
        for b in &t.nodes {
            if a.name == b.name {
                continue;
            }
            let best = &paths::options(&t, &a.name, &b.name)[0];
            if best.hop_count() == 2 {
                let via = best.forwarders();
                assert_eq!(via.len(), 1);
                *forwarded.entry(via[0].clone()).or_insert(0) += 1;
            }
        }
    }
    let counts: std::collections::BTreeSet<_> = forwarded.values().collect();
    assert_eq!(counts.len(), 1, "forwarding load is uneven: {forwarded:?}");
}

#[test]
fn switched_mesh_and_bonded_dual_net_reach_all_fifteen_in_one_hop() {
    for name in [
        "switched-mesh-4x4",
        "bonded-dual-net",
        "switched-bonded-mesh-4x4",
        "single-net",
    ] {
        let t = common::topology(name);
        for r in reach(&t) {
            assert_eq!(r, vec![(1, 15)], "{name}");
        }
        assert!(
            t.forwarding_nodes().is_empty(),
            "{name} needs no forwarding"
        );
    }
}

#[test]
fn explicit_and_generated_forms_resolve_to_the_same_model() {
    let explicit =
        topology::load(&common::root().join("tests/specs/good/dual-bus-explicit.toml")).unwrap();
    let generated = common::topology("bonded-dual-net");
    assert_eq!(
        serde_json::to_value(&explicit).unwrap(),
        serde_json::to_value(&generated).unwrap()
    );
}

#[test]
fn explicit_routes_are_accepted_and_make_their_next_hop_forward() {
    let t = topology::load(&common::root().join("tests/specs/good/two-buses-routed.toml")).unwrap();
    let fwd: Vec<&str> = t.forwarding_nodes().iter().map(|n| n.as_str()).collect();
    assert_eq!(fwd, ["n2"]);
    let p = &paths::options(&t, &"n1".parse().unwrap(), &"n3".parse().unwrap())[0];
    assert_eq!(p.hop_count(), 2);
    assert_eq!(p.reply.len(), 2);
}

/// A script with its node's own values put out of sight: each word that is a node name
/// (`n` and two digits) or an IPv4 address or prefix becomes a placeholder.
fn shape(script: &str) -> String {
    let is_node =
        |w: &str| w.len() == 3 && w.starts_with('n') && w[1..].bytes().all(|b| b.is_ascii_digit());
    let is_address = |w: &str| {
        let ip = w.split_once('/').map_or(w, |(ip, _)| ip);
        ip.parse::<std::net::Ipv4Addr>().is_ok()
    };
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        // A sentence's full stop is not part of its last word.
        let w = word.trim_end_matches('.');
        out.push_str(match w {
            w if is_node(w) => "NODE",
            w if is_address(w) => "ADDRESS",
            w => w,
        });
        out.push_str(&word[w.len()..]);
        word.clear();
    };
    for c in script.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '/' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Every node's steps, a line each: what the node's scripts do, with its own values.
fn step_lines(t: &orchestrate::topology::Topology) -> String {
    let lines: Vec<String> = t
        .nodes
        .iter()
        .map(|n| {
            let s = orchestrate::netconf::render(t, n);
            let steps: Vec<String> = s.steps.iter().map(|x| x.describe()).collect();
            format!("{}: {}", n.name, steps.join("; "))
        })
        .collect();
    lines.join("\n")
}

#[test]
fn scripts_of_every_shipped_topology_match_their_snapshots() {
    for name in common::SHIPPED_TOPOLOGIES {
        let t = common::topology(name);
        // One node's scripts in full; every other node's are the same script with its own
        // name, addresses and routes, which the step list pins node by node.
        let first = t.node(&"n01".parse().unwrap()).unwrap();
        let s = orchestrate::netconf::render(&t, first);
        insta::assert_snapshot!(format!("{name}-n01-apply"), s.apply);
        insta::assert_snapshot!(format!("{name}-n01-teardown"), s.teardown);
        for n in &t.nodes {
            let other = orchestrate::netconf::render(&t, n);
            assert_eq!(shape(&other.apply), shape(&s.apply), "{name}/{}", n.name);
            assert_eq!(
                shape(&other.teardown),
                shape(&s.teardown),
                "{name}/{}",
                n.name
            );
        }
        if name == "switched-bonded-mesh-4x4" {
            // A node cannot tell a switch from a bus: its steps are the bonded dual net's,
            // and the difference lies in the wires alone.
            let dual = common::topology("bonded-dual-net");
            assert_eq!(step_lines(&t), step_lines(&dual));
            continue;
        }
        insta::assert_snapshot!(format!("{name}-steps"), step_lines(&t));
    }
}

#[test]
fn plan_prints_points_estimate_and_every_nodes_scripts() {
    let exp = common::root().join("experiments/grid4x4.toml");
    let out = orchestrate().arg("plan").arg(&exp).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.starts_with("Plan for grid4x4 (seed 1996)"),
        "{}",
        &text[..200.min(text.len())]
    );
    assert!(text.contains("estimated "));
    assert!(text.contains("reach: every node reaches 6 node(s) in 1 hop, 9 node(s) in 2 hops"));
    for topo in ["routed-mesh-4x4", "switched-mesh-4x4", "bonded-dual-net"] {
        for node in ["n01", "n16"] {
            assert!(
                text.contains(&format!("=== {node} apply, configuration")),
                "{topo} {node}"
            );
        }
        assert!(text.contains(&format!("# Apply {topo} on n16.")), "{topo}");
        assert!(
            text.contains(&format!("# Teardown {topo} on n16.")),
            "{topo}"
        );
    }

    let json = orchestrate()
        .arg("plan")
        .arg(&exp)
        .arg("--json")
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    let points = v["points"].as_array().unwrap();
    let header_points: usize = text
        .split(", ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        points.len(),
        header_points,
        "text and JSON show the same points"
    );
    // Three topologies, then the first again for the drift check.
    assert_eq!(v["configurations"].as_array().unwrap().len(), 4);
    assert_eq!(v["configurations"][3]["repeats"], 0);
    assert!(v["configurations"][0].get("repeats").is_none());
    assert!(text.contains(
        "Configuration 3: configuration 0 (routed-mesh-4x4, bonding none) again, the drift check"
    ));
    assert!(v["estimate"].as_f64().unwrap() > 0.0);
    assert!(
        v["configurations"][0]["scripts"][0]["apply"]
            .as_str()
            .unwrap()
            .starts_with("#!/bin/sh")
    );
}

#[test]
fn plan_for_one_node_shows_only_that_node_and_rejects_unknown_nodes() {
    let exp = common::root().join("experiments/grid4x4.toml");
    let out = orchestrate()
        .args(["plan", "--node", "n07"])
        .arg(&exp)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("=== n07 apply"));
    assert!(!text.contains("=== n01 apply"));
    // Only that node: its interfaces in each configuration, not the point table or the
    // topology's every-node summaries.
    assert!(text.contains("  eth1: segment "), "{text}");
    assert!(!text.contains("Points, in run order"), "{text}");
    assert!(!text.contains("  reach:"), "{text}");
    let whole = orchestrate().arg("plan").arg(&exp).assert().success();
    let whole = String::from_utf8_lossy(&whole.get_output().stdout).into_owned();
    assert!(
        text.lines().count() * 4 < whole.lines().count(),
        "{} lines for one node, {} for all",
        text.lines().count(),
        whole.lines().count()
    );
    orchestrate()
        .args(["plan", "--node", "n99"])
        .arg(&exp)
        .assert()
        .failure();
}

#[test]
fn the_plan_ends_by_measuring_the_first_configurations_cheapest_cell_again() {
    use std::collections::BTreeMap;
    use std::time::Duration;
    let e = orchestrate::plan::load(&common::root().join("experiments/grid4x4.toml")).unwrap();
    let plan = orchestrate::plan::expand(&e).unwrap();
    let (check, measured) = plan.configurations.split_last().unwrap();
    assert_eq!(check.repeats, Some(0));
    assert!(measured.iter().all(|c| c.repeats.is_none()));
    assert_eq!(check.topology.name, measured[0].topology.name);
    assert_eq!(check.bonding_label(), measured[0].bonding_label());
    // Every cell of the first configuration with its time; the cheapest is measured again.
    let mut cells: BTreeMap<(usize, usize, u64), (Duration, u32)> = BTreeMap::new();
    for p in plan.points.iter().filter(|p| p.configuration == 0) {
        let c = cells
            .entry((p.workload, p.placement_entry, p.size_bytes))
            .or_default();
        c.0 += p.estimate;
        c.1 += 1;
    }
    let cheapest = cells.values().map(|c| c.0).min().unwrap();
    assert!(
        cells.values().any(|c| c.0 > cheapest),
        "cells differ in cost"
    );
    let again: Vec<_> = plan
        .points
        .iter()
        .filter(|p| p.configuration == check.id)
        .collect();
    let cell = (
        again[0].workload,
        again[0].placement_entry,
        again[0].size_bytes,
    );
    assert_eq!(cells[&cell].0, cheapest);
    assert_eq!(again.len() as u32, cells[&cell].1, "every repetition again");
    assert!(
        again
            .iter()
            .all(|p| (p.workload, p.placement_entry, p.size_bytes) == cell)
    );
    assert_eq!(
        again.iter().map(|p| p.rep).collect::<Vec<_>>(),
        (0..again.len() as u32).collect::<Vec<_>>()
    );
    // Last in run order, numbered on from the rest.
    let first_again = plan.points.len() - again.len();
    assert!(
        plan.points[first_again..]
            .iter()
            .all(|p| p.configuration == check.id)
    );
    assert!(plan.points.iter().enumerate().all(|(i, p)| p.id == i));
    // One configuration has nothing to drift against.
    let one = orchestrate::plan::load(&common::root().join("experiments/beam99.toml")).unwrap();
    let one = orchestrate::plan::expand(&one).unwrap();
    assert_eq!(one.configurations.len(), 1);
    assert!(one.configurations.iter().all(|c| c.repeats.is_none()));
}

#[test]
fn plans_are_deterministic_for_a_seed() {
    let e = orchestrate::plan::load(&common::root().join("experiments/grid4x4.toml")).unwrap();
    let a = orchestrate::plan::expand(&e).unwrap();
    let b = orchestrate::plan::expand(&e).unwrap();
    let order = |p: &orchestrate::plan::Plan| {
        p.points
            .iter()
            .map(|x| (x.topology.to_string(), x.size_bytes, x.pairs, x.rep))
            .collect::<Vec<_>>()
    };
    assert_eq!(order(&a), order(&b));
    let mut e2 = e.clone();
    e2.seed += 1;
    assert_ne!(
        order(&a),
        order(&orchestrate::plan::expand(&e2).unwrap()),
        "another seed, another order"
    );
}

#[test]
fn placements_keep_nodes_in_one_pair_and_respect_wires() {
    use orchestrate::plan::{PlacementError, place};
    use orchestrate::spec::experiment::PlacementKind;
    let t = common::topology("routed-mesh-4x4");
    for kind in [PlacementKind::LocalWire, PlacementKind::RemoteWire] {
        for count in 1..=8 {
            let p = place(&t, kind, count, &[]).unwrap();
            assert_eq!(p.pairs.len(), count);
            let mut seen = std::collections::BTreeSet::new();
            for pair in &p.pairs {
                assert!(
                    seen.insert(pair.client.clone()) && seen.insert(pair.server.clone()),
                    "node in two pairs"
                );
                let shared = t.shared_segments(&pair.client, &pair.server);
                assert_eq!(shared.is_empty(), kind == PlacementKind::RemoteWire);
            }
        }
    }
    // Local-wire pairs on the routed mesh each get a bus of their own up to 8 pairs.
    assert_eq!(
        place(&t, PlacementKind::LocalWire, 7, &[])
            .unwrap()
            .max_segment_load,
        1
    );
    assert!(matches!(
        place(&t, PlacementKind::RemoteWire, 9, &[]),
        Err(PlacementError::TooMany { possible: 8, .. })
    ));
    let bus = common::topology("bonded-dual-net");
    assert!(matches!(
        place(&bus, PlacementKind::RemoteWire, 1, &[]),
        Err(PlacementError::NotApplicable { .. })
    ));
}

fn grid(rows: u32, cols: u32, interconnect: &str) -> topology::Topology {
    let text = format!(
        "[generator]\nkind = \"grid\"\nrows = {rows}\ncols = {cols}\ninterconnect = \"{interconnect}\"\n"
    );
    let source = SourceFile::new(format!("grid{rows}x{cols}.toml"), text);
    topology::from_source(&source).unwrap_or_else(|e| panic!("{e:?}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any grid from 2x2 to 8x8: every ordered pair reaches every address of the other and
    /// back (resolution runs the path checker), in at most two hops, local-wire in one.
    #[test]
    fn grids_are_fully_reachable_in_at_most_two_hops(rows in 2u32..=8, cols in 2u32..=8, switched in any::<bool>()) {
        let t = grid(rows, cols, if switched { "switched" } else { "routed" });
        let n = (rows * cols) as usize;
        prop_assert!(paths::check_all(&t).is_ok());
        for node in &t.nodes {
            let r = paths::reach_by_hops(&t, &node.name);
            prop_assert_eq!(r.iter().map(|(_, c)| c).sum::<usize>(), n - 1);
            prop_assert!(r.iter().all(|(hops, _)| *hops <= 2));
            if switched {
                prop_assert_eq!(r, vec![(1, n - 1)]);
            } else {
                let direct = (rows + cols - 2) as usize;
                prop_assert_eq!(r[0], (1, direct));
            }
        }
    }
}

#[test]
fn plan_graph_draws_every_topology_as_svg_and_dot() {
    let dir = tempfile::tempdir().unwrap();
    let exp = common::root().join("benches/five-topologies.toml");
    orchestrate()
        .args(["--quiet", "plan"])
        .arg(&exp)
        .arg("--graph")
        .arg(dir.path())
        .assert()
        .success();
    for name in common::SHIPPED_TOPOLOGIES {
        let t = common::topology(name);
        let svg = std::fs::read_to_string(dir.path().join(format!("{name}.svg"))).unwrap();
        let doc = roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("{name}.svg is not XML: {e}"));
        let title = doc
            .descendants()
            .find(|n| n.has_tag_name("title"))
            .and_then(|n| n.text());
        assert_eq!(title, Some(format!("Topology {name}").as_str()));
        // Printed at its declared size, at most a page (7 in) wide, no text under 8 pt.
        let root = doc.root_element();
        let inches = |attr: &str| -> f64 {
            let v = root.attribute(attr).unwrap();
            v.strip_suffix("in")
                .unwrap_or_else(|| panic!("{name}.svg: {attr} {v:?} not in inches"))
                .parse()
                .unwrap()
        };
        assert!(inches("width") <= 7.0, "{name}.svg is wider than a page");
        let view_w: f64 = root
            .attribute("viewBox")
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        let pt_per_unit = inches("width") * 72.0 / view_w;
        for t in doc.descendants().filter(|n| n.has_tag_name("text")) {
            let size: f64 = t
                .ancestors()
                .find_map(|a| a.attribute("font-size"))
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                size * pt_per_unit >= 8.0,
                "{name}.svg: {:?} prints at {:.1} pt",
                t.text(),
                size * pt_per_unit
            );
        }
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .collect();
        for n in &t.nodes {
            assert!(
                texts.contains(&n.name.as_str()),
                "{name}.svg lacks node {}",
                n.name
            );
        }
        for seg in &t.segments {
            assert!(
                texts
                    .iter()
                    .any(|x| x.starts_with(&format!("{} · ", seg.name))),
                "{name}.svg lacks segment {}",
                seg.name
            );
        }
        let forwarding_boxes = svg.matches("fill=\"#c6e0b4\" stroke=\"#333\"/>").count();
        // One per forwarding node, plus the legend's swatch where there is one: the legend
        // names only what is drawn.
        let forwarding = t.forwarding_nodes().len();
        assert_eq!(
            forwarding_boxes,
            forwarding + usize::from(forwarding > 0),
            "{name}"
        );
        let switches = t.networks.iter().filter(|n| n.switch.is_some()).count();
        assert_eq!(svg.contains(">switch<"), switches > 0, "{name}: legend");

        let dot = std::fs::read_to_string(dir.path().join(format!("{name}.dot"))).unwrap();
        assert!(dot.starts_with(&format!("graph \"{name}\" {{")));
        let edges = dot.lines().filter(|l| l.contains(" -- \"seg:")).count();
        let attachments: usize = t.nodes.iter().map(|n| n.interfaces.len()).sum::<usize>()
            + t.networks
                .iter()
                .filter(|n| n.switch.is_some())
                .map(|n| n.segments.len())
                .sum::<usize>();
        assert_eq!(
            edges, attachments,
            "{name}.dot: one edge per attachment and switch port"
        );
    }
}

#[test]
fn an_experiments_host_profile_replaces_every_nodes_own() {
    let dir = tempfile::tempdir().unwrap();
    let topo = common::root().join("topologies/routed-mesh-4x4.toml");
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"e\"\nhost = \"486dx4\"\ntopologies = [{:?}]\n\
             [[workload]]\npattern = \"token\"\nsizes = [64]\npairs = [1]\n\
             placement = [\"local-wire\"]\nexchanges = 10\n",
            topo.display().to_string()
        ),
    )
    .unwrap();
    let e = orchestrate::plan::load(&exp).unwrap();
    let nodes = &e.topologies[0].nodes;
    assert_eq!(nodes.len(), 16);
    for n in nodes {
        assert_eq!(n.host.profile, "486dx4");
        assert_eq!(n.host.costs.send_ns, 300_000);
        assert_eq!(n.host.costs.forward_ns, 150_000);
    }
    // Without the line, the topology's own (none) holds.
    std::fs::write(
        &exp,
        std::fs::read_to_string(&exp)
            .unwrap()
            .replace("host = \"486dx4\"\n", ""),
    )
    .unwrap();
    let e = orchestrate::plan::load(&exp).unwrap();
    assert!(e.topologies[0].nodes.iter().all(|n| n.host.costs.is_free()));
}

#[test]
fn plan_piped_into_a_reader_that_stops_early_ends_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    // `plan --json` of the study is far larger than a pipe's buffer, so the reader's going
    // away is met by a write, as under `| head`.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(["plan", "--json"])
        .arg(common::root().join("experiments/reschke96.toml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}

/// Addressing that scales: in a topology with more nodes than a /24 has hosts, each subnet
/// numbers its own stations, so every address is unique, inside its subnet, and neither its
/// network nor its broadcast address; where every node fits, node i stays host i + 1.
#[test]
fn subnets_number_their_own_stations_once_nodes_outgrow_them() {
    for (rows, cols) in [(16, 16), (64, 64)] {
        let t = grid(rows, cols, "routed");
        assert_eq!(t.nodes.len(), (rows * cols) as usize);
        let mut seen = std::collections::BTreeSet::new();
        for subnet in &t.subnets {
            assert_eq!(subnet.prefix.prefix_len(), 24, "{rows}x{cols}");
            for link in &subnet.links {
                assert!(subnet.prefix.contains(&link.address), "{}", link.address);
                assert_ne!(link.address, subnet.prefix.network());
                assert_ne!(link.address, subnet.prefix.broadcast());
                assert!(seen.insert(link.address), "{} twice", link.address);
            }
        }
        // Every node reaches every other: the path checker ran while resolving.
        assert!(paths::check_all(&t).is_ok());
    }
    let small = grid(4, 4, "routed");
    for (i, node) in small.nodes.iter().enumerate() {
        for (_, net) in node.links() {
            assert_eq!(net.addr().octets()[3] as usize, i + 1, "{}", node.name);
        }
    }
}

/// Placement on a 16×16 routed mesh, at the sizes the scale run uses: one pair, 64, and
/// 127 (every node but two in a pair).
#[test]
fn pairs_place_on_a_sixteen_by_sixteen_mesh() {
    use orchestrate::plan::place;
    use orchestrate::spec::experiment::PlacementKind;
    let t = grid(16, 16, "routed");
    for (kind, count) in [
        (PlacementKind::LocalWire, 1),
        (PlacementKind::LocalWire, 64),
        (PlacementKind::LocalWire, 127),
        (PlacementKind::RemoteWire, 64),
        (PlacementKind::RemoteWire, 127),
    ] {
        let p = place(&t, kind, count, &[]).unwrap_or_else(|e| panic!("{kind:?} {count}: {e}"));
        assert_eq!(p.pairs.len(), count);
        let mut nodes = std::collections::BTreeSet::new();
        for pair in &p.pairs {
            assert!(nodes.insert(pair.client.clone()) && nodes.insert(pair.server.clone()));
        }
    }
}

#[test]
fn multipath_modes_give_a_bond_mptcp_and_plain_configuration_on_the_same_wires() {
    let dir = tempfile::tempdir().unwrap();
    let topo = common::root().join("topologies/bonded-dual-net.toml");
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"e\"\ntopologies = [{:?}]\n\
             [multipath]\nmodes = [\"bond:balance-rr\", \"mptcp\", \"none\"]\n\
             [[workload]]\npattern = \"token\"\nsizes = [64, 8192]\npairs = [1]\n\
             placement = [\"local-wire\"]\nexchanges = 10\n",
            topo.display().to_string()
        ),
    )
    .unwrap();
    let e = orchestrate::plan::load(&exp).unwrap();
    let plan = orchestrate::plan::expand(&e).unwrap();
    let labels: Vec<String> = plan
        .measured_configurations()
        .map(|c| c.bonding_label())
        .collect();
    assert_eq!(labels, ["balance-rr", "mptcp", "none"]);
    let [bond, mptcp, plain, _drift_check] = &plan.configurations[..] else {
        unreachable!()
    };
    // The same segments and ports under all three.
    for c in [mptcp, plain] {
        assert_eq!(
            c.topology
                .segments
                .iter()
                .map(|s| &s.members)
                .collect::<Vec<_>>(),
            bond.topology
                .segments
                .iter()
                .map(|s| &s.members)
                .collect::<Vec<_>>()
        );
        assert!(c.topology.nodes.iter().all(|n| n.bonds.is_empty()));
        assert!(c.topology.nodes.iter().all(|n| n.links().count() == 2));
    }
    // Only the MPTCP configuration announces addresses, every node both of its own.
    for (n, s) in mptcp.topology.nodes.iter().zip(&mptcp.scripts) {
        for (_, a) in n.links() {
            assert!(
                s.apply
                    .contains(&format!("ip mptcp endpoint add {} dev", a.addr())),
                "{}: {} not announced",
                n.name,
                a.addr()
            );
        }
        assert!(s.teardown.contains("ip mptcp endpoint delete id"));
        assert!(s.teardown.contains("restore_mptcp_limits"));
    }
    for s in plain.scripts.iter().chain(&bond.scripts) {
        assert!(!s.apply.contains("mptcp"), "{}", s.node);
    }
    // The model: MPTCP stripes an 8 KiB token over both buses like the bond, so one pair gets
    // about as much, and clearly more than plain TCP on one bus.
    let at = |c: &orchestrate::plan::Configuration, size: u64| {
        c.placements[0]
            .predictions
            .iter()
            .find(|p| p.size_bytes == size)
            .unwrap()
            .aggregate_mbit_s
    };
    let (b, m, p) = (at(bond, 8192), at(mptcp, 8192), at(plain, 8192));
    assert!(m > 1.3 * p, "mptcp {m} vs one bus {p}");
    assert!((m / b - 1.0).abs() < 0.1, "mptcp {m} vs balance-rr {b}");
    // MPTCP's options make a 64-byte token's frames longer: never faster than plain TCP there.
    assert!(
        at(mptcp, 64) <= at(plain, 64),
        "{} vs {}",
        at(mptcp, 64),
        at(plain, 64)
    );
}

#[test]
fn routing_by_ecmp_gives_a_second_configuration_with_the_same_pairs_and_a_hashed_model() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = common::root().join("topologies/routed-mesh-4x4.toml");
    let bus = common::root().join("topologies/single-net.toml");
    let exp = dir.path().join("e.toml");
    std::fs::write(
        &exp,
        format!(
            "name = \"e\"\ntopologies = [{:?}, {:?}]\n\
             [multipath]\nrouting = [\"shortest\", \"ecmp\"]\n\
             [[workload]]\npattern = \"token\"\nsizes = [64, 8192]\npairs = [1, 7]\n\
             placement = [\"remote-wire\", \"local-wire\"]\nexchanges = 10\n",
            mesh.display().to_string(),
            bus.display().to_string()
        ),
    )
    .unwrap();
    let e = orchestrate::plan::load(&exp).unwrap();
    let plan = orchestrate::plan::expand(&e).unwrap();
    let labels: Vec<(String, String)> = plan
        .measured_configurations()
        .map(|c| (c.topology.name.to_string(), c.bonding_label()))
        .collect();
    // A bus has no forwarder, so no routing to choose: one configuration.
    assert_eq!(
        labels,
        [
            ("routed-mesh-4x4".into(), "none".into()),
            ("routed-mesh-4x4".into(), "ecmp".into()),
            ("single-net".into(), "none".into()),
        ]
    );
    let (shortest, ecmp) = (&plan.configurations[0], &plan.configurations[1]);
    for (s, e) in shortest.placements.iter().zip(&ecmp.placements) {
        let pairs = |p: &orchestrate::plan::PlacementEntry| -> Vec<(String, String)> {
            let p = &p.placement.pairs;
            p.iter()
                .map(|x| (x.client.to_string(), x.server.to_string()))
                .collect()
        };
        assert_eq!(pairs(s), pairs(e), "both routings measure the same nodes");
        for pair in &e.placement.pairs {
            let server = ecmp.topology.node(&pair.server).unwrap();
            assert_eq!(Some(pair.path.target), server.node_address());
            let remote =
                s.placement.kind == orchestrate::spec::experiment::PlacementKind::RemoteWire;
            // Two ways there and two back through a forwarder; one straight on a shared bus.
            assert_eq!(pair.path.ways().len(), if remote { 4 } else { 1 });
        }
    }
    // Scripts: the node address on lo and multipath routes, each undone; none on the
    // shortest-path configuration.
    for s in &ecmp.scripts {
        assert!(s.apply.contains(" dev lo; recorded"), "{}", s.node);
        assert!(s.apply.contains("nexthop via"), "{}", s.node);
        assert!(s.apply.contains("net.ipv4.fib_multipath_hash_policy=1"));
        assert!(s.teardown.contains("ip route del") && s.teardown.contains(" src "));
    }
    assert!(
        shortest
            .scripts
            .iter()
            .all(|s| !s.apply.contains("nexthop"))
    );
    // The model: a pair alone is bound by its own round trip whichever way it is hashed;
    // seven 8 KiB pairs placed so that no forwarder carries two of them can only lose when
    // the hash picks for them (two pairs on one forwarder's bus by chance).
    let at = |c: &orchestrate::plan::Configuration, pairs: u32, size: u64| {
        c.placements
            .iter()
            .find(|p| {
                p.pairs == pairs
                    && p.placement.kind == orchestrate::spec::experiment::PlacementKind::RemoteWire
            })
            .unwrap()
            .predictions
            .iter()
            .find(|p| p.size_bytes == size)
            .unwrap()
            .aggregate_mbit_s
    };
    let one = (at(shortest, 1, 8192), at(ecmp, 1, 8192));
    assert!((one.0 - one.1).abs() < 1e-9, "{one:?}");
    let seven = (at(shortest, 7, 8192), at(ecmp, 7, 8192));
    assert!(seven.1 < seven.0, "{seven:?}");
    assert!(seven.1 > 0.5 * seven.0, "{seven:?}");
}

/// A collective's plan says which rank sits on which node, what the model expects per
/// iteration and what each step sends over which paths: on the routed mesh, the halo's
/// neighbours share a bus (no forwarding) while the all-to-all's steps are forwarded.
#[test]
fn a_collectives_plan_shows_its_ranks_model_and_steps() {
    let e = orchestrate::plan::load(&common::root().join("experiments/applications.toml"))
        .expect("the shipped experiment loads");
    let plan = orchestrate::plan::expand(&e).expect("it plans");
    let text = orchestrate::plan::render::text(&plan, None);
    let mesh: String = text
        .split("\nConfiguration ")
        .find(|c| c.starts_with("2: routed-mesh-4x4"))
        .expect("the routed mesh is configuration 2")
        .to_owned();
    assert!(
        mesh.contains("workload 0 halo 4x4 open, 16 ranks placed row-major:")
            && mesh.contains("step 1: 48 messages; up to 1 hop(s), no forwarding"),
        "{mesh}"
    );
    assert!(
        mesh.contains(
            "step 5: each rank to rank + 5; up to 2 hop(s), forwarded by 16 nodes, each x1"
        ),
        "{mesh}"
    );
    insta::assert_snapshot!("applications-routed-mesh", mesh);
    // Every collective point is planned to last at least its warm-up and one timed iteration
    // at the model's pace.
    for p in plan.points.iter().filter(|p| p.pattern.is_collective()) {
        let entry = &plan.configurations[p.configuration].placements[p.placement_entry];
        let model = entry
            .collective_predictions
            .iter()
            .find(|m| m.size_bytes == p.size_bytes)
            .expect("a prediction per size");
        let warmup = e.workloads[p.workload].warmup as f64;
        assert!(
            p.estimate.as_secs_f64() >= (warmup + 1.0) * model.completion_us * 1e-6,
            "{p:?} {model:?}"
        );
    }
}
