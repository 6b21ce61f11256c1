//! Before anything on a node changes: every program the run will call there is installed.
//! The apply script checks its own and its teardown's too, but only once it runs, and the
//! path checks (which come after the configuration) call `ping` on the pairs' clients; this
//! looks on every node at once, before the ledger is written, and names every missing
//! program of every node.

use std::collections::BTreeSet;

use anyhow::bail;

use crate::plan::{Configuration, Experiment};
use crate::remote::Sessions;
use crate::spec::NodeName;

use super::mpi::PYTHON;
use super::node::fanout::{EXEC_TIMEOUT, listed, on_all};
use super::path_proofs;
use super::prepare::Prepared;

/// What a node holding a rank of a collective Open MPI runs needs: the daemon `mpirun`
/// starts there, and the Python that has mpi4py.
pub const MPI_RANK_PROGRAMS: [&str; 2] = ["orted", PYTHON];

/// The nodes of `config` that hold a rank of a collective that Open MPI runs.
pub fn mpi_rank_nodes(exp: &Experiment, config: &Configuration) -> BTreeSet<NodeName> {
    config
        .placements
        .iter()
        .filter(|e| exp.workloads[e.workload].runs_on_open_mpi())
        .flat_map(|e| e.placement.ranks.iter().map(|r| r.node.clone()))
        .collect()
}

/// What each node of `config` needs: its scripts' programs, the path checks' on the pairs'
/// clients, and Open MPI's on `mpi_nodes`.
pub fn needed(
    config: &Configuration,
    prepared: &Prepared,
    mpi_nodes: &BTreeSet<NodeName>,
) -> Vec<(NodeName, Vec<&'static str>)> {
    let checking = path_proofs::checking_nodes(config);
    prepared
        .scripts
        .iter()
        .map(|(n, s)| {
            let mut programs = s.tools.clone();
            if checking.contains(n) {
                programs.extend(path_proofs::PROGRAMS);
            }
            if mpi_nodes.contains(n) {
                programs.extend(MPI_RANK_PROGRAMS);
            }
            programs.sort_unstable();
            programs.dedup();
            (n.clone(), programs)
        })
        .collect()
}

/// A shell line printing, space-separated, those of `programs` that are not installed.
pub fn missing_command(programs: &[&str]) -> String {
    format!(
        "for p in {}; do command -v \"$p\" >/dev/null 2>&1 || printf '%s ' \"$p\"; done",
        programs.join(" ")
    )
}

/// Fails, naming each node and what it lacks, unless every node has every program it needs
/// (and the controller `mpirun`, where Open MPI runs a collective).
pub async fn check(
    cluster: &Sessions,
    exp: &Experiment,
    config: &Configuration,
    prepared: &Prepared,
) -> anyhow::Result<()> {
    let mpi_nodes = mpi_rank_nodes(exp, config);
    if !mpi_nodes.is_empty() && !on_controller("mpirun") {
        bail!(
            "a collective runs on Open MPI, which is started from here, but this machine has no \
             `mpirun` (Debian: openmpi-bin, the same version as the nodes'); nothing was changed"
        );
    }
    let needed = needed(config, prepared, &mpi_nodes);
    let nodes: Vec<NodeName> = needed.iter().map(|(n, _)| n.clone()).collect();
    let (_, errors) = on_all(&nodes, |n| {
        let programs = &needed.iter().find(|(m, _)| *m == n).expect("listed").1;
        async move {
            let out = cluster
                .run(&n, &missing_command(programs), None, EXEC_TIMEOUT)
                .await?;
            match out.stdout.split_whitespace().collect::<Vec<_>>() {
                none if none.is_empty() => Ok(()),
                missing => bail!("{n}: missing {}", missing.join(", ")),
            }
        }
    })
    .await;
    if !errors.is_empty() {
        bail!(
            "programs the run needs are not installed, nothing was changed:\n  {}",
            listed(&errors)
        );
    }
    Ok(())
}

/// Whether `program` is on the controller's PATH.
fn on_controller(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &missing_command(&[program])])
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `config` prepared as far as its scripts: each node's rendered.
    fn rendered(config: &Configuration) -> Prepared {
        Prepared {
            workers: Default::default(),
            probes: Default::default(),
            bond_driver: None,
            scripts: config
                .topology
                .nodes
                .iter()
                .map(|n| (n.name.clone(), crate::netconf::render(&config.topology, n)))
                .collect(),
        }
    }

    #[test]
    fn clients_of_the_path_checks_need_ping_and_every_node_its_scripts_programs() {
        let dir = tempfile::tempdir().unwrap();
        let topology = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/topologies/routed-mesh-4x4.toml"
        );
        let path = dir.path().join("e.toml");
        std::fs::write(
            &path,
            format!(
                "topologies = [{topology:?}]\n[[workload]]\npattern = \"token\"\nsizes = [64]\n\
                 pairs = [1]\nexchanges = 10\n"
            ),
        )
        .unwrap();
        let plan = crate::plan::expand(&crate::plan::load(&path).unwrap()).unwrap();
        let config = &plan.configurations[0];
        let prepared = rendered(config);
        let clients = path_proofs::checking_nodes(config);
        assert!(!clients.is_empty() && clients.len() < config.topology.nodes.len());
        for (n, programs) in needed(config, &prepared, &BTreeSet::new()) {
            assert!(
                !programs.contains(&"orted"),
                "{n}: no collective runs on Open MPI"
            );
            assert_eq!(programs.contains(&"ping"), clients.contains(&n), "{n}");
            for p in &prepared.scripts[&n].tools {
                assert!(programs.contains(p), "{n}: {p}");
            }
        }
    }

    #[test]
    fn the_check_prints_exactly_the_missing_programs() {
        let dir = tempfile::tempdir().unwrap();
        let sh = std::process::Command::new("sh")
            .args(["-c", "command -v sh"])
            .output()
            .unwrap();
        let sh = String::from_utf8(sh.stdout).unwrap();
        std::os::unix::fs::symlink(sh.trim(), dir.path().join("sh")).unwrap();
        let out = std::process::Command::new(sh.trim())
            .args(["-c", &missing_command(&["sh", "ping", "no-such-program"])])
            .env("PATH", dir.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "ping no-such-program "
        );
    }

    /// Where Open MPI runs a collective, every node holding one of its ranks needs orted and
    /// the Python that has mpi4py; where only the worker does, none does.
    #[test]
    fn ranks_that_open_mpi_runs_need_orted_and_python() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/mpi-peer.toml");
        let exp = crate::plan::load(std::path::Path::new(path)).unwrap();
        let plan = crate::plan::expand(&exp).unwrap();
        let config = &plan.configurations[0];
        let mpi_nodes = mpi_rank_nodes(&exp, config);
        assert_eq!(mpi_nodes.len(), 16);
        let prepared = rendered(config);
        for (n, programs) in needed(config, &prepared, &mpi_nodes) {
            for p in MPI_RANK_PROGRAMS {
                assert!(programs.contains(&p), "{n}: {p}");
            }
        }
        let mut worker_only = exp.clone();
        worker_only.workloads.retain(|w| !w.runs_on_open_mpi());
        let plan = crate::plan::expand(&worker_only).unwrap();
        assert!(mpi_rank_nodes(&worker_only, &plan.configurations[0]).is_empty());
    }
}
