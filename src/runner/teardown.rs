//! Undoing a configuration: every node's teardown script, on success, failure and Ctrl-C
//! alike. The ledger keeps only the nodes that could not be cleaned, for
//! `orchestrate teardown <run-dir>` to finish later.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::bail;

use crate::plan::Configuration;
use crate::remote::{NodeSource, Sessions};
use crate::results::run_dir::{Ledger, RunDir, read_ledger, trust};
use crate::spec::NodeName;

use super::apply::NODE_LEDGER;
use super::node::connect::connect;
use super::node::fanout::{listed, run_scripts};
use super::prepare::Prepared;
use super::show::events::Event;
use super::state::RunState;
use super::verified_teardown::verified_teardowns;

/// Tears the configuration down on every node and updates the ledger.
pub async fn teardown(
    cluster: &Sessions,
    config: &Configuration,
    prepared: &Prepared,
    mut ledger: Ledger,
    state: &mut RunState,
) -> anyhow::Result<()> {
    let teardowns: BTreeMap<NodeName, String> = prepared
        .scripts
        .iter()
        .map(|(n, s)| (n.clone(), s.teardown.clone()))
        .collect();
    let (clean, errors) = run_scripts(cluster, &teardowns, NODE_LEDGER).await;
    // A userspace bond's teardown prints its final counters: keep them, so a reader can see
    // which wire carried what (per slave, per flow).
    let bond_counters = userspace_bond_counters(config, &clean);
    if !bond_counters.is_empty() {
        state.writer.append_bonds(&bond_counters)?;
    }
    ledger.nodes.retain(|n| !clean.contains_key(n));
    state.events.emit(Event::Teardown {
        configuration: config.id,
        clean: ledger.nodes.is_empty(),
        nodes_left: ledger.nodes.iter().map(|n| n.to_string()).collect(),
    });
    if ledger.nodes.is_empty() {
        state.writer.clear_ledger()?;
        state.writer.log(&format!(
            "configuration {}: torn down on every node",
            config.id
        ));
    } else {
        state.writer.write_ledger(&ledger)?;
        let msg = format!(
            "teardown left changes on some nodes (kept in ledger.json; `orchestrate teardown {}` retries):\n  {}",
            state.writer.root().display(),
            listed(&errors)
        );
        state.writer.log(&msg);
        state.progress.say(&msg);
    }
    Ok(())
}

/// The `exit` lines userspace bonds print when teardown stops them, with the configuration
/// and node they came from.
fn userspace_bond_counters(
    config: &Configuration,
    teardown_out: &BTreeMap<NodeName, String>,
) -> Vec<serde_json::Value> {
    teardown_out
        .iter()
        .flat_map(|(node, out)| out.lines().map(move |l| (node, l)))
        .filter_map(|(node, line)| {
            let mut v: serde_json::Value = serde_json::from_str(line).ok()?;
            (v.get("event")? == "exit").then_some(())?;
            let obj = v.as_object_mut()?;
            obj.insert("configuration".into(), config.id.into());
            obj.insert("topology".into(), config.topology.name.to_string().into());
            obj.insert("bonding".into(), config.bonding_label().into());
            obj.insert("node".into(), node.to_string().into());
            Some(v)
        })
        .collect()
}

/// `orchestrate teardown <run-dir>`: undoes what the run's ledger says is still applied.
/// `source` is where the run's nodes came from: nodes it no longer has took their changes
/// with them. Refuses a run directory another user could have written, and runs only the
/// teardown scripts this controller renders itself ([`verified_teardowns`]).
pub async fn teardown_from_ledger(dir: &Path, source: &dyn NodeSource) -> anyhow::Result<()> {
    let run = RunDir::new(dir);
    trust::check(&run)?;
    let Some(l) = read_ledger(&run)? else {
        eprintln!("{}: no ledger, nothing to undo", dir.display());
        return Ok(());
    };
    if let Some(owner) = &l.owner
        && !source.still_exists(owner)?
    {
        std::fs::remove_file(run.ledger_json())?;
        eprintln!(
            "{}: the nodes of the ledger ({owner}) are gone, and the run's changes with them",
            dir.display()
        );
        return Ok(());
    }
    let teardowns = verified_teardowns(&run, &l)?;
    let cluster = connect(
        &l.inventory,
        &l.nodes,
        "cannot reach every node of the ledger",
    )
    .await?;
    let (_, errors) = run_scripts(&cluster, &teardowns, &l.node_ledger).await;
    cluster.close().await;
    if !errors.is_empty() {
        bail!("teardown failed:\n  {}", listed(&errors));
    }
    std::fs::remove_file(run.ledger_json())?;
    eprintln!(
        "{}: every node of the ledger is back as it was",
        dir.display()
    );
    Ok(())
}
