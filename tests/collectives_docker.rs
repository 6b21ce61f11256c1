//! A collective experiment end to end on the virtual cluster: every rank of every point
//! started on its node, released together and recorded, with the algorithm, size and count
//! the plan asked for; the same allreduce run by Open MPI (mpirun over the run's SSH), each
//! rank on its planned node; and the report's Applications section, its comparison of the
//! two, and `applications.csv` made of them. Checks the chain, not timing (`--timing
//! record`). Needs docker and root.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

/// A 2x2 routed mesh: the ring's neighbours 1 -> 2 and 3 -> 0 are a forwarder apart.
const TOPOLOGY: &str = r#"
name = "coll-mesh"
[generator]
kind = "grid"
rows = 2
cols = 2
interconnect = "routed"
rate = "10mbit"
"#;

const EXPERIMENT: &str = r#"
name = "coll"
seed = 3
topologies = ["coll-mesh.toml"]

[[workload]]
pattern = "allreduce"
algorithm = "ring"
ranks = [4]
sizes = [8, "1KiB"]
iterations = 6
warmup = 1
repetitions = 1

[[workload]]
pattern = "allreduce"
algorithm = "ring"
implementation = "open-mpi"
ranks = [4]
sizes = ["1KiB"]
iterations = 6
warmup = 1
repetitions = 1

[[workload]]
pattern = "alltoall"
ranks = [4]
sizes = ["1KiB"]
iterations = 4
warmup = 1
repetitions = 1

[[workload]]
pattern = "bcast"
ranks = [4]
root = 2
sizes = ["1KiB"]
iterations = 4
warmup = 1
repetitions = 1

[[workload]]
pattern = "halo"
ranks = [4]
grid = "2x2"
periodic = true
sizes = [64]
iterations = 4
warmup = 1
repetitions = 1
"#;

fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect()
}

#[test]
fn docker_collectives_run_every_rank_and_report_them() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("coll-mesh.toml"), TOPOLOGY).unwrap();
    std::fs::write(tmp.path().join("coll.toml"), EXPERIMENT).unwrap();
    let p = |rel: &str| tmp.path().join(rel).display().to_string();
    let state = p("state");
    let out = support::orchestrate(&[
        "run",
        "--timing",
        "record",
        &p("coll.toml"),
        "--out",
        &p("out"),
        "--state-dir",
        &state,
    ]);
    let down = support::orchestrate(&[
        "cluster",
        "down",
        "--name",
        "coll-mesh",
        "--state-dir",
        &state,
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    let base = tmp.path().join("out/coll");
    let dir: PathBuf = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .expect("a run directory");

    let points = lines(&dir.join("points.jsonl"));
    assert_eq!(points.len(), 6, "{points:?}");
    assert!(points.iter().all(|p| p["status"] == "ok"), "{points:?}");
    let records = lines(&dir.join("records.jsonl"));
    // Per point, every rank once, on its own node, without an error.
    let mut by_point: BTreeMap<u64, Vec<&serde_json::Value>> = BTreeMap::new();
    for r in &records {
        assert_eq!(r["role"], "rank", "{r}");
        assert!(r["error"].is_null(), "{r}");
        by_point
            .entry(r["point"].as_u64().unwrap())
            .or_default()
            .push(r);
    }
    assert_eq!(by_point.len(), 6);
    for ranks in by_point.values() {
        let mut seen: Vec<u64> = ranks.iter().map(|r| r["rank"].as_u64().unwrap()).collect();
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3]);
        let nodes: std::collections::BTreeSet<&str> = ranks
            .iter()
            .map(|r| r["client_node"].as_str().unwrap())
            .collect();
        assert_eq!(nodes.len(), 4, "one rank per node");
    }
    // What the plan asked for reached the ranks: the ring at 1 KiB among 4 ranks sends every
    // block but two per iteration (reduce-scatter and allgather), 6 iterations; a root of 2.
    let by_mpi = |r: &&&serde_json::Value| r["implementation"].is_string();
    let ring: Vec<&&serde_json::Value> = by_point
        .values()
        .flatten()
        .filter(|r| r["pattern"] == "allreduce" && r["size_bytes"] == 1024)
        .filter(|r| !by_mpi(r))
        .collect();
    assert_eq!(ring.len(), 4);
    for r in &ring {
        assert_eq!(r["algorithm"], "ring");
        assert_eq!(r["messages"], 6);
        assert_eq!(r["bytes"], 6 * (2 * 1024 - 2 * 256), "{r}");
    }
    // Open MPI ran the same ring, each rank on its planned node (its processor name is the
    // node's host name), the record naming the library.
    let mpi: Vec<&&serde_json::Value> = by_point.values().flatten().filter(by_mpi).collect();
    assert_eq!(mpi.len(), 4, "{mpi:?}");
    for r in &mpi {
        assert_eq!(
            (&r["pattern"], &r["algorithm"]),
            (&"allreduce".into(), &"ring".into())
        );
        assert_eq!(r["messages"], 6);
        assert_eq!(r["local_addr"], r["client_node"], "{r}");
        assert!(
            r["implementation"]
                .as_str()
                .unwrap()
                .starts_with("Open MPI"),
            "{r}"
        );
        assert!(r["latency_us"].as_f64().unwrap() > 0.0);
    }
    let small: Vec<&&serde_json::Value> = by_point
        .values()
        .flatten()
        .filter(|r| r["pattern"] == "allreduce" && r["size_bytes"] == 8)
        .collect();
    assert!(small.iter().all(|r| r["algorithm"] == "recursive-doubling"));
    let root_sends: Vec<u64> = by_point
        .values()
        .flatten()
        .filter(|r| r["pattern"] == "bcast" && r["rank"] == 2)
        .map(|r| r["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        root_sends,
        [4 * 2 * 1024],
        "the root sends to its two children"
    );
    assert!(
        by_point
            .values()
            .flatten()
            .filter(|r| r["pattern"] == "halo")
            .all(|r| r["algorithm"] == "2x2 periodic")
    );

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Applications"), "{report}");
    for c in [
        "allreduce ring",
        "alltoall pairwise",
        "bcast binomial",
        "halo 2x2 periodic",
    ] {
        assert!(report.contains(c), "{c} in {report}");
    }
    assert!(
        report.contains("### The worker against MPI on the same cluster"),
        "{report}"
    );
    assert!(report.contains("allreduce ring (open-mpi)"), "{report}");
    let csv = std::fs::read_to_string(dir.join("applications.csv")).unwrap();
    // A header and one row per cell: five of the worker's and one of Open MPI's.
    assert_eq!(csv.lines().count(), 7, "{csv}");
    assert_eq!(
        csv.lines().filter(|l| l.contains(",open-mpi,")).count(),
        1,
        "{csv}"
    );
}
