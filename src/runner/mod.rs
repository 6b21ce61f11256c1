//! `orchestrate run`: reaches every node, configures it, runs each point through the nodes'
//! agents, stores every record as it arrives, and leaves every node as it found it — on real
//! machines from an inventory, or on the virtual cluster, through the same path.
//!
//! Per configuration (a topology under one bonding mode): obtain nodes, connect, upload the
//! worker (skipped when the node has that build), probe, settle bond drivers, write the
//! controller's ledger, apply every node's script, prove every planned path's hop count, start
//! one agent and one server per node, measure the clock offsets, run the points, then stop
//! everything and tear down — on success, failure and Ctrl-C alike.

mod agent;
mod drawings;
mod media;
mod nodes;
mod point;
mod progress;
mod rundir;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::sync::watch;

use crate::netconf;
use crate::plan::{self, Configuration, Experiment, Plan};
use crate::remote::{Cluster, ConnectOptions, Inventory};
use crate::results::{BondDriver, Manifest, PointStatus, ToolInfo};
use crate::spec::NodeName;
use crate::topology::Topology;

pub use agent::Agent;
pub use drawings::{RunDrawings, RunModel};
pub use progress::LogWriter;
pub use rundir::{Ledger, RunWriter, read_ledger};

/// Where scripts keep their ledger on the nodes.
const NODE_LEDGER: &str = netconf::DEFAULT_LEDGER;
/// Where the worker is installed on the nodes; the file name carries the build's checksum.
const NODE_WORKER_DIR: &str = "/var/tmp/orchestrate";
const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnError {
    /// Stop at the first failed point (after tearing down every reachable node).
    Stop,
    /// Record the failure and go on with the next point.
    Continue,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Run directories go under `<out_root>/<experiment>/`.
    pub out_root: PathBuf,
    /// Root of the virtual clusters' directories.
    pub state_dir: PathBuf,
    pub keep_cluster: bool,
    pub on_error: OnError,
    /// Port the worker servers listen on.
    pub port: u16,
    /// The worker binary to install on nodes; by default the one beside this program.
    pub worker: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug)]
pub struct Summary {
    pub dir: PathBuf,
    pub ok: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
}

/// Runs a new experiment, or resumes the run in `resume`.
pub async fn run(
    experiment: Option<&Path>,
    resume: Option<&Path>,
    opts: &RunOptions,
    mut interrupted: watch::Receiver<bool>,
) -> anyhow::Result<Summary> {
    let (exp, mut writer) = match (experiment, resume) {
        (_, Some(dir)) => {
            let e = load(&dir.join("experiment.toml"))?;
            let w = RunWriter::open(dir)?;
            let old: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join("plan.json"))
                    .context("reading the run's plan.json")?,
            )?;
            let new = serde_json::to_value(plan::expand(&e)?)?;
            if old["points"] != new["points"] {
                bail!(
                    "{}: the experiment no longer plans the same points as when the run started; resume needs the same plan",
                    dir.display()
                );
            }
            (e, w)
        }
        (Some(path), None) => {
            let e = load(path)?;
            let p = plan::expand(&e)?;
            let w = RunWriter::create(&opts.out_root, &e, &p)?;
            (e, w)
        }
        (None, None) => bail!("nothing to run: give an experiment file or --resume <run-dir>"),
    };
    let plan = plan::expand(&exp)?;
    let done = writer.done_points()?;
    eprintln!("run directory: {}", writer.root().display());
    writer.log(&format!(
        "run of {} ({} points, {} already done)",
        exp.name,
        plan.points.len(),
        done.len()
    ));

    // A ledger left by an earlier attempt is undone first: apply refuses to stack on it.
    if let Some(l) = read_ledger(writer.root())? {
        eprintln!(
            "undoing the configuration an earlier attempt left on {} node(s)",
            l.nodes.len()
        );
        teardown_from_ledger(writer.root()).await?;
    }

    let mut manifest = load_manifest(&writer, &exp, &plan);
    write_manifest(&writer, &manifest)?;

    let worker = crate::vcluster::locate_worker(opts.worker.as_deref())?;
    let worker_bytes =
        std::fs::read(&worker).with_context(|| format!("reading {}", worker.display()))?;
    let node_worker = format!(
        "{NODE_WORKER_DIR}/orchestrate-worker-{}",
        &checksum(&worker_bytes)[..16]
    );

    let provider = nodes::Provider {
        spec: exp.cluster.clone(),
        state_dir: opts.state_dir.clone(),
        keep: opts.keep_cluster,
    };
    let mut summary = Summary {
        dir: writer.root().to_owned(),
        ok: 0,
        failed: 0,
        skipped: done.len(),
        stopped: None,
    };
    let progress = progress::Progress::start(plan.points.len(), summary.skipped);

    for config in &plan.configurations {
        let todo: Vec<&plan::Point> = plan
            .points
            .iter()
            .filter(|p| p.configuration == config.id && !done.contains(&(p.id as u32)))
            .collect();
        if todo.is_empty() {
            continue;
        }
        if *interrupted.borrow() {
            summary.stopped = Some("interrupted".into());
            break;
        }
        let nodes = provider.obtain(&config.topology, &exp.path).await?;
        let result = run_configuration(
            &exp,
            config,
            &todo,
            &nodes,
            &worker_bytes,
            &node_worker,
            opts,
            &mut writer,
            &mut manifest,
            &mut summary,
            &progress,
            &mut interrupted,
        )
        .await;
        let cluster_name = nodes.cluster.clone();
        let released = provider.release(nodes).await;
        write_manifest(&writer, &manifest)?;
        result?;
        // The points are measured and on disk: a cluster that would not go down is reported,
        // not allowed to cost the remaining configurations and the report.
        if let Err(e) = released {
            let msg = format!(
                "taking down virtual cluster {} failed: {e:#}; `orchestrate cluster down --name {}` retries",
                cluster_name
                    .as_ref()
                    .map(|c| c.to_string())
                    .unwrap_or_default(),
                cluster_name
                    .as_ref()
                    .map(|c| c.to_string())
                    .unwrap_or_default(),
            );
            writer.log(&msg);
            progress.say(&format!("warning: {msg}"));
        }
        if summary.stopped.is_some() {
            break;
        }
    }
    drop(progress);

    manifest.finished_unix_ns = Some(agent::now_ns());
    write_manifest(&writer, &manifest)?;
    let drawer = RunDrawings::new(writer.root());
    let model = RunModel::new(writer.root());
    let report_opts = crate::report::ReportOptions {
        topology: Some(&drawer),
        model: Some(&model),
        ..Default::default()
    };
    match crate::report::report_run(writer.root(), &report_opts) {
        Ok(files) => eprintln!(
            "report: {} file(s) in {}",
            files.len(),
            writer.root().display()
        ),
        Err(e) => eprintln!(
            "report: {e} (rerun `orchestrate report {}`)",
            writer.root().display()
        ),
    }
    Ok(summary)
}

fn load(path: &Path) -> anyhow::Result<Experiment> {
    plan::load(path).map_err(|errors| {
        let text: Vec<String> = errors.errors.iter().map(|e| e.to_string()).collect();
        anyhow::anyhow!("{}", text.join("\n"))
    })
}

fn load_manifest(w: &RunWriter, e: &Experiment, plan: &Plan) -> Manifest {
    let mut m = w.dir.manifest().unwrap_or_default();
    m.tool = Some(ToolInfo {
        name: Some("orchestrate".into()),
        version: Some(env!("CARGO_PKG_VERSION").into()),
        commit: option_env!("ORCHESTRATE_COMMIT")
            .map(str::to_owned)
            .or_else(git_commit),
    });
    m.experiment = Some(e.name.to_string());
    m.seed = Some(e.seed);
    m.statistic = e.workloads.first().map(|w| match w.statistic {
        crate::spec::experiment::Statistic::Best => crate::results::Statistic::Best,
        crate::spec::experiment::Statistic::Median => crate::results::Statistic::Median,
        crate::spec::experiment::Statistic::Mean => crate::results::Statistic::Mean,
    });
    m.baseline = e.baseline.as_ref().map(|b| b.to_string());
    m.started_unix_ns.get_or_insert_with(agent::now_ns);
    m.topologies = plan
        .configurations
        .iter()
        .map(|c| c.topology.name.to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    m
}

fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn write_manifest(w: &RunWriter, m: &Manifest) -> anyhow::Result<()> {
    let path = w.dir.manifest_path();
    std::fs::write(&path, serde_json::to_string_pretty(m)?)
        .with_context(|| format!("writing {}", path.display()))
}

fn checksum(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Joins per-node futures and collects failures as "node: cause" lines.
async fn on_all<F, Fut, T>(nodes: &[NodeName], f: F) -> (BTreeMap<NodeName, T>, Vec<String>)
where
    F: Fn(NodeName) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let results = futures_util::future::join_all(nodes.iter().map(|n| {
        let fut = f(n.clone());
        async move { (n.clone(), fut.await) }
    }))
    .await;
    let mut ok = BTreeMap::new();
    let mut errors = Vec::new();
    for (n, r) in results {
        match r {
            Ok(v) => {
                ok.insert(n, v);
            }
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    (ok, errors)
}

#[allow(clippy::too_many_arguments)]
async fn run_configuration(
    exp: &Experiment,
    config: &Configuration,
    todo: &[&plan::Point],
    nodes: &nodes::Nodes,
    worker_bytes: &[u8],
    node_worker: &str,
    opts: &RunOptions,
    writer: &mut RunWriter,
    manifest: &mut Manifest,
    summary: &mut Summary,
    progress: &progress::Progress,
    interrupted: &mut watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let t = &config.topology;
    let inventory_path = nodes.inventory.as_path();
    let names: Vec<NodeName> = t.nodes.iter().map(|n| n.name.clone()).collect();
    let cluster = connect(
        inventory_path,
        &names,
        "cannot reach every node, nothing was changed",
    )
    .await?;
    writer.log(&format!(
        "configuration {} ({}): connected to {} node(s)",
        config.id,
        t.name,
        names.len()
    ));

    // Install the worker where the node lacks this build, then probe.
    let (probes, errors) = on_all(&names, |n| {
        let cluster = &cluster;
        async move {
            let have = cluster
                .run(&n, &format!("test -x {node_worker}"), None, EXEC_TIMEOUT)
                .await
                .is_ok();
            if !have {
                cluster.upload(&n, worker_bytes, node_worker, 0o755).await?;
            }
            let out = cluster
                .run(&n, &format!("{node_worker} probe"), None, EXEC_TIMEOUT)
                .await?;
            let probe: serde_json::Value = serde_json::from_str(&out.stdout)
                .with_context(|| format!("{n}: the probe's output is not JSON"))?;
            Ok(probe)
        }
    })
    .await;
    if !errors.is_empty() {
        cluster.close().await;
        bail!(
            "preparing the nodes failed, nothing was changed:\n  {}",
            errors.join("\n  ")
        );
    }
    for (n, p) in &probes {
        manifest.nodes.insert(n.to_string(), p.clone());
    }
    if let Some(medium) = nodes
        .medium_config
        .as_deref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| serde_json::from_str(&text).ok())
    {
        manifest
            .media
            .insert(format!("{}-{}", config.id, t.name), medium);
    }

    // Bonds with driver = auto take the kernel driver where the probe found it.
    let settled: Vec<crate::topology::Node> = t
        .nodes
        .iter()
        .map(|n| {
            let has = probes
                .get(&n.name)
                .and_then(|p| p["bonding"]["present"].as_bool())
                .unwrap_or(false);
            netconf::settle_bond_drivers(n, has)
        })
        .collect();
    let bond_driver = settled
        .iter()
        .flat_map(|n| n.bonds.iter())
        .next()
        .map(|b| match b.driver {
            crate::topology::BondDriver::Kernel | crate::topology::BondDriver::Auto => {
                BondDriver::Kernel
            }
            crate::topology::BondDriver::Userspace => BondDriver::Userspace,
        });
    manifest
        .bond_drivers
        .insert(t.name.to_string(), bond_driver);
    let scripts: BTreeMap<NodeName, netconf::NodeScripts> = settled
        .iter()
        .map(|n| (n.name.clone(), netconf::render(t, n)))
        .collect();
    let sdir = writer
        .root()
        .join("scripts")
        .join(format!("{}-{}", config.id, t.name));
    std::fs::create_dir_all(&sdir)?;
    for s in scripts.values() {
        std::fs::write(sdir.join(format!("{}.apply.sh", s.node)), &s.apply)?;
        std::fs::write(sdir.join(format!("{}.teardown.sh", s.node)), &s.teardown)?;
    }

    // The ledger is written before anything changes, so a crash at any later moment leaves a
    // record of what to undo.
    let mut ledger = Ledger {
        configuration: config.id,
        topology: t.name.to_string(),
        inventory: std::path::absolute(inventory_path)?,
        node_ledger: NODE_LEDGER.into(),
        nodes: names.clone(),
        virtual_cluster: nodes.cluster.as_ref().map(|c| c.to_string()),
    };
    writer.write_ledger(&ledger)?;
    let env = format!("ORCHESTRATE_WORKER={node_worker}");
    let applies: BTreeMap<NodeName, String> = scripts
        .iter()
        .map(|(n, sc)| (n.clone(), sc.apply.clone()))
        .collect();
    let (_, apply_errors) = run_scripts(&cluster, &applies, &env, NODE_LEDGER).await;

    let outcome = if !apply_errors.is_empty() {
        Err(anyhow::anyhow!(
            "configuring {} failed:\n  {}",
            t.name,
            apply_errors.join("\n  ")
        ))
    } else {
        writer.log(&format!(
            "configuration {}: applied on every node",
            config.id
        ));
        measure(
            exp,
            config,
            todo,
            &cluster,
            node_worker,
            opts,
            writer,
            summary,
            progress,
            interrupted,
            bond_driver,
            nodes.medium_socket.as_deref(),
        )
        .await
    };

    // Teardown always runs; the ledger keeps only the nodes that could not be cleaned.
    let teardowns: BTreeMap<NodeName, String> = scripts
        .iter()
        .map(|(n, sc)| (n.clone(), sc.teardown.clone()))
        .collect();
    let (clean, teardown_errors) = run_scripts(&cluster, &teardowns, "", NODE_LEDGER).await;
    cluster.close().await;
    // A userspace bond's teardown prints its final counters: keep them, so a reader can see
    // which wire carried what (per slave, per flow).
    let bond_counters = userspace_bond_counters(config, &clean);
    if !bond_counters.is_empty() {
        writer.append_bonds(&bond_counters)?;
    }
    ledger.nodes.retain(|n| !clean.contains_key(n));
    if ledger.nodes.is_empty() {
        writer.clear_ledger()?;
        writer.log(&format!(
            "configuration {}: torn down on every node",
            config.id
        ));
    } else {
        writer.write_ledger(&ledger)?;
        let msg = format!(
            "teardown left changes on some nodes (kept in ledger.json; `orchestrate teardown {}` retries):\n  {}",
            writer.root().display(),
            teardown_errors.join("\n  ")
        );
        writer.log(&msg);
        progress.say(&msg);
    }
    outcome
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

#[allow(clippy::too_many_arguments)]
async fn measure(
    exp: &Experiment,
    config: &Configuration,
    todo: &[&plan::Point],
    cluster: &Cluster,
    node_worker: &str,
    opts: &RunOptions,
    writer: &mut RunWriter,
    summary: &mut Summary,
    progress: &progress::Progress,
    interrupted: &mut watch::Receiver<bool>,
    bond_driver: Option<BondDriver>,
    medium_socket: Option<&Path>,
) -> anyhow::Result<()> {
    let t = &config.topology;
    verify_paths(t, config, cluster).await?;
    let mut medium = media::Sampler::open(medium_socket);
    let mut medium_warned = false;
    let names: Vec<NodeName> = t.nodes.iter().map(|n| n.name.clone()).collect();

    // One agent and one server per node for the whole configuration.
    let (agents, errors) = on_all(&names, |n| async move {
        Ok(Agent::open(cluster, &n, node_worker).await?)
    })
    .await;
    if !errors.is_empty() {
        close_all(&agents).await;
        bail!("starting the agents failed:\n  {}", errors.join("\n  "));
    }
    let result = async {
        let port = opts.port;
        let (_, errors) = on_all(&names, |n| {
            let agents = &agents;
            async move {
                let a = &agents[&n];
                let mut task = a.spawn(vec!["serve".into(), "--listen".into(), format!("0.0.0.0:{port}")]).await?;
                match task.next(&n, Duration::from_secs(20)).await? {
                    orchestrate_worker::agent::Event::Line { line, .. } if line.contains("listening") => Ok(()),
                    other => bail!("{n}: the server did not start: {other:?}"),
                }
            }
        })
        .await;
        if !errors.is_empty() {
            bail!("starting the servers failed:\n  {}", errors.join("\n  "));
        }
        let (offsets, errors) = on_all(&names, |n| {
            let agents = &agents;
            async move { Ok(agents[&n].clock_offset().await?.0) }
        })
        .await;
        if !errors.is_empty() {
            bail!("measuring clock offsets failed:\n  {}", errors.join("\n  "));
        }
        for p in todo {
            let entry = &config.placements[p.placement_entry];
            let w = &exp.workloads[p.workload];
            let t0 = Instant::now();
            let mut outcome = tokio::select! {
                o = point::run(p, entry, w, &agents, port, &offsets, bond_driver, medium.as_mut()) => o,
                _ = interrupted.wait_for(|stop| *stop) => {
                    summary.stopped = Some("interrupted".into());
                    writer.log(&format!("point {} interrupted; its partial results are not kept", p.id));
                    return Ok(());
                }
            };
            if outcome.row.status == PointStatus::Failed {
                // A pair's error often shows only the symptom (a timeout); name the nodes that
                // stopped answering, which is usually the cause.
                let silent = unresponsive(&agents).await;
                if !silent.is_empty() {
                    let names: Vec<String> = silent.iter().map(|n| n.to_string()).collect();
                    let err = outcome.row.error.take().unwrap_or_default();
                    outcome.row.error = Some(format!("{} stopped answering ({err})", names.join(", ")));
                }
            }
            if let Some(m) = medium.as_mut() {
                let (lines, hosts) = m.take(&media_context(config, &outcome.row));
                writer.append_media(&lines, &hosts)?;
                if let Some(e) = m.error().filter(|_| !medium_warned) {
                    medium_warned = true;
                    let msg = format!(
                        "the medium emulator's statistics are unavailable from point {} on ({e}); the run goes on without them",
                        p.id
                    );
                    writer.log(&msg);
                    progress.say(&format!("warning: {msg}"));
                }
            }
            writer.append_point(&outcome.records, &outcome.row)?;
            let ok = outcome.row.status == PointStatus::Ok;
            if ok {
                summary.ok += 1;
            } else {
                summary.failed += 1;
            }
            let done = summary.ok + summary.failed + summary.skipped;
            let total = progress.total();
            let line = format!(
                "[{done}/{total}] point {} {} {} {}x{} {}B rep {}: {} in {:.1}s (elapsed {})",
                p.id,
                p.topology,
                p.pattern.as_str(),
                p.placement.as_str(),
                p.pairs,
                p.size_bytes,
                p.rep,
                outcome.row.error.as_deref().unwrap_or("ok"),
                t0.elapsed().as_secs_f64(),
                plan::render::human(progress.elapsed())
            );
            progress.point_done(&line);
            writer.log(&line);
            if !ok && opts.on_error == OnError::Stop {
                summary.stopped = Some(format!("point {} failed: {}", p.id, outcome.row.error.unwrap_or_default()));
                return Ok(());
            }
        }
        Ok(())
    }
    .await;
    // The configuration's totals, before anything is torn down (the emulator goes with the
    // cluster).
    if let Some(m) = medium.as_mut() {
        let total = m
            .total(config.id as u32, t.name.as_str(), &config.bonding_label())
            .await;
        if let Err(e) = writer.append_media_total(&total) {
            writer.log(&format!("writing media-total.jsonl: {e:#}"));
        }
    }
    close_all(&agents).await;
    result
}

/// The keys a `media.jsonl` line shares with the point's records.
fn media_context(
    config: &Configuration,
    row: &crate::results::PointRow,
) -> crate::results::MediaContext {
    crate::results::MediaContext {
        configuration: config.id as u32,
        point: row.point,
        topology: row.topology.clone(),
        bonding: row.bonding.clone(),
        placement: row.placement,
        pairs: row.pairs,
        pattern: row.pattern,
        protocol: row.protocol,
        size_bytes: row.size_bytes,
        rep: row.rep,
    }
}

/// Reads an inventory and connects to `nodes`; every problem is listed under `what`.
async fn connect(inventory: &Path, nodes: &[NodeName], what: &str) -> anyhow::Result<Cluster> {
    let lines = |v: Vec<String>| v.join("\n  ");
    let inv = Inventory::load(inventory).map_err(|e| {
        anyhow::anyhow!(
            "{}",
            lines(e.errors.iter().map(|x| x.to_string()).collect())
        )
    })?;
    Cluster::connect(&inv, nodes, &ConnectOptions::default())
        .await
        .map_err(|errs| {
            anyhow::anyhow!(
                "{what}:\n  {}",
                lines(errs.iter().map(|e| e.to_string()).collect())
            )
        })
}

/// Runs each node's script at once on every node: fed to `sh` on stdin, with `env` before the
/// command and the node-side ledger as the script's argument. Returns the nodes where it
/// succeeded, and "node: cause" for the others.
async fn run_scripts(
    cluster: &Cluster,
    scripts: &BTreeMap<NodeName, String>,
    env: &str,
    ledger: &str,
) -> (BTreeMap<NodeName, String>, Vec<String>) {
    let nodes: Vec<NodeName> = scripts.keys().cloned().collect();
    let command = format!("{env} sh -s -- {ledger}").trim_start().to_owned();
    on_all(&nodes, |n| {
        let command = &command;
        async move {
            let out = cluster
                .run(&n, command, Some(scripts[&n].as_bytes()), EXEC_TIMEOUT)
                .await?;
            Ok(out.stdout)
        }
    })
    .await
}

/// Nodes whose agent does not answer a clock probe within a few seconds.
async fn unresponsive(agents: &BTreeMap<NodeName, Agent>) -> Vec<NodeName> {
    let probes = agents.iter().map(|(n, a)| async move {
        let answered = tokio::time::timeout(Duration::from_secs(5), a.clock_offset()).await;
        (n.clone(), matches!(answered, Ok(Ok(_))))
    });
    futures_util::future::join_all(probes)
        .await
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n)
        .collect()
}

async fn close_all(agents: &BTreeMap<NodeName, Agent>) {
    futures_util::future::join_all(agents.values().map(|a| a.close())).await;
}

/// Proves each planned pair's path before measuring: a ping with TTL = hops reaches the
/// target, and (for paths through forwarding nodes) one with TTL = hops - 1 does not.
async fn verify_paths(
    t: &Topology,
    config: &Configuration,
    cluster: &Cluster,
) -> anyhow::Result<()> {
    let mut pairs: Vec<(NodeName, std::net::Ipv4Addr, usize)> = config
        .placements
        .iter()
        .flat_map(|e| e.placement.pairs.iter())
        .map(|p| (p.client.clone(), p.path.target, p.path.hop_count()))
        .collect();
    pairs.sort();
    pairs.dedup();
    let checks = pairs.iter().map(|(client, target, hops)| async move {
        let reach = cluster.run(client, &format!("ping -n -q -c 1 -W 2 -t {hops} {target}"), None, EXEC_TIMEOUT).await;
        if let Err(e) = reach {
            return Err(format!("{client} cannot reach {target} in {hops} hop(s): {e}"));
        }
        if *hops > 1 {
            let short = cluster.run(client, &format!("ping -n -q -c 1 -W 1 -t {} {target}", hops - 1), None, EXEC_TIMEOUT).await;
            if short.is_ok() {
                return Err(format!("{client} reaches {target} in fewer than {hops} hops: the path is not the planned one"));
            }
        }
        Ok(())
    });
    let errors: Vec<String> = futures_util::future::join_all(checks)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if !errors.is_empty() {
        bail!("{}: path checks failed:\n  {}", t.name, errors.join("\n  "));
    }
    Ok(())
}

/// `orchestrate teardown <run-dir>`: undoes what the run's ledger says is still applied.
pub async fn teardown_from_ledger(dir: &Path) -> anyhow::Result<()> {
    let Some(l) = read_ledger(dir)? else {
        eprintln!("{}: no ledger, nothing to undo", dir.display());
        return Ok(());
    };
    if let Some(name) = &l.virtual_cluster
        && !crate::vcluster::list_clusters()?.contains(name)
    {
        std::fs::remove_file(dir.join("ledger.json"))?;
        eprintln!(
            "{}: virtual cluster {name} is gone, and its nodes' changes with it",
            dir.display()
        );
        return Ok(());
    }
    let cluster = connect(
        &l.inventory,
        &l.nodes,
        "cannot reach every node of the ledger",
    )
    .await?;
    let sdir = dir
        .join("scripts")
        .join(format!("{}-{}", l.configuration, l.topology));
    let mut teardowns = BTreeMap::new();
    for n in &l.nodes {
        let path = sdir.join(format!("{n}.teardown.sh"));
        let script = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        teardowns.insert(n.clone(), script);
    }
    let (_, errors) = run_scripts(&cluster, &teardowns, "", &l.node_ledger).await;
    cluster.close().await;
    if errors.is_empty() {
        std::fs::remove_file(dir.join("ledger.json"))?;
        eprintln!(
            "{}: every node of the ledger is back as it was",
            dir.display()
        );
        Ok(())
    } else {
        bail!("teardown failed:\n  {}", errors.join("\n  "))
    }
}
