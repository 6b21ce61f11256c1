//! A collective point's ranks: the worker command line of each, on its node. Rank i reaches
//! rank j at the address its planned path to j ends on, and accepts on every experiment
//! address of its node (the ranks after it reach it at different ones), one port above the
//! servers'.

use std::time::Duration;

use orchestrate_worker::invocation::Invocation;
use orchestrate_worker::patterns::allreduce::{AllreduceAlgorithm, AllreduceArgs};
use orchestrate_worker::patterns::alltoall::{AlltoallAlgorithm, AlltoallArgs};
use orchestrate_worker::patterns::bcast::BcastArgs;
use orchestrate_worker::patterns::client_args::{GoArg, Sizes};
use orchestrate_worker::patterns::halo::HaloArgs;
use orchestrate_worker::ranks::RankArgs;
use orchestrate_worker::ranks::args::DEFAULT_TIMEOUT_S;
use orchestrate_worker::record::Pattern;

use crate::plan::experiment::{Amount, CollectiveOptions, Workload};
use crate::plan::placement::PlannedRank;
use crate::spec::NodeName;
use crate::topology::Topology;

use super::listen::listen_addresses;

/// The port a collective's ranks accept on, given the servers' port.
pub fn rank_port(server_port: u16) -> Result<u16, String> {
    server_port.checked_add(1).ok_or_else(|| {
        format!("port {server_port} leaves no port above it for a collective's ranks")
    })
}

/// Each rank's node and worker command line, in rank order, for a point of workload `w` at
/// `size` estimated to take `estimate`.
pub fn commands(
    t: &Topology,
    w: &Workload,
    ranks: &[PlannedRank],
    size: u64,
    port: u16,
    estimate: Duration,
) -> Result<Vec<(NodeName, Vec<String>)>, String> {
    let c = w
        .collective
        .as_ref()
        .ok_or_else(|| format!("{} is not a collective", w.pattern.as_str()))?;
    ranks
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let listen = listen_addresses(t, &r.node, port).map_err(|e| e.to_string())?;
            let peers = r
                .targets
                .iter()
                .map(|target| match target {
                    Some(a) => format!("{a}:{port}"),
                    None => listen[0].clone(),
                })
                .collect();
            let args = rank_args(w, i as u32, peers, listen, size, estimate);
            Ok((r.node.clone(), invocation(w.pattern, c, args)?.to_args()))
        })
        .collect()
}

/// The options every rank of the point shares but its rank and addresses.
fn rank_args(
    w: &Workload,
    rank: u32,
    peers: Vec<String>,
    listen: Vec<String>,
    size: u64,
    estimate: Duration,
) -> RankArgs {
    let (iterations, duration) = match w.amount {
        Amount::Exchanges(n) => (Some(n), None),
        // To the millisecond, as durations are written.
        Amount::Duration(d) => (
            None,
            Some(format!("{:.3}", d.as_secs_f64()).parse().expect("a number")),
        ),
    };
    // A rank waits at a barrier for the slowest rank's iteration, which may be most of the
    // point, and the model may be short of it by more than the point's count of iterations
    // (16 senders on one bus collide, drop and time out): three times the point's estimate
    // and half a minute, never less than the worker's default, and still inside the
    // runner's own limit for the point (four times and a minute).
    let allowed = estimate
        .saturating_mul(3)
        .saturating_add(Duration::from_secs(30))
        .as_secs_f64()
        .ceil();
    RankArgs {
        listen,
        sizes: Sizes::one(size),
        iterations,
        duration,
        warmup: w.warmup,
        go: Some(GoArg::Stdin),
        timeout: allowed.max(DEFAULT_TIMEOUT_S),
        ..RankArgs::new(rank, peers)
    }
}

fn invocation(p: Pattern, c: &CollectiveOptions, ranks: RankArgs) -> Result<Invocation, String> {
    let unknown = || format!("{} has no algorithm \"{}\"", p.as_str(), c.algorithm);
    Ok(match p {
        Pattern::Allreduce => Invocation::Allreduce(AllreduceArgs {
            ranks,
            algorithm: match c.algorithm {
                "ring" => AllreduceAlgorithm::Ring,
                "recursive-doubling" => AllreduceAlgorithm::RecursiveDoubling,
                _ => return Err(unknown()),
            },
        }),
        Pattern::Alltoall => Invocation::Alltoall(AlltoallArgs {
            ranks,
            algorithm: match c.algorithm {
                "pairwise" => AlltoallAlgorithm::Pairwise,
                "linear" => AlltoallAlgorithm::Linear,
                _ => return Err(unknown()),
            },
        }),
        Pattern::Bcast => Invocation::Bcast(BcastArgs {
            ranks,
            root: c.root,
        }),
        Pattern::Halo => Invocation::Halo(HaloArgs {
            ranks,
            grid: c.grid,
            periodic: c.periodic,
        }),
        other => return Err(format!("{} is not a collective", other.as_str())),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every rank of every collective point of the shipped experiment gets a command line
    /// the worker parses, naming its own rank and, for every other rank, the address its
    /// planned path ends on.
    #[test]
    fn every_rank_of_the_applications_experiment_gets_a_line_the_worker_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/applications.toml");
        let exp = crate::plan::load(&path).expect("a shipped experiment loads");
        let plan = crate::plan::expand(&exp).expect("it plans");
        let mut seen = 0;
        for p in plan.points.iter().filter(|p| p.rep == 0) {
            let config = &plan.configurations[p.configuration];
            let entry = &config.placements[p.placement_entry];
            let w = &exp.workloads[p.workload];
            let lines = commands(
                &config.topology,
                w,
                &entry.placement.ranks,
                p.size_bytes,
                7172,
                p.estimate,
            )
            .expect("commands");
            assert_eq!(lines.len(), 16);
            for (i, (node, args)) in lines.iter().enumerate() {
                assert_eq!(node, &entry.placement.ranks[i].node);
                let inv = Invocation::try_parse_args(args).expect("the worker parses it");
                let ranks = match &inv {
                    Invocation::Allreduce(a) => &a.ranks,
                    Invocation::Alltoall(a) => &a.ranks,
                    Invocation::Bcast(a) => &a.ranks,
                    Invocation::Halo(a) => &a.ranks,
                    other => panic!("{other:?}"),
                };
                assert_eq!(ranks.rank as usize, i);
                assert_eq!(ranks.size_list(), Ok(vec![p.size_bytes]));
                for (j, peer) in ranks.peers.iter().enumerate().filter(|(j, _)| *j != i) {
                    let target = entry.placement.ranks[i].targets[j].expect("a target");
                    assert_eq!(peer, &format!("{target}:7172"));
                }
                assert!(ranks.listen.contains(&ranks.peers[i]));
                // A rank outwaits three slowest iterations of the point and more.
                assert!(
                    ranks.timeout >= 3.0 * p.estimate.as_secs_f64() + 30.0,
                    "{ranks:?}"
                );
                seen += 1;
            }
        }
        assert!(seen > 0);
    }
}
