//! Before anything on a node changes: every program the run will call there is installed.
//! The apply script checks its own and its teardown's too, but only once it runs, and the
//! path checks (which come after the configuration) call `ping` on the pairs' clients; this
//! looks on every node at once, before the ledger is written, and names every missing
//! program of every node.

use anyhow::bail;

use crate::plan::Configuration;
use crate::remote::Sessions;
use crate::spec::NodeName;

use super::node::fanout::{EXEC_TIMEOUT, listed, on_all};
use super::path_proofs;
use super::prepare::Prepared;

/// What each node of `config` needs: its scripts' programs, and the path checks' on the
/// pairs' clients.
pub fn needed(config: &Configuration, prepared: &Prepared) -> Vec<(NodeName, Vec<&'static str>)> {
    let checking = path_proofs::checking_nodes(config);
    prepared
        .scripts
        .iter()
        .map(|(n, s)| {
            let mut programs = s.tools.clone();
            if checking.contains(n) {
                programs.extend(path_proofs::PROGRAMS);
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

/// Fails, naming each node and what it lacks, unless every node has every program it needs.
pub async fn check(
    cluster: &Sessions,
    config: &Configuration,
    prepared: &Prepared,
) -> anyhow::Result<()> {
    let needed = needed(config, prepared);
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let prepared = Prepared {
            workers: Default::default(),
            probes: Default::default(),
            bond_driver: None,
            scripts: config
                .topology
                .nodes
                .iter()
                .map(|n| (n.name.clone(), crate::netconf::render(&config.topology, n)))
                .collect(),
        };
        let clients = path_proofs::checking_nodes(config);
        assert!(!clients.is_empty() && clients.len() < config.topology.nodes.len());
        for (n, programs) in needed(config, &prepared) {
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
}
