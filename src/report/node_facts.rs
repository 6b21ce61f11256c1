//! What the nodes' probes found (`manifest.json`'s `nodes`), split into the facts equal on
//! every node and each node's own: the appendix's "Environment" shows them, and a comparison
//! of two runs diffs their common facts ([`super::spec_diff`]).

use std::collections::{BTreeMap, BTreeSet};

/// A run's probed facts: those equal on every node, and what each node has besides.
#[derive(Debug, PartialEq)]
pub struct NodeFacts {
    pub nodes: usize,
    /// Facts every node has with the same value, in key order.
    pub common: Vec<(String, String)>,
    /// Per node, its facts that are not common, in key order.
    pub own: BTreeMap<String, BTreeMap<String, String>>,
}

impl NodeFacts {
    pub fn split(probes: &BTreeMap<String, serde_json::Value>) -> Self {
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
