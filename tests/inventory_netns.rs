//! The real-machine path, end to end, on machines made of network namespaces: three nodes and
//! a jump host, each with its own sshd and its own /run, /tmp and /var/tmp, reached only
//! through the jump host (ProxyJump) as a user who is not root and configures through `sudo`,
//! with interfaces named as real machines name them (`mgmt0`, `lan0`, `enp3s0f1`), never
//! `ethN`. `orchestrate run` on an inventory of them measures every point and tears down, and
//! each node is then compared with what it was before: addresses, routes, links, qdiscs,
//! forwarding, MPTCP, processes, and the files in its /run and /tmp.
//!
//! What the test adds to this machine (a user, a sudoers file, namespaces, one veth to the
//! jump host) it removes on drop. Traffic stays between the host and its own namespaces.

mod common;
#[path = "common/need.rs"]
mod need;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The host's end of a lab's one wire to its jump host, and the jump host's: a /30 of its own
/// for each lab (the tests here run at once, and the host's end is in the host's namespace).
fn uplink_addresses(lab: u8) -> (String, String) {
    let base = 4 * u32::from(lab);
    (
        format!("10.231.0.{}", base + 1),
        format!("10.231.0.{}", base + 2),
    )
}
/// The nodes' management network, behind the jump host: the host has no route to it.
const MGMT_PREFIX: &str = "10.231.1";
const NODES: [&str; 3] = ["n1", "n2", "n3"];

/// Three nodes on two wires, n2 forwarding between them, with the interface names of real
/// machines.
const TOPOLOGY: &str = r#"
name = "lab3"
nodes = ["n1", "n2", "n3"]

[[segment]]
name = "a"
rate = "100mbit"
members = ["n1:lan0", "n2:lan0"]

[[segment]]
name = "b"
rate = "100mbit"
medium = "switched"
members = ["n2:enp3s0f1", "n3:enp3s0f1"]

[[route]]
node = "n1"
to = "10.111.1.0/24"
via = "10.111.0.2"

[[route]]
node = "n3"
to = "10.111.0.0/24"
via = "10.111.1.2"
"#;

const EXPERIMENT: &str = r#"
name = "lab"
seed = 7
topologies = ["lab3.toml"]

[cluster]
kind = "inventory"
inventory = "hosts.toml"

[[workload]]
pattern = "token"
sizes = [512, 4096]
pairs = [1]
placement = ["local-wire", "remote-wire"]
exchanges = 50
repetitions = 2
statistic = "best"
"#;

fn sh(cmd: &str) -> Output {
    Command::new("sh")
        .args(["-c", cmd])
        .output()
        .expect("sh runs")
}

fn must(cmd: &str) -> String {
    let out = sh(cmd);
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A user who is not root and may run anything through `sudo -n`, removed on drop.
struct SudoUser {
    name: String,
    sudoers: PathBuf,
}

impl SudoUser {
    fn create(name: &str) -> SudoUser {
        let _ = sh(&format!("userdel {name} 2>/dev/null"));
        // `*`, not useradd's locked `!`: sshd refuses a locked account even to a key.
        must(&format!(
            "useradd -M -d /nonexistent -s /bin/sh -p '*' {name}"
        ));
        let sudoers = PathBuf::from(format!("/etc/sudoers.d/{name}"));
        std::fs::write(&sudoers, format!("{name} ALL=(root) NOPASSWD: ALL\n")).unwrap();
        must(&format!("chmod 0440 {}", sudoers.display()));
        SudoUser {
            name: name.into(),
            sudoers,
        }
    }
}

impl Drop for SudoUser {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.sudoers);
        let _ = sh(&format!("userdel {}", self.name));
    }
}

/// A machine: a network namespace with its own sshd, whose sessions see a /run, /tmp and
/// /var/tmp of their own. Everything in it is killed and the namespace deleted on drop.
struct Machine {
    ns: String,
    sshd: Option<Child>,
}

impl Machine {
    fn new(ns: &str) -> Machine {
        let _ = sh(&format!("ip netns delete {ns} 2>/dev/null"));
        must(&format!("ip netns add {ns} && ip -n {ns} link set lo up"));
        Machine {
            ns: ns.into(),
            sshd: None,
        }
    }

    fn ip(&self, args: &str) {
        must(&format!("ip -n {} {args}", self.ns));
    }

    /// Starts sshd on `listen`:22 with the files of `dir` (copied into its private /run before
    /// /tmp is covered, so `dir` may live in /tmp) and waits until it listens.
    fn start_sshd(&mut self, dir: &Path, listen: &str) {
        let script = format!(
            "set -e; mount -t tmpfs -o mode=0755 tmpfs /run; mkdir -m 0755 /run/sshd /run/node; \
             cp {d}/host_key {d}/authorized_keys /run/node/; chmod 0600 /run/node/host_key; \
             chmod 0644 /run/node/authorized_keys; \
             mount -t tmpfs -o mode=1777 tmpfs /tmp; mount -t tmpfs -o mode=1777 tmpfs /var/tmp; \
             exec /usr/sbin/sshd -D -e -o ListenAddress={listen} -o Port=22 \
               -o HostKey=/run/node/host_key -o AuthorizedKeysFile=/run/node/authorized_keys \
               -o PidFile=none -o StrictModes=no -o UsePAM=no -o PasswordAuthentication=no \
               -o KbdInteractiveAuthentication=no -o PermitRootLogin=no -o MaxSessions=64 \
               -o MaxStartups=64 -o LogLevel=ERROR -f /dev/null",
            d = dir.display()
        );
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns, "sh", "-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sshd starts");
        self.sshd = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.sh("ss -Hltn 'sport = :22'").contains(":22") {
            assert!(
                Instant::now() < deadline,
                "{}: sshd does not listen",
                self.ns
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn sshd_pid(&self) -> u32 {
        self.sshd.as_ref().expect("sshd started").id()
    }

    /// Runs `cmd` in this machine's network namespace (the host's mounts).
    fn sh(&self, cmd: &str) -> String {
        must(&format!(
            "ip netns exec {} sh -c {}",
            self.ns,
            shlex::try_quote(cmd).unwrap()
        ))
    }

    /// Runs `cmd` as this machine's sessions see it: its namespace and its sshd's mounts.
    fn sh_inside(&self, cmd: &str) -> String {
        must(&format!(
            "nsenter -t {} -n -m sh -c {}",
            self.sshd_pid(),
            shlex::try_quote(cmd).unwrap()
        ))
    }

    /// What a run could leave behind: network state, the processes in the namespace (other
    /// than its sshd, as command lines), and every file under its /run and /tmp.
    fn state(&self) -> String {
        let net = self.sh_inside(
            "ip -o addr show; ip route show table all; ip -6 route show table all; \
             ip -o link show | sed 's/ link\\/ether.*//'; tc qdisc show; \
             sysctl net.ipv4.ip_forward net.ipv4.conf.all.rp_filter; \
             ip mptcp limits show 2>/dev/null; ip mptcp endpoint show 2>/dev/null",
        );
        let files = self.sh_inside("find /run /tmp -mindepth 1 | sort");
        format!(
            "{net}\n-- processes\n{}\n-- files\n{files}",
            self.processes().join("\n")
        )
    }

    /// The command lines of the processes in this namespace other than its sshd listener.
    fn processes(&self) -> Vec<String> {
        let pids = must(&format!("ip netns pids {}", self.ns));
        let sshd = self.sshd_pid().to_string();
        let mut lines: Vec<String> = pids
            .split_whitespace()
            .filter(|p| *p != sshd)
            .filter_map(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| !c.is_empty())
            .collect();
        lines.sort();
        lines
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = sh(&format!(
            "ip netns pids {0} | xargs -r kill -9; ip netns delete {0}",
            self.ns
        ));
        if let Some(mut c) = self.sshd.take() {
            let _ = c.wait();
        }
    }
}

/// The host's veth to the jump host, deleted on drop (with it goes its address).
struct Uplink(String);

impl Drop for Uplink {
    fn drop(&mut self) {
        let _ = sh(&format!("ip link delete {}", self.0));
    }
}

fn keygen(path: &Path) {
    must(&format!(
        "ssh-keygen -q -t ed25519 -N '' -C lab -f {}",
        path.display()
    ));
}

/// The public half of a key, as known_hosts and authorized_keys take it.
fn public(path: &Path) -> String {
    let text = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What an earlier run of this test left when it was killed before its drops ran: its user,
/// the user's sudoers file, its namespaces and the host's end of its uplink. Each carries the
/// test process's id in its name (`orchlab<pid>`, `orch-lab<pid>-…`, `orlab<pid>h`); what a
/// process that still runs made is its own and stays.
fn remove_what_a_killed_run_left() {
    must(
        r#"gone() { [ ! -d "/proc/$1" ]; }
        for ns in $(ip netns list | sed -n 's/^orch-lab\([0-9]*\)-\([a-z0-9]*\).*/\1-\2/p'); do
            gone "${ns%-*}" || continue
            ip netns pids "orch-lab$ns" | xargs -r kill -9; ip netns delete "orch-lab$ns"
        done
        for pid in $(ip -o link show | sed -n 's/^[0-9]*: orlab\([0-9]*\)h[@:].*/\1/p'); do
            gone "$pid" && ip link delete "orlab${pid}h"
        done
        for pid in $(sed -n 's/^orchlab\([0-9]*\):.*/\1/p' /etc/passwd); do
            gone "$pid" || continue
            pkill -9 -u "orchlab$pid" || :; userdel "orchlab$pid"; rm -f "/etc/sudoers.d/orchlab$pid"
        done
        :"#,
    );
}

/// The lab: jump host, nodes, user, keys, and the inventory that reaches them.
struct Lab {
    dir: tempfile::TempDir,
    jump: Machine,
    nodes: Vec<Machine>,
    // Dropped after the machines: their sessions are the user's.
    _uplink: Uplink,
    _user: SudoUser,
}

impl Lab {
    /// Lab number `lab` (each test its own: see [`uplink_addresses`]).
    fn new(lab: u8) -> Lab {
        remove_what_a_killed_run_left();
        let (uplink_host, uplink_jump) = uplink_addresses(lab);
        // The whole process id: interface names stay within 15 characters (`orlab` and 7
        // digits and 2 more), and a later run can tell whether the process that made them runs.
        let tag = std::process::id();
        let user = SudoUser::create(&format!("orchlab{tag}"));
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("node")).unwrap();
        keygen(&d.join("node/host_key"));
        keygen(&d.join("client_key"));
        std::fs::write(
            d.join("node/authorized_keys"),
            public(&d.join("client_key")) + "\n",
        )
        .unwrap();

        let mut jump = Machine::new(&format!("orch-lab{tag}-jump"));
        let uplink = Uplink(format!("orlab{tag}h"));
        must(&format!(
            "ip link add {h} type veth peer name uplink0 netns {j} && \
             ip addr add {uplink_host}/30 dev {h} && ip link set {h} up",
            h = uplink.0,
            j = jump.ns
        ));
        jump.ip(&format!(
            "addr add {uplink_jump}/30 dev uplink0 && ip -n {} link set uplink0 up",
            jump.ns
        ));
        jump.ip(&format!(
            "link add br-mgmt type bridge && ip -n {0} addr add {MGMT_PREFIX}.1/24 dev br-mgmt \
             && ip -n {0} link set br-mgmt up",
            jump.ns
        ));

        let mut nodes: Vec<Machine> = NODES
            .iter()
            .map(|n| Machine::new(&format!("orch-lab{tag}-{n}")))
            .collect();
        for (i, node) in nodes.iter().enumerate() {
            // Management: mgmt0 on the node, its peer on the jump host's bridge.
            let (a, b) = (format!("orlab{tag}m{i}"), format!("orlab{tag}n{i}"));
            must(&format!(
                "ip link add {a} netns {j} type veth peer name {b} netns {n}",
                j = jump.ns,
                n = node.ns
            ));
            jump.ip(&format!(
                "link set {a} master br-mgmt up && ip -n {} link set {a} up",
                jump.ns
            ));
            node.ip(&format!(
                "link set {b} name mgmt0 && ip -n {0} addr add {MGMT_PREFIX}.1{i}/24 dev mgmt0 \
                 && ip -n {0} link set mgmt0 up",
                node.ns
            ));
        }
        // The experiment's wires, up without addresses as a machine's spare NICs are (a link
        // once up keeps the kernel's default qdisc, so a wire first brought up by the run could
        // never look as it did): n1 lan0 - n2 lan0, n2 enp3s0f1 - n3 enp3s0f1.
        for (x, y, name) in [(0, 1, "lan0"), (1, 2, "enp3s0f1")] {
            let (a, b) = (format!("orlab{tag}x{x}"), format!("orlab{tag}y{y}"));
            must(&format!(
                "ip link add {a} netns {} type veth peer name {b} netns {}",
                nodes[x].ns, nodes[y].ns
            ));
            for (node, dev) in [(&nodes[x], &a), (&nodes[y], &b)] {
                node.ip(&format!(
                    "link set {dev} name {name} && ip -n {} link set {name} up",
                    node.ns
                ));
            }
        }
        // Forwarding off, as on a machine that routes nothing (a new namespace here starts
        // with it on): the run turns it on where the topology forwards, and must turn it off.
        for node in &nodes {
            node.sh("sysctl -qw net.ipv4.ip_forward=0");
        }
        // IPv6 gives each link a link-local address, tentative until duplicate address
        // detection ends: the state before the run is taken once it has.
        for m in std::iter::once(&jump).chain(&nodes) {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !m.sh("ip -6 addr show tentative").is_empty() {
                assert!(
                    Instant::now() < deadline,
                    "{}: addresses stay tentative",
                    m.ns
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }

        jump.start_sshd(&d.join("node"), &uplink_jump);
        for (i, node) in nodes.iter_mut().enumerate() {
            node.start_sshd(&d.join("node"), &format!("{MGMT_PREFIX}.1{i}"));
        }
        let key = public(&d.join("node/host_key"));
        let mut pinned = format!("{uplink_jump} {key}\n");
        for i in 0..NODES.len() {
            pinned += &format!("{MGMT_PREFIX}.1{i} {key}\n");
        }
        std::fs::write(d.join("known_hosts"), pinned).unwrap();

        let mut inventory = format!(
            "[defaults]\nuser = \"{u}\"\nsudo = true\nidentity = \"client_key\"\n\
             known_hosts = \"known_hosts\"\njump = \"{u}@{uplink_jump}\"\n",
            u = user.name
        );
        for (i, n) in NODES.iter().enumerate() {
            inventory +=
                &format!("\n[[host]]\nnodes = \"{n}\"\naddress = \"{MGMT_PREFIX}.1{i}\"\n");
        }
        std::fs::write(d.join("hosts.toml"), inventory).unwrap();
        std::fs::write(d.join("lab3.toml"), TOPOLOGY).unwrap();
        std::fs::write(d.join("lab.toml"), EXPERIMENT).unwrap();
        Lab {
            dir,
            jump,
            nodes,
            _uplink: uplink,
            _user: user,
        }
    }

    fn path(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    /// Waits until no session of the run is left on any machine (ssh masters close when the
    /// controller is done; their sshd children go with them).
    fn wait_for_sessions_to_end(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        for m in std::iter::once(&self.jump).chain(&self.nodes) {
            while !m.processes().is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

#[test]
fn netns_sshd_sudo_inventory_run_through_a_jump_host_leaves_each_node_as_found() {
    require_needs!();
    let lab = Lab::new(0);
    let before: Vec<String> = lab.nodes.iter().map(Machine::state).collect();
    let jump_before = lab.jump.state();
    for (n, state) in NODES.iter().zip(&before) {
        assert!(
            !state.contains("10.111."),
            "{n} starts unconfigured: {state}"
        );
        assert!(state.contains("mgmt0"), "{n}: {state}");
    }

    let out = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(["run", &lab.path("lab.toml"), "--out", &lab.path("out")])
        .current_dir(lab.dir.path())
        .output()
        .expect("orchestrate runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the run failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Every planned point measured, over the odd interface names, through sudo (the user
    // cannot configure an interface himself) and the jump host (nothing else reaches the
    // management network).
    let runs: Vec<PathBuf> = std::fs::read_dir(lab.path("out/lab"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let outcomes = std::fs::read_to_string(runs[0].join("points.jsonl")).unwrap();
    let points: BTreeSet<(u64, u64)> = outcomes
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|p| p["status"] == "ok")
        .map(|p| (p["point"].as_u64().unwrap(), p["rep"].as_u64().unwrap()))
        .collect();
    // 2 sizes x 2 placements x 2 repetitions.
    assert_eq!(points.len(), 8, "points measured: {points:?}\n{stderr}");

    lab.wait_for_sessions_to_end();
    for ((n, m), was) in NODES.iter().zip(&lab.nodes).zip(&before) {
        assert_eq!(&m.state(), was, "{n} is not as the run found it");
        // The worker stays installed (a node keeps its build between runs), in the private
        // directory of the user it ran as: root, through sudo.
        let kept = m.sh_inside("find /var/tmp -mindepth 1 | sort");
        let kept: Vec<&str> = kept.lines().collect();
        assert_eq!(kept.len(), 2, "{n}: /var/tmp holds {kept:?}");
        assert_eq!(kept[0], "/var/tmp/orchestrate-0", "{n}: {kept:?}");
        assert!(
            kept[1].starts_with("/var/tmp/orchestrate-0/orchestrate-worker-"),
            "{n}: {kept:?}"
        );
    }
    assert_eq!(lab.jump.state(), jump_before, "the jump host was changed");
}

/// The network state of a machine and the files of its /run: what a teardown is judged on
/// here (processes left by a run killed mid-point are not the ledger's business).
fn network_and_run(m: &Machine) -> String {
    let state = m.state();
    let net = state.split("\n-- processes\n").next().unwrap_or_default();
    let run = m.sh_inside("find /run -mindepth 1 | sort");
    format!("{net}\n-- /run\n{run}")
}

/// A run killed with SIGKILL once it has measured a few points, then two nodes' ledgers lost
/// (as a cleanup of /run would lose them), and on one of the two a change of the run's made
/// over by someone else: `orchestrate teardown` undoes from the run's copy each change still
/// exactly as the run made it, names the one it left alone, keeps ledger.json and fails.
#[test]
fn netns_sshd_sudo_a_lost_ledger_is_undone_from_the_runs_copy_and_nothing_is_claimed() {
    require_needs!();
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;

    let lab = Lab::new(1);
    let before: Vec<String> = lab.nodes.iter().map(network_and_run).collect();
    assert!(
        before[1].contains("net.ipv4.ip_forward = 0"),
        "n2 starts without forwarding: {}",
        before[1]
    );
    let mut run = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(["run", &lab.path("lab.toml"), "--out", &lab.path("out")])
        .args(["--events", "-"])
        .current_dir(lab.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own process group, so that its ssh connections die with it.
        .process_group(0)
        .spawn()
        .expect("orchestrate runs");
    let events = BufReader::new(run.stdout.take().unwrap());
    let mut finished = 0;
    for line in events.lines() {
        let line = line.unwrap();
        if line.contains("\"type\":\"point_finished\"") {
            finished += 1;
            if finished == 3 {
                break;
            }
        }
    }
    assert_eq!(finished, 3, "the run ended before three points");
    // procps' kill: the shell's own does not take a process group.
    must(&format!("/bin/kill -KILL -- -{}", run.id()));
    let _ = run.wait();
    lab.wait_for_sessions_to_end();
    let runs: Vec<PathBuf> = std::fs::read_dir(lab.path("out/lab"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let ledger_json = runs[0].join("ledger.json");
    assert!(ledger_json.exists(), "a killed run keeps its ledger");

    // n2 and n3 lose their ledgers; on n2 someone turns forwarding off again after the run
    // turned it on.
    for m in &lab.nodes[1..] {
        m.sh_inside("rm /run/orchestrate/ledger");
    }
    lab.nodes[1].sh_inside("sysctl -qw net.ipv4.ip_forward=0");

    let teardown = |expect_success: bool| {
        let out = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
            .arg("teardown")
            .arg(&runs[0])
            .current_dir(lab.dir.path())
            .output()
            .expect("orchestrate teardown runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.success(), expect_success, "{stderr}");
        stderr
    };
    let said = teardown(false);
    assert!(said.contains("n1: undone from its ledger"), "{said}");
    assert!(
        said.contains("n3: its ledger was missing steps"),
        "n3 is undone from the copy: {said}"
    );
    assert!(
        said.contains("left alone step") && said.contains("sysctl net.ipv4.ip_forward=1"),
        "n2's forwarding, no longer as the run made it, is named: {said}"
    );
    assert!(!said.contains("every node of the ledger is back"), "{said}");
    assert!(
        ledger_json.exists(),
        "a teardown that fails keeps ledger.json"
    );
    // Everything else is back, on every node, n2 included: the change left alone is off, as
    // whoever turned it off wanted.
    for ((n, m), was) in NODES.iter().zip(&lab.nodes).zip(&before) {
        assert_eq!(&network_and_run(m), was, "{n} is not as the run found it");
    }
}
