//! The inventory an experiment names, checked for a run of it: the file by its own rules, then
//! every node of every topology against it. `orchestrate validate` and `orchestrate run` both
//! check this, the run before it creates anything.

use std::collections::BTreeMap;

use crate::remote::inventory::LocatedInventory;
use crate::spec::{Name, NodeName, SourceFile, SpecError, SpecErrors};

use super::experiment::{Cluster, Experiment};

/// At most this many node names in one message; the rest are counted.
const NAMES_SHOWN: usize = 8;

/// An experiment's inventory that has a host for every node the experiment needs.
#[derive(Debug)]
pub struct CheckedInventory {
    pub inventory: LocatedInventory,
    /// Hosts no topology uses, one note per `[[host]]` listing them. Notes, not errors: one
    /// inventory commonly lists a whole cluster for experiments that use part of it, and a run
    /// connects only to the nodes its topologies name.
    pub unused: Vec<SpecError>,
}

/// Checks the inventory `e` names (`None` for a virtual cluster, which writes its own).
/// Problems in the inventory file are located there; nodes it lacks, at the experiment's
/// `inventory` key.
pub fn check_inventory(e: &Experiment) -> Result<Option<CheckedInventory>, SpecErrors> {
    let Cluster::Inventory { path, named_at } = &e.cluster else {
        return Ok(None);
    };
    let experiment = SourceFile::read(&e.path)?;
    let at_key = |message: String| experiment.error(named_at.clone(), message, None);
    if let Err(err) = std::fs::metadata(path) {
        return Err(at_key(format!("inventory {}: {err}", path.display())).into());
    }
    let inventory = LocatedInventory::load(path)?;
    let hosts = &inventory.inventory.hosts;
    let mut needed: BTreeMap<&NodeName, Vec<&Name>> = BTreeMap::new();
    for t in &e.topologies {
        for n in &t.nodes {
            needed.entry(&n.name).or_default().push(&t.name);
        }
    }
    let mut lacking: BTreeMap<&Name, Vec<&NodeName>> = BTreeMap::new();
    for (node, topologies) in &needed {
        if !hosts.contains_key(*node) {
            lacking.entry(topologies[0]).or_default().push(node);
        }
    }
    let errors: Vec<SpecError> = lacking
        .into_iter()
        .map(|(topology, nodes)| {
            at_key(format!(
                "inventory {} has no host for {} of topology `{topology}`: add a [[host]] for \
                 each",
                path.display(),
                named(&nodes)
            ))
        })
        .collect();
    if !errors.is_empty() {
        return Err(SpecErrors { errors });
    }
    let unused = inventory.notes_on_unlisted(
        |n| !needed.contains_key(n),
        |nodes| {
            format!(
                "not used by experiment `{}`: {} in none of its topologies",
                e.name,
                named(nodes)
            )
        },
    );
    Ok(Some(CheckedInventory { inventory, unused }))
}

/// "node `a`", "nodes `a`, `b` (and 3 more)".
fn named(nodes: &[&NodeName]) -> String {
    let shown: Vec<String> = nodes
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("`{n}`"))
        .collect();
    let more = match nodes.len().saturating_sub(NAMES_SHOWN) {
        0 => String::new(),
        n => format!(" (and {n} more)"),
    };
    let noun = if nodes.len() == 1 { "node" } else { "nodes" };
    format!("{noun} {}{more}", shown.join(", "))
}
