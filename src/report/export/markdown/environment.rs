//! "Environment": what the nodes' probes found, facts equal on every node once and each
//! node's differences beside its name.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::table::table;
use crate::report::document::Report;
use crate::report::format::md_cell;
use crate::report::node_facts::NodeFacts;

/// Differing facts up to this many go in a column each; more are listed per node.
const MAX_COLUMNS: usize = 6;

pub fn environment(s: &mut String, report: &Report) {
    let runs: Vec<_> = report
        .runs
        .iter()
        .filter(|r| !r.manifest.nodes.is_empty())
        .collect();
    if runs.is_empty() {
        return;
    }
    s.push_str("## Environment\n\nAs probed on each node at the start of the run.\n\n");
    for run in runs {
        if report.runs.len() > 1 {
            let _ = writeln!(s, "### {}\n", md_cell(&run.label));
        }
        let facts = NodeFacts::split(&run.manifest.nodes);
        common_table(&facts, s);
        differences_table(&facts, s);
    }
}

/// The common facts, those under one parent key on one line (`interfaces.0`:
/// `mtu=1500; name=eth1; …`), so a probe's dozens of keys take a few rows.
fn common_table(facts: &NodeFacts, s: &mut String) {
    if facts.common.is_empty() {
        return;
    }
    // Sorted by group, so an object's facts stay together even where a differing fact
    // (left out here) sat between them.
    let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (key, value) in &facts.common {
        match key.rsplit_once('.') {
            Some((parent, leaf)) => groups
                .entry(parent)
                .or_default()
                .push(format!("{leaf}={value}")),
            None => groups.entry(key).or_default().push(value.clone()),
        }
    }
    match facts.nodes {
        1 => s.push_str("Probed on the one node:\n\n"),
        2 => s.push_str("Equal on both nodes:\n\n"),
        n => {
            let _ = writeln!(s, "Equal on all {n} nodes:\n");
        }
    }
    let rows: Vec<Vec<String>> = groups
        .into_iter()
        .map(|(g, items)| vec![md_cell(g), md_cell(&items.join("; "))])
        .collect();
    table(s, &["fact".into(), "value".into()], &rows, &[false, false]);
}

/// What differs between nodes: a column per fact when few facts differ and every node
/// has them all, else each node's facts on one line.
fn differences_table(facts: &NodeFacts, s: &mut String) {
    let keys: BTreeSet<&String> = facts.own.values().flat_map(|f| f.keys()).collect();
    if keys.is_empty() {
        if facts.nodes > 1 {
            s.push_str("No fact differs between the nodes.\n\n");
        }
        return;
    }
    s.push_str("Differing between nodes:\n\n");
    let every_node_has_all = facts.own.values().all(|f| f.len() == keys.len());
    if keys.len() <= MAX_COLUMNS && every_node_has_all {
        let mut header = vec!["node".to_string()];
        header.extend(keys.iter().map(|k| md_cell(k)));
        let rows: Vec<Vec<String>> = facts
            .own
            .iter()
            .map(|(node, facts)| {
                let mut r = vec![md_cell(node)];
                r.extend(facts.values().map(|v| md_cell(v)));
                r
            })
            .collect();
        let right = vec![false; header.len()];
        table(s, &header, &rows, &right);
    } else {
        let rows: Vec<Vec<String>> = facts
            .own
            .iter()
            .map(|(node, facts)| {
                let list: Vec<String> = facts.iter().map(|(k, v)| format!("{k}={v}")).collect();
                vec![md_cell(node), md_cell(&list.join("; "))]
            })
            .collect();
        table(s, &["node".into(), "facts".into()], &rows, &[false, false]);
    }
}
