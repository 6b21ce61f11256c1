//! `up` for a netns cluster: every step recorded in the state file before it is made, the
//! slow ones (namespaces, veths) in one `ip -batch` each and the per-node ones a few nodes at
//! a time.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::Ipv4Addr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use orchestrate_medium::realtime::placement::Placement;

use crate::remote::installed_worker;
use crate::vcluster::cluster_dir::ClusterDir;
use crate::vcluster::cmd::{Cmd, on_path};
use crate::vcluster::docker::{NodeImage, locate_worker};
use crate::vcluster::error::{Error, Result};
use crate::vcluster::names::ClusterName;
use crate::vcluster::parallel;
use crate::vcluster::ssh;
use crate::vcluster::state::{Kind, State};
use crate::vcluster::up::{
    UpOptions, UpReport, check_tun, emulate_wires, mkdir, write, write_access_files,
};
use crate::vcluster::wires::veth::{self, Owner, Wire};
use crate::vcluster::wires::{
    Emulation, Ns, SegmentId, Wiring, check_kernel, ip_batch, private_dir,
};

use super::enter;
use super::namespaces;
use super::record::{NetnsRecord, Role, plan};
use super::sshd;
use super::{mgmt, subnet};
use crate::vcluster::vm::guest::{Guest, SharedFiles};

/// Nodes set up at once (an `ip` in each namespace, a thread entering it): each costs the
/// host a few milliseconds of CPU, so more only queue.
const SETUP_WIDTH: usize = 8;
/// Keys generated at once (`ssh-keygen`, a few milliseconds of CPU each).
const KEYGEN_WIDTH: usize = 8;
/// sshd banners awaited at once: connections cost almost nothing until sshd answers.
const PROBE_WIDTH: usize = 32;
/// How long every sshd has to answer: a minute, and 50 ms more per node (1024 answer within
/// 7 s on an idle 2-core host; a host busy with other work may take many times that).
fn sshd_limit(nodes: usize) -> Duration {
    Duration::from_secs(60) + Duration::from_millis(50) * nodes as u32
}

/// Brings up a cluster of network namespaces (see the module's documentation).
pub fn up(wiring: &Wiring, opts: &UpOptions) -> Result<UpReport> {
    let start = Instant::now();
    check_host()?;
    refuse_token_buckets(wiring, &opts.source)?;
    check_kernel(wiring)?;
    let dir = ClusterDir::new(&opts.state_dir, &opts.name);
    if State::load(&dir.state_file())?.is_some() || super::down::has_traces(&opts.name) {
        return Err(Error::Host {
            problem: format!("cluster {:?} already exists", opts.name.as_str()),
            what_to_do: format!(
                "take it down first (`orchestrate cluster down --name {} --state-dir {}`) or \
                 choose another --name",
                opts.name,
                opts.state_dir.display()
            ),
        });
    }
    let worker = locate_worker(opts.image.worker.as_deref())?;
    let mut steps = Vec::new();
    let mut t = Instant::now();
    let mut step = |name: &'static str| {
        steps.push((name, t.elapsed()));
        t = Instant::now();
    };
    let result = bring_up(wiring, opts, &dir, &worker, &mut step);
    match result {
        Ok(medium_pid) => Ok(UpReport {
            dir,
            image: NodeImage {
                tag: "none: netns nodes run this host's programs".into(),
                base: "this host".into(),
                worker,
                built: false,
                elapsed: Duration::ZERO,
            },
            nodes: wiring.nodes.len(),
            switches: wiring.switches.len(),
            ifbs: 0,
            medium_pid,
            steps,
            elapsed: start.elapsed(),
        }),
        Err(e) if opts.keep_on_failure => Err(e),
        Err(e) => {
            tracing::warn!("up failed; removing what it made: {e}");
            let state = State::load(&dir.state_file()).unwrap_or(None);
            if let Err(e2) = super::down::down(&opts.name, &dir, state.as_ref()) {
                tracing::warn!("cleaning up after the failed up also failed: {e2}");
            }
            Err(e)
        }
    }
}

fn bring_up(
    wiring: &Wiring,
    opts: &UpOptions,
    dir: &ClusterDir,
    worker: &Path,
    step: &mut dyn FnMut(&'static str),
) -> Result<Option<u32>> {
    let c = &opts.name;
    let mut state = record_state(wiring, opts, dir, subnet::free_on_host()?)?;
    let record = state.netns.clone().expect("recorded above");
    let worker = share_worker(dir, worker)?;
    step("record");

    let host_keys = generate_keys(c, wiring, dir)?;
    let addresses: BTreeMap<String, String> = record
        .nodes()
        .filter_map(|m| Some((m.name.clone(), m.address?.to_string())))
        .collect();
    write_access_files(c, wiring, dir, &addresses, &host_keys)?;
    write(&dir.sshd_config(), &sshd::config())?;
    step("keys");

    namespaces::add(&record.namespaces())?;
    parallel::try_for_each(SETUP_WIDTH, &record.members, |m| {
        namespaces::set_sysctls(&m.namespace, &sysctls(wiring, &m.name, m.role))
    })?;
    step("namespaces");

    mgmt::create(&record)?;
    let wires = veth::plan(c, wiring);
    let namespace_of = |owner: &Owner| -> Result<String> {
        let name = match owner {
            Owner::Node(n) | Owner::Switch(n) => n,
        };
        record
            .member(name)
            .map(|m| m.namespace.clone())
            .ok_or_else(|| Error::Wiring(format!("a wire names {owner:?}, which has no namespace")))
    };
    veth::create(&wires, namespace_of)?;
    parallel::try_for_each(SETUP_WIDTH, &record.members, |m| {
        set_up_inside(wiring, &record, &wires, &m.name, &m.namespace, m.role)
    })?;
    step("interfaces");

    let mut ports: BTreeMap<SegmentId, Vec<String>> = BTreeMap::new();
    // The wires are numbered nodes first, then switches, as the medium lists each segment's
    // ports.
    for w in &wires {
        ports.entry(w.segment).or_default().push(w.outside.clone());
    }
    emulate_wires(wiring, opts, dir, &ports, &mut state)?;
    step("emulation");

    start_sshds(dir, &record, &wires, &worker, &mut state)?;
    let listening: Vec<(String, Ipv4Addr)> = record
        .nodes()
        .filter_map(|m| Some((m.name.clone(), m.address?)))
        .collect();
    sshd::wait_listening(&listening, sshd_limit(listening.len()), PROBE_WIDTH)?;
    // Every node has its mount namespace now: the template's is no longer needed.
    if let Some(template) = state.netns.as_mut().and_then(|r| r.template.take()) {
        sshd::stop(&[template]);
        state.save(&dir.state_file())?;
    }
    // One login end to end (key, host key, shell) proves what every node shares; the banners
    // prove each sshd runs.
    if let Some(first) = crate::remote::Inventory::load(&dir.inventory())
        .ok()
        .and_then(|inv| inv.hosts.into_values().next())
    {
        ssh::wait_ready(&first, Duration::from_secs(30))?;
    }
    step("ssh");
    if opts.kind == Kind::Vm {
        boot_guests(wiring, opts, &record, &worker, &mut state)?;
        step("guests");
    }
    Ok(state.medium_pid)
}

/// A VM cluster's guests, one in each node's namespace (see `vm/`), booted once the
/// namespaces are up; their sshds take over the nodes' addresses and host keys, so the
/// inventory and known_hosts stay as written.
fn boot_guests(
    wiring: &Wiring,
    opts: &UpOptions,
    record: &NetnsRecord,
    worker: &SharedWorker,
    state: &mut State,
) -> Result<()> {
    // The guests read their files by this host's absolute paths.
    let state_dir = std::fs::canonicalize(&opts.state_dir)
        .map_err(|e| Error::io("resolving", &opts.state_dir, e))?;
    let dir = ClusterDir::new(&state_dir, &opts.name);
    let (guests, files): (Vec<Guest>, Vec<SharedFiles>) = record
        .nodes()
        .map(|m| {
            let ports = wiring
                .nodes
                .iter()
                .find(|n| n.name == m.name)
                .map(|n| n.ports.iter().map(|p| p.interface.clone()).collect())
                .unwrap_or_default();
            let guest = Guest {
                node: m.name.clone(),
                namespace: m.namespace.clone(),
                mgmt_lines: mgmt::inside_lines(record, &m.name),
                mgmt_mac: m.mac.clone().unwrap_or_default(),
                ports,
                sysctls: sysctls(wiring, &m.name, Role::Node),
                dir: dir.node_dir(&m.name),
            };
            let files = SharedFiles {
                sshd_config: dir.sshd_config(),
                host_key: dir.host_key(&m.name),
                authorized_keys: dir.authorized_keys(),
                worker_dir: worker.dir.clone(),
                installed_worker: worker.installed_name.clone(),
            };
            (guest, files)
        })
        .unzip();
    crate::vcluster::vm::boot::boot(&guests, &files, &dir, state)?;
    if let Some(first) = crate::remote::Inventory::load(&dir.inventory())
        .ok()
        .and_then(|inv| inv.hosts.into_values().next())
    {
        ssh::wait_ready(&first, Duration::from_secs(120))?;
    }
    Ok(())
}

/// The state file, first: every namespace, link and wire named before any is made, and the
/// runtime directory marked as a netns cluster's, so that `down` (and `down --all`) find all
/// of it even if `up` dies.
fn record_state(
    wiring: &Wiring,
    opts: &UpOptions,
    dir: &ClusterDir,
    subnet: ipnet::Ipv4Net,
) -> Result<State> {
    let c = &opts.name;
    for n in &wiring.nodes {
        mkdir(&dir.node_dir(&n.name))?;
    }
    if let Some(parent) = dir.runtime().parent() {
        private_dir(parent, 0o755)?;
    }
    private_dir(dir.runtime(), 0o700)?;
    write(
        &dir.netns_marker(),
        "a netns cluster of orchestrate; `cluster down` removes it\n",
    )?;
    let state = State {
        netns: Some(plan(c, wiring, subnet)?),
        ..State::planned(
            c,
            opts.kind,
            "none (netns)".into(),
            opts.source.clone(),
            wiring,
        )
    };
    state.save(&dir.state_file())?;
    Ok(state)
}

/// A copy of the worker in the cluster's runtime directory (root's, mode 0700), which every
/// node lays over its /usr/local/bin: one copy for all nodes, which the build directory's
/// next `cargo build` cannot change under a running cluster. Returns its directory.
fn share_worker(dir: &ClusterDir, worker: &Path) -> Result<SharedWorker> {
    let bin = dir.worker_bin_dir();
    private_dir(&bin, 0o755)?;
    let bytes = std::fs::read(worker).map_err(|e| Error::io("reading the worker", worker, e))?;
    let path = bin.join("orchestrate-worker");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o755)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| Error::io("copying the worker", &path, e))?;
    f.write_all(&bytes)
        .map_err(|e| Error::io("copying the worker", &path, e))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io("copying the worker", &path, e))?;
    Ok(SharedWorker {
        dir: bin,
        installed_name: installed_worker::file_name(&installed_worker::sha256_hex(&bytes)),
    })
}

struct SharedWorker {
    dir: PathBuf,
    installed_name: String,
}

/// The cluster's login key and every node's host key, a few at a time.
fn generate_keys(
    c: &ClusterName,
    wiring: &Wiring,
    dir: &ClusterDir,
) -> Result<BTreeMap<String, String>> {
    let user_key = ssh::generate_key(&dir.identity(), &format!("orchestrate cluster {c}"))?;
    write(&dir.authorized_keys(), &format!("{user_key}\n"))?;
    let keys = parallel::try_map(KEYGEN_WIDTH, &wiring.nodes, |n| {
        ssh::generate_key(&dir.host_key(&n.name), &format!("root@{}", n.name))
            .map(|k| (n.name.clone(), k))
    })?;
    Ok(keys.into_iter().collect())
}

/// A member's sysctls, as the docker kind gives its containers: forwarding where the
/// topology routes through the node, ECMP's hash policy where it routes with ECMP, and IPv6
/// off so that its chatter does not cross the measured wires.
fn sysctls(wiring: &Wiring, name: &str, role: Role) -> Vec<(&'static str, &'static str)> {
    let node = (role == Role::Node)
        .then(|| wiring.nodes.iter().find(|n| n.name == name))
        .flatten();
    let mut out = vec![
        ("net.ipv6.conf.all.disable_ipv6", "1"),
        ("net.ipv6.conf.default.disable_ipv6", "1"),
        (
            "net.ipv4.ip_forward",
            if node.is_some_and(|n| n.forwarding) {
                "1"
            } else {
                "0"
            },
        ),
    ];
    if let Some(policy) = node.and_then(|n| n.multipath_hash).map(|h| h.policy()) {
        out.push(("net.ipv4.fib_multipath_hash_policy", policy));
    }
    out
}

/// Inside one member, in one `ip -batch`: loopback, a node's `mgmt0`, its wires named (a
/// switch's on its bridge) and up; then a node's offloads off on its experiment interfaces.
fn set_up_inside(
    wiring: &Wiring,
    record: &NetnsRecord,
    wires: &[Wire],
    name: &str,
    namespace: &str,
    role: Role,
) -> Result<()> {
    let owner = match role {
        Role::Node => Owner::Node(name.to_owned()),
        Role::Switch => Owner::Switch(name.to_owned()),
    };
    let own = veth::of(wires, &owner);
    let mut lines = vec!["link set dev lo up".to_owned()];
    lines.extend(mgmt::inside_lines(record, name));
    if !own.is_empty() {
        lines.extend(veth::inside_lines(&own, false));
    }
    ip_batch(
        Ns::Named(namespace),
        &format!("setting up {} {name}'s interfaces", role_word(role)),
        &lines,
    )?;
    if let Some(n) = wiring
        .nodes
        .iter()
        .find(|n| n.name == name && role == Role::Node)
    {
        let ifnames: Vec<&str> = n.ports.iter().map(|p| p.interface.as_str()).collect();
        namespaces::offloads_off(namespace, &ifnames)?;
    }
    Ok(())
}

fn role_word(role: Role) -> &'static str {
    match role {
        Role::Node => "node",
        Role::Switch => "switch",
    }
}

/// Starts every node's sshd and records each as it is started; steers the switches' receive
/// work as the nodes' sshd scripts steer theirs.
fn start_sshds(
    dir: &ClusterDir,
    record: &NetnsRecord,
    wires: &[Wire],
    worker: &SharedWorker,
    state: &mut State,
) -> Result<()> {
    // The receive work of frames the medium emulator writes goes to the CPUs its event
    // thread leaves to the nodes (nothing to steer on a one-CPU host).
    let mask = Placement::for_this_process().map(|p| p.steering_mask());
    let log_path = dir.sshd_log();
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&log_path)
        .map_err(|e| Error::io("opening the sshd log", &log_path, e))?;
    let read = |path: PathBuf| std::fs::read(&path).map_err(|e| Error::io("reading", &path, e));
    let authorized_keys = read(dir.authorized_keys())?;
    let config = read(dir.sshd_config())?;
    let template = sshd::Template::start()?;
    if let Some(r) = state.netns.as_mut() {
        r.template = Some(template.0.clone());
    }
    state.save(&dir.state_file())?;
    let mut started = Vec::new();
    let result = (|| {
        for m in record.nodes() {
            let own = veth::of(wires, &Owner::Node(m.name.clone()));
            let host_key = read(dir.host_key(&m.name))?;
            started.push(sshd::start(
                &enter::Start {
                    namespace: &m.namespace,
                    node: &m.name,
                    worker_dir: &worker.dir,
                    worker_name: &worker.installed_name,
                    rps_mask: mask.as_deref(),
                    wires: own
                        .iter()
                        .map(|w| enter::WirePort {
                            inside: &w.inside,
                            rx_queues: rx_queues(&w.outside),
                        })
                        .collect(),
                },
                &enter::SshdFiles {
                    host_key: &host_key,
                    authorized_keys: &authorized_keys,
                    config: &config,
                },
                &template,
                &log,
            )?);
        }
        Ok::<_, Error>(())
    })();
    // Recorded whatever happened: `down` stops exactly these.
    if let Some(r) = state.netns.as_mut() {
        r.sshd = started;
    }
    state.save(&dir.state_file())?;
    result?;
    if let Some(mask) = mask.as_deref() {
        for m in record.members.iter().filter(|m| m.role == Role::Switch) {
            let own = veth::of(wires, &Owner::Switch(m.name.clone()));
            steer_switch(&m.namespace, &own, mask)?;
        }
    }
    Ok(())
}

/// How many receive queues a wire's host end has, and so its inside end (a veth pair's ends
/// are made alike): one unless the kernel gives veths more.
fn rx_queues(outside: &str) -> usize {
    std::fs::read_dir(format!("/sys/class/net/{outside}/queues"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count()
        })
        .unwrap_or(1)
        .max(1)
}

/// `rps_cpus` on a switch's ports, from a shell whose /sys is the switch's (`ip netns exec`
/// mounts it).
fn steer_switch(namespace: &str, own: &[&Wire], mask: &str) -> Result<()> {
    if own.is_empty() {
        return Ok(());
    }
    let writes: Vec<String> = own
        .iter()
        .map(|w| {
            format!(
                "for q in /sys/class/net/{}/queues/rx-*; do echo {mask} > $q/rps_cpus; done",
                w.inside
            )
        })
        .collect();
    Cmd::new("ip", format!("steering switch {namespace}'s receive work"))
        .args(["netns", "exec", namespace, "sh", "-c", &writes.join(" && ")])
        .run()
        .map(drop)
}

/// A segment shaped by token buckets is a docker network in the docker kind; here there is
/// none, so such a topology is refused where its segment is named.
fn refuse_token_buckets(wiring: &Wiring, source: &str) -> Result<()> {
    let shaped: Vec<&str> = wiring
        .segments
        .iter()
        .filter(|s| s.emulation == Emulation::Rate)
        .map(|s| s.name.as_str())
        .collect();
    if shaped.is_empty() {
        return Ok(());
    }
    Err(Error::Wiring(format!(
        "{source}: topology {}: segment(s) {} have `emulation = \"rate\"`, which a netns cluster \
         does not build (token buckets need the docker kind's networks); remove the line so \
         that the medium emulator carries them, or use `--kind docker`",
        wiring.topology,
        shaped.join(", ")
    )))
}

/// Root, sshd, tun, iproute2 and unshare: what every node needs from this host.
fn check_host() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::Host {
            problem: "a netns cluster makes network namespaces, mounts and links, which needs root"
                .into(),
            what_to_do: "run `orchestrate cluster` as root (e.g. with sudo)".into(),
        });
    }
    if !Path::new(sshd::SSHD).is_file() {
        return Err(Error::Host {
            problem: format!(
                "{} is missing: every netns node runs this host's sshd",
                sshd::SSHD
            ),
            what_to_do: "install openssh-server (Debian: apt-get install openssh-server); its \
                         service need not run"
                .into(),
        });
    }
    for program in ["ip", "unshare", "ssh", "ssh-keygen"] {
        if on_path(program).is_none() {
            return Err(Error::Host {
                problem: format!("`{program}` is not installed; netns nodes need it"),
                what_to_do: "install iproute2, util-linux and openssh-client".into(),
            });
        }
    }
    check_tun()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::wires::mesh;

    #[test]
    fn token_bucket_segments_are_refused_by_name() {
        let mut w = mesh(true);
        assert!(refuse_token_buckets(&w, "t.toml").is_ok());
        w.segments[2].emulation = Emulation::Rate;
        let err = refuse_token_buckets(&w, "t.toml").unwrap_err().to_string();
        assert!(err.contains("t.toml"), "{err}");
        assert!(err.contains(&w.segments[2].name), "{err}");
        assert!(!err.contains(&w.segments[1].name), "{err}");
    }

    #[test]
    fn only_forwarding_nodes_forward() {
        let mut w = mesh(false);
        w.nodes[1].forwarding = true;
        let on = |name: &str, role| sysctls(&w, name, role).contains(&("net.ipv4.ip_forward", "1"));
        assert!(on(&w.nodes[1].name, Role::Node));
        assert!(!on(&w.nodes[0].name, Role::Node));
        assert!(!on(&w.nodes[1].name, Role::Switch));
    }
}
