//! Undoing a configuration: every node's teardown script, on success, failure and Ctrl-C
//! alike. The ledger keeps only the nodes that could not be cleaned, for
//! `orchestrate teardown <run-dir>` to finish later.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};

use crate::netconf;
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
    let mut teardowns = BTreeMap::new();
    let mut errors = Vec::new();
    for (n, s) in &prepared.scripts {
        match with_copy(&s.teardown, s.steps.len(), ledger.copies.get(n)) {
            Ok(script) => {
                teardowns.insert(n.clone(), script);
            }
            Err(e) => errors.push(format!("{n}: {e}")),
        }
    }
    let began = std::time::Instant::now();
    let (clean, failed) = run_scripts(cluster, &teardowns, NODE_LEDGER).await;
    let took = began.elapsed().as_secs_f64();
    errors.extend(failed);
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
            "configuration {}: torn down on every node in {took:.1} s",
            config.id
        ));
    } else {
        state.writer.write_ledger(&ledger)?;
        let msg = format!(
            "teardown left changes on some nodes after {took:.1} s (kept in ledger.json; \
             `orchestrate teardown {}` retries):\n  {}",
            state.writer.root().display(),
            listed(&errors)
        );
        state.writer.log(&msg);
        state.progress.say(&msg);
    }
    Ok(())
}

/// `script` with the run's copy of the node's ledger handed to it, when the run has one.
fn with_copy(script: &str, steps: usize, copy: Option<&Vec<String>>) -> anyhow::Result<String> {
    Ok(match copy {
        Some(copy) => netconf::copy_preamble(copy, steps).map_err(anyhow::Error::msg)? + script,
        None => script.to_owned(),
    })
}

/// What a node's teardown says it found, from what it printed.
enum Found {
    /// Its own ledger, complete.
    Ledger,
    /// Steps its ledger lacked, taken from the run's copy (each undone only where still as
    /// the run made it; any other is named on stderr and fails the script).
    FromCopy(String),
    /// No ledger and no copy: nothing tells what the run changed there.
    Nothing,
}

fn found(teardown_out: &str) -> Found {
    let lines = || teardown_out.lines().map(str::trim);
    if lines().any(|l| l == netconf::NO_LEDGER_LINE) {
        Found::Nothing
    } else if let Some(steps) = lines().find_map(|l| l.strip_prefix(netconf::FROM_COPY_PREFIX)) {
        Found::FromCopy(steps.trim().to_owned())
    } else {
        Found::Ledger
    }
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
    let mut teardowns = BTreeMap::new();
    for (n, t) in verified_teardowns(&run, &l)? {
        let script = with_copy(&t.script, t.steps, l.copies.get(&n))
            .with_context(|| format!("{}: node {n}", run.ledger_json().display()))?;
        teardowns.insert(n, script);
    }
    let cluster = connect(
        &l.inventory,
        &l.nodes,
        "cannot reach every node of the ledger",
    )
    .await?;
    let (clean, mut errors) = run_scripts(&cluster, &teardowns, &l.node_ledger).await;
    cluster.close().await;
    for (n, out) in &clean {
        match found(out) {
            Found::Ledger => eprintln!("{n}: undone from its ledger"),
            Found::FromCopy(steps) => eprintln!(
                "{n}: its ledger was missing steps {steps}; each was undone from the run's copy, \
                 where still exactly as the run made it"
            ),
            // An empty copy: the run changed nothing there.
            Found::Nothing if l.copies.contains_key(n) => {
                eprintln!("{n}: the run changed nothing there")
            }
            Found::Nothing => errors.push(format!(
                "{n}: has no ledger at {}, and the run has no copy of it (its apply had not \
                 finished): whatever the run changed there is unknown; compare the node with \
                 the run's scripts ({}) by hand",
                l.node_ledger,
                run.scripts_dir(l.configuration, &l.topology).display()
            )),
        }
    }
    if !errors.is_empty() {
        let left_alone = if errors.iter().any(|e| e.contains("left alone step")) {
            format!(
                "\na change left alone is no longer the run's: check it on its node, then remove {} \
                 yourself",
                run.ledger_json().display()
            )
        } else {
            String::new()
        };
        bail!(
            "teardown could not put every node back as it was (ledger.json kept):\n  {}{left_alone}",
            listed(&errors)
        );
    }
    std::fs::remove_file(run.ledger_json())?;
    eprintln!(
        "{}: every node of the ledger is back as it was",
        dir.display()
    );
    Ok(())
}
