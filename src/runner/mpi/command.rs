//! `mpirun`'s command line for one collective point run by Open MPI: one rank per planned
//! node in rank order, orted started over the controller's own SSH connections, the ranks'
//! traffic on the experiment's subnets only, and the collective's algorithm fixed to the one
//! the worker runs (`coll_tuned_*_algorithm`), so the two are compared step for step.

use std::path::Path;

use ipnet::Ipv4Net;
use orchestrate_worker::record::Pattern;
use serde::Serialize;

use crate::plan::experiment::{Amount, CollectiveOptions};

/// The rank program, given to Python as text: no node needs a copy of it.
pub const PROGRAM: &str = include_str!("ranks.py");

/// The interpreter the rank program runs under: Debian's, which has `python3-mpi4py`, named
/// in full because orted's environment is not a login shell's.
pub const PYTHON: &str = "/usr/bin/python3";

/// What one point runs.
pub struct MpiPoint<'a> {
    pub pattern: Pattern,
    pub options: &'a CollectiveOptions,
    pub amount: Amount,
    pub warmup: u64,
    pub size: u64,
    /// Each rank's node as the ssh config names it, in rank order.
    pub hosts: Vec<String>,
    /// The experiment's subnets: the ranks' traffic stays on them.
    pub subnets: Vec<Ipv4Net>,
    /// The ssh config that reaches every node through the controller's connections.
    pub ssh_config: &'a Path,
    /// The record schema the controller reads.
    pub schema: u32,
}

/// Open MPI's number for a collective's algorithm (`ompi_info --param coll tuned --level 9`),
/// and further settings it needs; none for the halo, which is point-to-point only.
fn tuned(pattern: Pattern, algorithm: &str) -> Result<Vec<(&'static str, &'static str)>, String> {
    let unknown = || format!("Open MPI runs no {} \"{algorithm}\" here", pattern.as_str());
    Ok(match (pattern, algorithm) {
        (Pattern::Allreduce, "recursive-doubling") => {
            vec![("coll_tuned_allreduce_algorithm", "3")]
        }
        (Pattern::Allreduce, "ring") => vec![("coll_tuned_allreduce_algorithm", "4")],
        (Pattern::Alltoall, "linear") => vec![("coll_tuned_alltoall_algorithm", "1")],
        (Pattern::Alltoall, "pairwise") => vec![("coll_tuned_alltoall_algorithm", "2")],
        // The binomial tree, unsegmented as the worker sends it.
        (Pattern::Bcast, "binomial") => vec![
            ("coll_tuned_bcast_algorithm", "6"),
            ("coll_tuned_bcast_algorithm_segmentsize", "0"),
        ],
        (Pattern::Halo, _) => Vec::new(),
        _ => return Err(unknown()),
    })
}

/// `mpirun` and its arguments.
pub fn mpirun_args(p: &MpiPoint<'_>) -> Result<Vec<String>, String> {
    let subnets: Vec<String> = p.subnets.iter().map(Ipv4Net::to_string).collect();
    let subnets = subnets.join(",");
    let mut mca: Vec<(&str, String)> = vec![
        // orted on every node through the controller's master connections, all started from
        // here: the nodes hold no key to reach each other.
        (
            "plm_rsh_agent",
            format!("ssh -F {}", p.ssh_config.display()),
        ),
        ("plm_rsh_no_tree_spawn", "1".into()),
        // TCP on the experiment's wires, never the management network...
        ("pml", "ob1".into()),
        ("btl", "tcp,self".into()),
        ("btl_tcp_if_include", subnets.clone()),
        // ...and Open MPI's own control traffic anywhere but on them.
        ("oob_tcp_if_exclude", format!("127.0.0.0/8,{subnets}")),
        // Ranks poll for progress; on nodes that share a machine's cores they yield when idle,
        // or sixteen spinning ranks would take the cores their own wires' packets need.
        ("mpi_yield_when_idle", "1".into()),
    ];
    let algorithm = tuned(p.pattern, p.options.algorithm)?;
    if !algorithm.is_empty() {
        mca.push(("coll_tuned_use_dynamic_rules", "1".into()));
        mca.extend(algorithm.into_iter().map(|(k, v)| (k, v.to_owned())));
    }
    let mut args: Vec<String> = vec![
        "mpirun".into(),
        "--allow-run-as-root".into(),
        "-np".into(),
        p.hosts.len().to_string(),
        "--host".into(),
        p.hosts.join(","),
        // Rank i on the i-th host; one rank per node, never pinned to a core the node shares.
        "--map-by".into(),
        "node".into(),
        "--bind-to".into(),
        "none".into(),
    ];
    for (k, v) in mca {
        args.extend(["--mca".into(), k.into(), v]);
    }
    let settings = serde_json::to_string(&settings(p)).map_err(|e| e.to_string())?;
    args.extend([PYTHON.into(), "-c".into(), PROGRAM.into(), settings]);
    Ok(args)
}

/// The rank program's settings, its one argument (a JSON object).
#[derive(Debug, Serialize, PartialEq)]
struct Settings<'a> {
    pattern: &'a str,
    algorithm: &'a str,
    size: u64,
    warmup: u64,
    schema: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<u64>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    duration: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    grid: Option<String>,
    periodic: bool,
    root: u32,
}

fn settings<'a>(p: &'a MpiPoint<'a>) -> Settings<'a> {
    let o = p.options;
    let (iterations, duration) = match p.amount {
        Amount::Exchanges(n) => (Some(n), None),
        // To the millisecond, as the worker's durations are written.
        Amount::Duration(d) => (None, Some((d.as_secs_f64() * 1e3).round() / 1e3)),
    };
    Settings {
        pattern: p.pattern.as_str(),
        algorithm: o.algorithm,
        size: p.size,
        warmup: p.warmup,
        schema: p.schema,
        iterations,
        duration,
        grid: o
            .grid
            .filter(|_| p.pattern == Pattern::Halo)
            .map(|g| g.to_string()),
        periodic: o.periodic && p.pattern == Pattern::Halo,
        root: if p.pattern == Pattern::Bcast {
            o.root
        } else {
            0
        },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::plan::experiment::Implementation;

    fn options(algorithm: &'static str) -> CollectiveOptions {
        CollectiveOptions {
            algorithm,
            rank_nodes: Vec::new(),
            grid: None,
            periodic: false,
            root: 0,
            implementation: Implementation::OpenMpi,
        }
    }

    fn args(pattern: Pattern, o: &CollectiveOptions) -> Result<Vec<String>, String> {
        mpirun_args(&MpiPoint {
            pattern,
            options: o,
            amount: Amount::Duration(Duration::from_millis(2500)),
            warmup: 3,
            size: 1024,
            hosts: vec!["n01".into(), "n05".into(), "n02".into()],
            subnets: vec![
                "10.1.0.0/24".parse().unwrap(),
                "10.2.0.0/24".parse().unwrap(),
            ],
            ssh_config: Path::new("/tmp/x/ssh_config"),
            schema: 7,
        })
    }

    fn mca<'a>(args: &'a [String], key: &str) -> Option<&'a str> {
        args.windows(3)
            .find(|w| w[0] == "--mca" && w[1] == key)
            .map(|w| w[2].as_str())
    }

    /// The ranks go on the hosts in rank order, their traffic on the experiment's subnets
    /// and Open MPI's control traffic off them, and the algorithm is the worker's.
    #[test]
    fn a_ring_allreduce_runs_ring_on_the_experiment_wires_in_rank_order() {
        let a = args(Pattern::Allreduce, &options("ring")).unwrap();
        let at = a.iter().position(|x| x == "--host").unwrap();
        assert_eq!(a[at + 1], "n01,n05,n02");
        assert_eq!(a[a.iter().position(|x| x == "-np").unwrap() + 1], "3");
        assert_eq!(
            mca(&a, "btl_tcp_if_include"),
            Some("10.1.0.0/24,10.2.0.0/24")
        );
        assert_eq!(
            mca(&a, "oob_tcp_if_exclude"),
            Some("127.0.0.0/8,10.1.0.0/24,10.2.0.0/24")
        );
        assert_eq!(mca(&a, "coll_tuned_use_dynamic_rules"), Some("1"));
        assert_eq!(mca(&a, "coll_tuned_allreduce_algorithm"), Some("4"));
        assert_eq!(mca(&a, "plm_rsh_agent"), Some("ssh -F /tmp/x/ssh_config"));
        let program = a.iter().position(|x| x == PROGRAM).unwrap();
        assert_eq!(a[program - 1], "-c");
        assert_eq!(
            program + 2,
            a.len(),
            "the settings are the program's one argument"
        );
        let settings: serde_json::Value = serde_json::from_str(&a[program + 1]).unwrap();
        assert_eq!(
            settings,
            serde_json::json!({
                "pattern": "allreduce",
                "algorithm": "ring",
                "size": 1024,
                "warmup": 3,
                "schema": 7,
                "duration": 2.5,
                "periodic": false,
                "root": 0,
            })
        );
    }

    #[test]
    fn each_algorithm_has_its_own_number_and_the_halo_none() {
        let number = |p, alg: &'static str, key| {
            mca(&args(p, &options(alg)).unwrap(), key).map(str::to_owned)
        };
        assert_eq!(
            number(
                Pattern::Allreduce,
                "recursive-doubling",
                "coll_tuned_allreduce_algorithm"
            ),
            Some("3".into())
        );
        assert_eq!(
            number(
                Pattern::Alltoall,
                "pairwise",
                "coll_tuned_alltoall_algorithm"
            ),
            Some("2".into())
        );
        assert_eq!(
            number(Pattern::Alltoall, "linear", "coll_tuned_alltoall_algorithm"),
            Some("1".into())
        );
        assert_eq!(
            number(Pattern::Bcast, "binomial", "coll_tuned_bcast_algorithm"),
            Some("6".into())
        );
        assert_eq!(
            number(
                Pattern::Bcast,
                "binomial",
                "coll_tuned_bcast_algorithm_segmentsize"
            ),
            Some("0".into())
        );
        let halo = args(Pattern::Halo, &options("nonblocking")).unwrap();
        assert_eq!(mca(&halo, "coll_tuned_use_dynamic_rules"), None);
        assert!(args(Pattern::Alltoall, &options("bruck")).is_err());
    }
}
