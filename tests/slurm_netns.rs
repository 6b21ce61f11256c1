//! `[cluster] kind = "slurm"` against a real Slurm: Debian's slurmctld on this machine, one
//! slurmd in each of three netns nodes (started there over the cluster's own ssh), munge for
//! their credentials, and `salloc -N 3 orchestrate run …` as a user of a cluster types it.
//! The allocation's node names (`n[1-3]`) resolve nowhere on this machine: the run can only
//! reach the nodes at the `NodeAddr` slurm.conf gives them, which is what the node source must
//! use. The run measures every point, records the job in its manifest and report, tears down,
//! and the allocation ends with it.
//!
//! Everything lives in a directory under cargo's target directory, which the netns nodes see
//! (their own /run, /tmp and /var/tmp are private): munge's socket, slurm.conf, the daemons'
//! state, spool and logs. The daemons run on non-default ports, so a Slurm already on this
//! machine is left alone. What the test starts it stops on drop, cluster included.

mod common;
#[path = "common/need.rs"]
mod need;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const TOPOLOGY: &str = r#"
name = "{name}"
nodes = ["n[1-3]"]

[[segment]]
name = "bus"
rate = "10mbit"
medium = "shared"
members = ["n[1-3]:eth1"]
"#;

const EXPERIMENT: &str = r#"
name = "slurm-real"
seed = 7
topologies = ["trio.toml"]

[cluster]
kind = "slurm"
user = "root"
identity = "{identity}"
known_hosts = "{known_hosts}"

[[workload]]
pattern = "token"
sizes = [512]
pairs = [1]
placement = ["local-wire"]
exchanges = 50
repetitions = 2
statistic = "best"
"#;

fn orchestrate(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("orchestrate runs");
    eprintln!(
        "$ orchestrate {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn orchestrate_ok(args: &[&str]) -> String {
    let out = orchestrate(args);
    assert!(
        out.status.success(),
        "orchestrate {} failed",
        args.join(" ")
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Slurm command against this test's slurm.conf.
fn slurm(conf: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("SLURM_CONF", conf)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// The address this machine has on the management bridge that reaches `node_address`: where
/// the nodes' slurmds find slurmctld.
fn host_address_towards(node_address: &str) -> String {
    let out = Command::new("ip")
        .args(["-o", "-4", "route", "get", node_address])
        .output()
        .expect("ip runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    words
        .find(|w| *w == "src")
        .and_then(|_| words.next())
        .unwrap_or_else(|| panic!("no source address towards {node_address}: {text}"))
        .to_owned()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The daemons and the cluster this test started, stopped on drop whatever happened.
struct Lab {
    dir: PathBuf,
    state: String,
    name: String,
    munged: Option<Child>,
    slurmctld: Option<Child>,
    conf: PathBuf,
}

impl Lab {
    /// Stops Slurm, munge and the cluster, and removes the directory; idempotent.
    fn stop(&mut self) {
        // slurmctld tells every registered slurmd to stop, then stops itself; a slurmd that
        // did not hear it goes with the cluster's namespaces.
        if let Some(mut ctld) = self.slurmctld.take() {
            let _ = slurm(&self.conf, "scontrol", &["shutdown"]);
            let deadline = Instant::now() + Duration::from_secs(10);
            while ctld.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = ctld.kill();
            let _ = ctld.wait();
        }
        if let Some(mut munged) = self.munged.take() {
            // SAFETY: a signal to our own child, which has not been reaped yet.
            unsafe { libc::kill(munged.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while munged.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = munged.kill();
            let _ = munged.wait();
        }
        if self.dir.exists() {
            let _ = orchestrate(&[
                "cluster",
                "down",
                "--name",
                &self.name,
                "--state-dir",
                &self.state,
            ]);
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The processes whose command line names `dir`.
fn processes_naming(dir: &Path) -> Vec<String> {
    let dir = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&dir))
        .collect()
}

/// `program` in the foreground, its output into `log`.
fn daemon(program: &str, args: &[&str], log: &Path) -> Child {
    let out = std::fs::File::create(log).unwrap();
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn logs(dir: &Path) -> String {
    let mut all = String::new();
    for entry in walk(dir) {
        if entry.extension().is_some_and(|e| e == "log") {
            let text = std::fs::read_to_string(&entry).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            all += &format!("--- {}\n", entry.display());
            for l in tail.into_iter().rev() {
                all += l;
                all.push('\n');
            }
        }
    }
    all
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// slurm.conf for `nodes` (name, address) with slurmctld at `controller`; every path in `dir`.
fn slurm_conf(dir: &Path, controller: &str, nodes: &[(String, String)]) -> String {
    let host =
        String::from_utf8_lossy(&Command::new("hostname").arg("-s").output().unwrap().stdout)
            .trim()
            .to_owned();
    let d = dir.display();
    let mut conf = format!(
        "ClusterName=orchestrate-test\n\
         SlurmctldHost={host}({controller})\n\
         SlurmctldPort={ctld_port}\n\
         SlurmdPort={slurmd_port}\n\
         SlurmUser=root\n\
         SlurmdUser=root\n\
         AuthType=auth/munge\n\
         AuthInfo=socket={d}/munge/munge.socket\n\
         CredType=cred/munge\n\
         StateSaveLocation={d}/state\n\
         SlurmdSpoolDir={d}/spool/%n\n\
         SlurmctldPidFile={d}/slurmctld.pid\n\
         SlurmdPidFile={d}/spool/slurmd-%n.pid\n\
         SlurmctldLogFile={d}/slurmctld.log\n\
         SlurmdLogFile={d}/spool/slurmd-%n.log\n\
         ProctrackType=proctrack/linuxproc\n\
         TaskPlugin=task/none\n\
         JobAcctGatherType=jobacct_gather/none\n\
         AccountingStorageType=accounting_storage/none\n\
         SchedulerType=sched/builtin\n\
         SelectType=select/linear\n\
         MpiDefault=none\n\
         ReturnToService=2\n",
        ctld_port = free_port(),
        slurmd_port = free_port(),
    );
    for (node, address) in nodes {
        conf += &format!("NodeName={node} NodeAddr={address} CPUs=1 State=UNKNOWN\n");
    }
    let names: Vec<&str> = nodes.iter().map(|(n, _)| n.as_str()).collect();
    conf += &format!(
        "PartitionName=test Nodes={} Default=YES MaxTime=10 State=UP\n",
        names.join(",")
    );
    conf
}

#[test]
fn netns_sshd_slurm_salloc_runs_an_experiment_on_the_nodes_slurm_allocated() {
    require_needs!();
    let started = Instant::now();
    // Under the target directory, not /tmp: the nodes have /tmp of their own, and their
    // slurmds must reach munge's socket and slurm.conf.
    let dir = tempfile::Builder::new()
        .prefix("slurm-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
        .keep();
    let name = format!("slm{}", std::process::id());
    let state = dir.join("cluster-state");
    let mut lab = Lab {
        dir: dir.clone(),
        state: state.display().to_string(),
        name: name.clone(),
        munged: None,
        slurmctld: None,
        conf: dir.join("slurm.conf"),
    };
    std::fs::write(dir.join("trio.toml"), TOPOLOGY.replace("{name}", &name)).unwrap();
    let worker = common::worker_binary();
    let worker = worker.to_str().unwrap();
    orchestrate_ok(&[
        "cluster",
        "up",
        dir.join("trio.toml").to_str().unwrap(),
        "--kind",
        "netns",
        "--state-dir",
        &lab.state,
        "--worker",
        worker,
    ]);
    let cluster_dir = state.join("clusters").join(&name);
    let inventory: toml::Value =
        toml::from_str(&std::fs::read_to_string(cluster_dir.join("inventory.toml")).unwrap())
            .unwrap();
    let nodes: Vec<(String, String)> = inventory["host"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["nodes"].as_str().unwrap().to_owned(),
                h["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        nodes.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["n1", "n2", "n3"]
    );
    let controller = host_address_towards(&nodes[0].1);

    // munge: a key of our own, its socket where the nodes see it.
    for sub in ["munge", "state", "spool"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let key = dir.join("munge/munge.key");
    // Secret, not reproducible: from the kernel's random source.
    let mut secret = vec![0u8; 1024];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").unwrap(),
        &mut secret,
    )
    .unwrap();
    std::fs::write(&key, secret).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
    let m = dir.join("munge");
    let arg = |flag: &str, file: &str| format!("{flag}={}", m.join(file).display());
    lab.munged = Some(daemon(
        "/usr/sbin/munged",
        &[
            "--foreground",
            "--force",
            &arg("--socket", "munge.socket"),
            &arg("--key-file", "munge.key"),
            &arg("--pid-file", "munged.pid"),
            &arg("--seed-file", "munged.seed"),
            &arg("--log-file", "munged.log"),
        ],
        &m.join("munged.out.log"),
    ));
    wait_for("munge's socket", Duration::from_secs(10), || {
        m.join("munge.socket").exists()
    });

    std::fs::write(&lab.conf, slurm_conf(&dir, &controller, &nodes)).unwrap();
    // slurmd starts its cgroup plugin even when neither process tracking nor tasks use it, and
    // autodetection looks at /sys/fs/cgroup, which a netns node's own sysfs leaves empty.
    // Naming the v1 plugin skips the probe; nothing here makes a cgroup.
    std::fs::write(dir.join("cgroup.conf"), "CgroupPlugin=cgroup/v1\n").unwrap();
    for (node, _) in &nodes {
        std::fs::create_dir_all(dir.join("spool").join(node)).unwrap();
    }
    let conf = lab.conf.clone();
    let conf_arg = conf.to_str().unwrap();
    lab.slurmctld = Some(daemon(
        "/usr/sbin/slurmctld",
        &["-D", "-f", conf_arg],
        &dir.join("slurmctld.out.log"),
    ));
    // Each node's slurmd, started in the node as an administrator would: over ssh.
    for (node, _) in &nodes {
        let out = orchestrate(&[
            "cluster",
            "ssh",
            "--name",
            &name,
            "--state-dir",
            &lab.state,
            node,
            "--",
            "/usr/sbin/slurmd",
            "-f",
            conf_arg,
            "-N",
            node,
        ]);
        assert!(
            out.status.success(),
            "slurmd on {node} did not start\n{}",
            logs(&dir)
        );
    }
    let idle = || {
        let out = slurm(&conf, "sinfo", &["-h", "-N", "-o", "%N %T"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let count = text.lines().filter(|l| l.ends_with(" idle")).count();
        (count == nodes.len(), text)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !idle().0 {
        assert!(
            Instant::now() < deadline,
            "the nodes did not become idle in 60 s: {}\n{}",
            idle().1,
            logs(&dir)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!(
        "Slurm up with 3 idle nodes after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The experiment reaches the nodes as the cluster's inventory does: its key, its pinned
    // host keys.
    let rel = |key: &str| {
        cluster_dir
            .join(inventory["defaults"][key].as_str().unwrap())
            .display()
            .to_string()
    };
    let experiment = dir.join("experiment.toml");
    std::fs::write(
        &experiment,
        EXPERIMENT
            .replace("{identity}", &rel("identity"))
            .replace("{known_hosts}", &rel("known_hosts")),
    )
    .unwrap();
    let reports = dir.join("reports");
    let salloc = Command::new("timeout")
        .args([
            "300",
            "/usr/bin/salloc",
            "-N",
            "3",
            "-J",
            "orchestrate-test",
        ])
        .arg(env!("CARGO_BIN_EXE_orchestrate"))
        .args(["run", experiment.to_str().unwrap(), "--out"])
        .arg(&reports)
        // The emulator's timing is another test's subject: here, a late frame is recorded, not
        // a reason to leave a point untimed.
        .args(["--worker", worker, "--timing", "record"])
        .env("SLURM_CONF", &conf)
        .env("NO_COLOR", "1")
        .env_remove("SLURM_JOB_NODELIST")
        .env_remove("SLURM_JOB_ID")
        .stdin(Stdio::null())
        .output()
        .expect("salloc runs");
    let err = String::from_utf8_lossy(&salloc.stderr);
    eprintln!("$ salloc -N 3 orchestrate run …\n{err}");
    assert!(salloc.status.success(), "{err}\n{}", logs(&dir));
    let job = err
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("salloc granted no allocation: {err}"))
        .trim()
        .to_owned();

    // One run directory, its nodes on the allocation's hosts at their NodeAddr.
    let runs: Vec<PathBuf> = std::fs::read_dir(reports.join("slurm-real"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    let [run] = runs.as_slice() else {
        panic!("not one run directory: {runs:?}");
    };
    let written: toml::Value =
        toml::from_str(&std::fs::read_to_string(run.join(format!("slurm-{name}.toml"))).unwrap())
            .unwrap();
    let mapped: Vec<(String, String)> = written["host"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["nodes"].as_str().unwrap().to_owned(),
                h["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(mapped, nodes, "each node at the NodeAddr Slurm gave it");

    // Every point measured; the job is in the manifest and the report.
    let points = std::fs::read_to_string(run.join("points.jsonl")).unwrap();
    let ok = points
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|p| p["status"] == "ok")
        .count();
    assert_eq!(ok, 2, "one point, two repetitions: {points}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    let jobs = manifest["slurm_jobs"].as_array().expect("slurm_jobs");
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0]["job_id"].as_str(), Some(job.as_str()));
    assert_eq!(jobs[0]["nodelist"].as_str(), Some("n[1-3]"));
    assert_eq!(jobs[0]["partition"].as_str(), Some("test"));
    assert_eq!(jobs[0]["cluster"].as_str(), Some("orchestrate-test"));
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains(&format!(
            "- **Slurm**: job {job} on n[1-3], partition test, cluster orchestrate-test"
        )),
        "{report}"
    );

    // The allocation ended with the run, and the run left the nodes' wires as it found them.
    let queue = slurm(&conf, "squeue", &["-h", "-o", "%i %T"]);
    assert_eq!(
        String::from_utf8_lossy(&queue.stdout).trim(),
        "",
        "jobs left"
    );
    for (node, _) in &nodes {
        let out = orchestrate_ok(&[
            "cluster",
            "ssh",
            "--name",
            &name,
            "--state-dir",
            &lab.state,
            node,
            "--",
            "ip -4 -o addr show dev eth1",
        ]);
        assert_eq!(out.trim(), "", "{node} kept an address on eth1");
    }
    eprintln!(
        "salloc run and checks done after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Nothing the test started outlives it: no daemon, no node, no file.
    lab.stop();
    assert_eq!(processes_naming(&dir), Vec::<String>::new());
    assert!(!dir.exists(), "{} is left", dir.display());
    eprintln!("all stopped after {:.1} s", started.elapsed().as_secs_f64());
}

fn wait_for(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < deadline, "{what} not ready in {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
