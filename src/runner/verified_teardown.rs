//! Which of a run directory's teardown scripts `orchestrate teardown` (and `--resume`) may
//! run: only what this controller renders itself. The configuration the ledger names is
//! planned again from the run's experiment, each of the ledger's nodes is rendered again under
//! every bond driver a probe could have settled on, and a recorded script runs only if it is
//! one of those renderings, byte for byte. The ledger's other values are checked against the
//! plan too, so an edited `ledger.json` cannot point the teardown at another file.

use std::collections::BTreeMap;

use anyhow::{Context, bail};

use crate::netconf;
use crate::plan::{self, Configuration};
use crate::results::run_dir::{Ledger, RunDir};
use crate::spec::NodeName;
use crate::topology::{Node, Topology};

use super::apply::NODE_LEDGER;

/// A node's teardown script as the run recorded it, verified, and how many steps it undoes.
pub struct VerifiedTeardown {
    pub script: String,
    pub steps: usize,
}

/// Each of the ledger's nodes and its teardown script, every one verified as described above.
pub fn verified_teardowns(
    run: &RunDir,
    ledger: &Ledger,
) -> anyhow::Result<BTreeMap<NodeName, VerifiedTeardown>> {
    if ledger.node_ledger != NODE_LEDGER {
        bail!(
            "{}: names the node ledger {:?}, where this orchestrate keeps it at {NODE_LEDGER}; refusing a changed ledger",
            run.ledger_json().display(),
            ledger.node_ledger
        );
    }
    let config = planned_configuration(run, ledger)?;
    let scripts = run.scripts_dir(config.id, config.topology.name.as_str());
    let mut teardowns = BTreeMap::new();
    for n in &ledger.nodes {
        let Some(node) = config.topology.nodes.iter().find(|x| x.name == *n) else {
            bail!(
                "{}: names node {n}, which configuration {} ({}) does not have; refusing a changed ledger",
                run.ledger_json().display(),
                config.id,
                config.topology.name
            );
        };
        let path = RunDir::teardown_script(&scripts, n.as_str());
        let recorded = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let Some(steps) = renderings(&config.topology, node)
            .into_iter()
            .find_map(|(script, steps)| (script == recorded).then_some(steps))
        else {
            bail!(
                "{}: not the teardown this orchestrate renders for {n} in configuration {} ({}): \
                 it was changed, or written by another version. Refusing to run it; read it, and \
                 if you trust it, run it on {n} yourself (`sh -s -- {NODE_LEDGER} < script`)",
                path.display(),
                config.id,
                config.topology.name
            );
        };
        teardowns.insert(
            n.clone(),
            VerifiedTeardown {
                script: recorded,
                steps,
            },
        );
    }
    Ok(teardowns)
}

/// The configuration the ledger names, planned again from the run's own experiment.
fn planned_configuration(run: &RunDir, ledger: &Ledger) -> anyhow::Result<Configuration> {
    let path = run.experiment_toml();
    let experiment = plan::load(&path).map_err(|errors| {
        let text: Vec<String> = errors.errors.iter().map(|e| e.to_string()).collect();
        anyhow::anyhow!(
            "{}: cannot plan the run again to check its teardown scripts:\n{}",
            path.display(),
            text.join("\n")
        )
    })?;
    let plan = plan::expand(&experiment)?;
    let Some(config) = plan
        .configurations
        .into_iter()
        .find(|c| c.id == ledger.configuration)
    else {
        bail!(
            "{}: names configuration {}, which the run's plan does not have; refusing a changed ledger",
            run.ledger_json().display(),
            ledger.configuration
        );
    };
    if config.topology.name.as_str() != ledger.topology {
        bail!(
            "{}: names topology {:?} for configuration {}, where the run's plan has {}; refusing a changed ledger",
            run.ledger_json().display(),
            ledger.topology,
            config.id,
            config.topology.name
        );
    }
    Ok(config)
}

/// Every teardown the controller may have written for `node`, with its number of steps: as
/// planned, and with its `auto` bonds settled either way.
fn renderings(t: &Topology, node: &Node) -> Vec<(String, usize)> {
    let render = |n: &Node| {
        let scripts = netconf::render(t, n);
        (scripts.teardown, scripts.steps.len())
    };
    vec![
        render(node),
        render(&netconf::settle_bond_drivers(node, true)),
        render(&netconf::settle_bond_drivers(node, false)),
    ]
}
