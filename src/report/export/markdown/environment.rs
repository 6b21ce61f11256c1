//! "Environment": what the nodes' probes found, facts equal on every node once and each
//! node's differences beside its name.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::table::table;
use crate::report::document::Report;
use crate::report::format::md_cell;

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
        facts.common_table(s);
        facts.differences_table(s);
    }
}

/// A run's probed facts: those equal on every node, and what each node has besides.
#[derive(Debug, PartialEq)]
struct NodeFacts {
    nodes: usize,
    /// Facts every node has with the same value, in key order.
    common: Vec<(String, String)>,
    /// Per node, its facts that are not common, in key order.
    own: BTreeMap<String, BTreeMap<String, String>>,
}

impl NodeFacts {
    fn split(probes: &BTreeMap<String, serde_json::Value>) -> Self {
        let flat: BTreeMap<&String, BTreeMap<String, String>> = probes
            .iter()
            .map(|(node, probe)| {
                let mut facts = Vec::new();
                flatten("", probe, &mut facts);
                (node, facts.into_iter().collect())
            })
            .collect();
        let mut nodes = flat.values();
        let common: Vec<(String, String)> = match nodes.next() {
            Some(first) => first
                .iter()
                .filter(|(k, v)| nodes.clone().all(|n| n.get(*k) == Some(*v)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            None => Vec::new(),
        };
        let shared: BTreeSet<&String> = common.iter().map(|(k, _)| k).collect();
        let own = flat
            .iter()
            .map(|(node, facts)| {
                let mine = facts
                    .iter()
                    .filter(|(k, _)| !shared.contains(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                ((*node).clone(), mine)
            })
            .collect();
        Self {
            nodes: probes.len(),
            common,
            own,
        }
    }

    /// The common facts, those under one parent key on one line (`interfaces.0`:
    /// `mtu=1500; name=eth1; …`), so a probe's dozens of keys take a few rows.
    fn common_table(&self, s: &mut String) {
        if self.common.is_empty() {
            return;
        }
        // Sorted by group, so an object's facts stay together even where a differing fact
        // (left out here) sat between them.
        let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (key, value) in &self.common {
            match key.rsplit_once('.') {
                Some((parent, leaf)) => groups
                    .entry(parent)
                    .or_default()
                    .push(format!("{leaf}={value}")),
                None => groups.entry(key).or_default().push(value.clone()),
            }
        }
        match self.nodes {
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
    fn differences_table(&self, s: &mut String) {
        let keys: BTreeSet<&String> = self.own.values().flat_map(|f| f.keys()).collect();
        if keys.is_empty() {
            if self.nodes > 1 {
                s.push_str("No fact differs between the nodes.\n\n");
            }
            return;
        }
        s.push_str("Differing between nodes:\n\n");
        let every_node_has_all = self.own.values().all(|f| f.len() == keys.len());
        if keys.len() <= MAX_COLUMNS && every_node_has_all {
            let mut header = vec!["node".to_string()];
            header.extend(keys.iter().map(|k| md_cell(k)));
            let rows: Vec<Vec<String>> = self
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
            let rows: Vec<Vec<String>> = self
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
}

/// Probe JSON as `dotted.key = value` lines, keys in sorted order (serde_json's map is a
/// BTreeMap), long values cut so a table stays readable.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    use serde_json::Value;
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_owned()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&key(k), v, out);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let joined: Vec<String> = items.iter().map(scalar).collect();
            out.push((prefix.to_owned(), cut(joined.join(", "))));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(&key(&i.to_string()), item, out);
            }
        }
        other => out.push((prefix.to_owned(), cut(scalar(other)))),
    }
}

fn scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn cut(s: String) -> String {
    const MAX: usize = 100;
    if s.chars().count() > MAX {
        let t: String = s.chars().take(MAX).collect();
        format!("{t}…")
    } else {
        s
    }
}
