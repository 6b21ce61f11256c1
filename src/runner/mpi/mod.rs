//! The MPI peer: a collective point of a workload with `implementation = "open-mpi"` run by
//! Open MPI's own collectives on the same nodes and wires as the worker's ranks.
//!
//! `mpirun` runs on the controller and starts orted on every rank's node through the run's
//! own SSH master connections (an ssh config names each node with its master's control
//! socket), so nothing is installed on the nodes for it and no node holds a key to another:
//! what the run set up is all it needs, and all there is to take down. Each rank is
//! [`command::PROGRAM`] under mpi4py; rank 0 prints every rank's record in the worker's
//! format, which the run stores as it stores the worker's.

mod command;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use orchestrate_worker::record::{RECORD_SCHEMA_VERSION, Record};
use tokio::io::AsyncReadExt;

use crate::plan::experiment::Workload;
use crate::plan::placement::PlannedRank;
use crate::remote::Sessions;
use crate::spec::NodeName;
use crate::topology::Topology;

pub use command::PYTHON;
use command::{MpiPoint, mpirun_args};

/// How long `mpirun` has to stop its ranks after it is asked to, before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Runs Open MPI points of one configuration through the run's SSH connections.
pub struct MpiLauncher {
    /// Holds the ssh config; removed with the launcher.
    _dir: tempfile::TempDir,
    ssh_config: PathBuf,
}

impl MpiLauncher {
    /// Writes the ssh config through which `mpirun` reaches `nodes`: each by its name, through
    /// its master connection in `cluster`.
    pub fn new(cluster: &Sessions, nodes: &[NodeName]) -> Result<MpiLauncher, String> {
        let dir = tempfile::Builder::new()
            .prefix("orch-mpi-")
            .tempdir_in("/tmp")
            .map_err(|e| format!("a directory for mpirun's ssh config: {e}"))?;
        let mut config = String::from(
            "# Written by orchestrate for mpirun: every node through the run's own master\n\
             # connection, never a new login.\n",
        );
        for n in nodes {
            let socket = cluster
                .control_socket(n)
                .ok_or_else(|| format!("{n}: no SSH connection to start its rank through"))?;
            config.push_str(&format!(
                "Host {n}\n    ControlPath {}\n    ControlMaster no\n    BatchMode yes\n",
                socket.display()
            ));
        }
        let ssh_config = dir.path().join("ssh_config");
        std::fs::write(&ssh_config, config)
            .map_err(|e| format!("writing {}: {e}", ssh_config.display()))?;
        Ok(MpiLauncher {
            _dir: dir,
            ssh_config,
        })
    }

    /// Runs one point of collective workload `w` at `size` on `ranks` of `t`, stopping it
    /// after `limit`: every rank's record, and why the point failed if it did.
    pub async fn run(
        &self,
        t: &Topology,
        w: &Workload,
        ranks: &[PlannedRank],
        size: u64,
        limit: Duration,
    ) -> (Vec<Record>, Option<String>) {
        let Some(options) = w.collective.as_ref() else {
            return (
                Vec::new(),
                Some(format!("{} is not a collective", w.pattern.as_str())),
            );
        };
        let point = MpiPoint {
            pattern: w.pattern,
            options,
            amount: w.amount,
            warmup: w.warmup,
            size,
            hosts: ranks.iter().map(|r| r.node.to_string()).collect(),
            subnets: t.subnets.iter().map(|s| s.prefix.trunc()).collect(),
            ssh_config: &self.ssh_config,
            schema: RECORD_SCHEMA_VERSION,
        };
        let args = match mpirun_args(&point) {
            Ok(a) => a,
            Err(e) => return (Vec::new(), Some(e)),
        };
        let (code, stdout, stderr) = match run_bounded(&args, limit).await {
            Ok(out) => out,
            Err(e) => return (Vec::new(), Some(e)),
        };
        let records: Vec<Record> = stdout
            .lines()
            .filter(|l| l.starts_with('{'))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let failure = match code {
            Some(0) if records.len() == ranks.len() => None,
            Some(0) => Some(format!(
                "mpirun printed {} records for {} ranks",
                records.len(),
                ranks.len()
            )),
            Some(c) => Some(format!("mpirun exited with {c}: {}", tail(&stderr))),
            None => Some(format!(
                "mpirun did not finish within {:.0} s and was stopped: {}",
                limit.as_secs_f64(),
                tail(&stderr)
            )),
        };
        (records, failure)
    }
}

/// Runs `args` on the controller for at most `limit`, then asks it to stop (SIGTERM: mpirun
/// then stops its ranks on every node) and kills it after [`STOP_GRACE`]. Its exit code
/// (`None` if it had to be stopped), stdout and stderr.
async fn run_bounded(
    args: &[String],
    limit: Duration,
) -> Result<(Option<i32>, String, String), String> {
    let mut child = tokio::process::Command::new(&args[0])
        .args(&args[1..])
        // Open MPI refuses root without these as well as the flag, in some versions.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {} on the controller: {e}", args[0]))?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let read_out = tokio::spawn(async move {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s).await;
        s
    });
    let read_err = tokio::spawn(async move {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s).await;
        s
    });
    let code = match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => status.map_err(|e| e.to_string())?.code(),
        Err(_) => {
            if let Some(pid) = child.id() {
                // SAFETY: kill(2) on our own child's pid, which it still is: not yet reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            }
            if tokio::time::timeout(STOP_GRACE, child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
            None
        }
    };
    let stdout = read_out.await.unwrap_or_default();
    let stderr = read_err.await.unwrap_or_default();
    Ok((code, stdout, stderr))
}

/// The last lines of what a program printed, for an error message.
fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(8);
    let t = lines[from..].join(" | ");
    if t.is_empty() {
        "nothing on stderr".into()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::experiment::{Amount, CollectiveOptions, Implementation};
    use orchestrate_worker::patterns::halo::Grid;
    use orchestrate_worker::record::{Pattern, Role};

    /// Each collective's program, under the Open MPI the run starts from here, on four ranks
    /// of this machine over loopback: a record per rank, in rank order's set, with the
    /// algorithm that ran and the library named, and a time per iteration.
    #[tokio::test]
    async fn every_collective_runs_under_mpirun_and_prints_a_record_per_rank() {
        let dir = tempfile::tempdir().unwrap();
        // No rank is remote: the agent is never called, but its config must exist.
        let ssh_config = dir.path().join("ssh_config");
        std::fs::write(&ssh_config, "").unwrap();
        let cases = [
            (Pattern::Allreduce, "ring", 1024, "ring"),
            // Two floats among four ranks: Open MPI's ring falls back, and the record says so.
            (Pattern::Allreduce, "ring", 8, "recursive-doubling"),
            (
                Pattern::Allreduce,
                "recursive-doubling",
                1024,
                "recursive-doubling",
            ),
            (Pattern::Alltoall, "pairwise", 100, "pairwise"),
            (Pattern::Alltoall, "linear", 100, "linear"),
            (Pattern::Bcast, "binomial", 3000, "binomial"),
            (Pattern::Halo, "nonblocking", 64, "2x2 periodic"),
        ];
        for (pattern, algorithm, size, ran) in cases {
            let options = CollectiveOptions {
                algorithm,
                rank_nodes: Vec::new(),
                grid: Some("2x2".parse::<Grid>().unwrap()),
                periodic: true,
                root: 2,
                implementation: Implementation::OpenMpi,
            };
            let args = command::mpirun_args(&MpiPoint {
                pattern,
                options: &options,
                amount: Amount::Exchanges(5),
                warmup: 1,
                size,
                hosts: vec!["localhost".into(); 4],
                subnets: vec!["127.0.0.0/8".parse().unwrap()],
                ssh_config: &ssh_config,
                schema: RECORD_SCHEMA_VERSION,
            })
            .unwrap();
            let (code, stdout, stderr) = run_bounded(&args, Duration::from_secs(120))
                .await
                .expect("mpirun starts (Debian: openmpi-bin python3-mpi4py, as .ci/run installs)");
            assert_eq!(code, Some(0), "{pattern:?} {algorithm}: {stderr}");
            let records: Vec<Record> = stdout
                .lines()
                .map(|l| serde_json::from_str(l).expect(l))
                .collect();
            let mut ranks: Vec<u32> = records.iter().filter_map(|r| r.rank).collect();
            ranks.sort_unstable();
            assert_eq!(ranks, [0, 1, 2, 3], "{stdout}");
            for r in &records {
                assert_eq!((r.pattern, r.role), (pattern, Role::Rank));
                assert_eq!(r.algorithm.as_deref(), Some(ran), "{pattern:?}");
                assert_eq!((r.size_bytes, r.messages, r.ranks), (size, 5, Some(4)));
                assert!(r.error.is_none(), "{r:?}");
                assert!(r.latency_us.is_some_and(|t| t > 0.0));
                assert!(
                    r.implementation
                        .as_deref()
                        .is_some_and(|i| i.starts_with("Open MPI") && i.contains("mpi4py")),
                    "{:?}",
                    r.implementation
                );
            }
        }
    }
}
