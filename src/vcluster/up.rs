//! `up`: the steps, in order, each recorded so that `down` can undo it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::cluster_dir::ClusterDir;
use super::cmd::Cmd;
use super::docker::{
    ContainerInfo, Docker, ImageOptions, MGMT_NETWORK_KEY, NodeImage, Project, create_project,
    ensure_image, render_compose, segment_network_key,
};
use super::down::down;
use super::error::{Error, Result};
use super::names::{ClusterName, LABEL_NAME, LABEL_ROLE, MGMT_IFNAME};
use super::parallel;
use super::ssh;
use super::state::{Kind, State};
use super::wires::veth::{self, Owner, SWITCH_BRIDGE, Wire};
use super::wires::{
    Node, Ns, SegmentId, Switch, Wanted, Wiring, apply_emulation, check_kernel, emulation_setup,
    emulator_config, ip_batch, ns_links, offloads_off, rename_plan, start_emulator, steer_receive,
    switch_service,
};
use crate::remote::{Host, Inventory};
use crate::spec::NodeName;
use orchestrate_medium::realtime::placement::Placement;

/// SSH logins tried at once while waiting for the nodes: each costs the host a few
/// milliseconds of CPU on both ends, so more only queue.
const SSH_PROBE_WIDTH: usize = 16;
/// Containers whose interfaces are named at once (`ip` and `ethtool` in their namespaces).
const NAMING_WIDTH: usize = 8;

/// The user nodes are logged into (experiment scripts change interfaces, routes and qdiscs).
pub const NODE_USER: &str = "root";

/// Seeds the medium emulator's backoff draws (the study's year): the same seed, the same
/// sequence of draws for the same sequence of contentions.
pub const DEFAULT_MEDIUM_SEED: u64 = 1996;

#[derive(Debug, Clone)]
pub struct UpOptions {
    pub name: ClusterName,
    /// Root of the clusters' directories (default `.orchestrate`).
    pub state_dir: PathBuf,
    pub image: ImageOptions,
    /// The topology or experiment file, for the record.
    pub source: String,
    /// Leave a half-made cluster in place when `up` fails (for debugging); by default it is
    /// taken down again.
    pub keep_on_failure: bool,
    /// Seeds the medium emulator's backoff draws.
    pub medium_seed: u64,
    /// Containers or network namespaces.
    pub kind: Kind,
}

#[derive(Debug)]
pub struct UpReport {
    pub dir: ClusterDir,
    pub image: NodeImage,
    pub nodes: usize,
    pub switches: usize,
    pub ifbs: usize,
    /// The medium emulator's process, when a segment is emulated frame by frame.
    pub medium_pid: Option<u32>,
    /// Wall time of each step, in order.
    pub steps: Vec<(&'static str, Duration)>,
    pub elapsed: Duration,
}

/// Brings a docker cluster up: image, keys, compose file, containers, interface names, link
/// emulation, inventory, and a check that every node answers over SSH. (`by_kind::up` hands
/// a netns cluster to `netns::up` instead.)
pub fn up(wiring: &Wiring, opts: &UpOptions) -> Result<UpReport> {
    let start = Instant::now();
    check_host()?;
    check_kernel(wiring)?;
    let docker = Docker::connect()?;
    let existing = docker.cluster_containers(&opts.name)?;
    if !existing.is_empty() {
        return Err(Error::Host {
            problem: format!(
                "cluster {:?} already exists ({} containers)",
                opts.name.as_str(),
                existing.len()
            ),
            what_to_do: format!(
                "take it down first (`orchestrate cluster down --name {}`) or choose another --name",
                opts.name
            ),
        });
    }
    let mut steps = Vec::new();
    let mut t = Instant::now();
    let mut step = |name: &'static str, t: &mut Instant| {
        steps.push((name, t.elapsed()));
        *t = Instant::now();
    };
    let image = ensure_image(&docker, &opts.image)?;
    step("image", &mut t);
    let dir = ClusterDir::new(&opts.state_dir, &opts.name);
    let result = bring_up(&docker, wiring, opts, &dir, &image, &mut |n| {
        step(n, &mut t)
    });
    match result {
        Ok((ifbs, medium_pid)) => Ok(UpReport {
            dir,
            image,
            nodes: wiring.nodes.len(),
            switches: wiring.switches.len(),
            ifbs,
            medium_pid,
            steps,
            elapsed: start.elapsed(),
        }),
        Err(e) if opts.keep_on_failure => Err(e),
        Err(e) => {
            tracing::warn!("up failed; removing what it made: {e}");
            if let Err(e2) = down(&opts.name, &opts.state_dir) {
                tracing::warn!("cleaning up after the failed up also failed: {e2}");
            }
            Err(e)
        }
    }
}

/// Everything after the image, in order; `step` is told as each named step ends. Returns how
/// many ifb devices it made and the medium emulator's pid.
fn bring_up(
    docker: &Docker,
    wiring: &Wiring,
    opts: &UpOptions,
    dir: &ClusterDir,
    image: &NodeImage,
    step: &mut dyn FnMut(&'static str),
) -> Result<(usize, Option<u32>)> {
    let c = &opts.name;
    let mut state = record_state(wiring, opts, dir, image)?;
    let host_keys = generate_keys(c, wiring, dir)?;
    step("keys");

    let mut project = Project::new(c, wiring, &image.tag, &opts.source);
    project
        .assign_segment_subnets(&docker.network_subnets()?)
        .map_err(|problem| Error::Host {
            problem,
            what_to_do: "remove networks you no longer need (`docker network ls`)".into(),
        })?;
    write(&dir.compose_file(), &render_compose(&project))?;
    create_project(&project, dir.root())?;
    step("containers");

    let attached = Attached::inspect(docker, c, wiring)?;
    let renamed = rename_endpoints(&attached, wiring)?;
    let inventory = write_access_files(c, wiring, dir, &renamed.mgmt_addr, &host_keys)?;
    // The nodes' sshd answers on mgmt0 while the wires are made and the emulator starts:
    // nothing on the management network waits for them.
    let (wired, ready) = std::thread::scope(|s| {
        let ready = s.spawn(|| wait_all_ready(&inventory));
        let wired = (|| {
            let ports = make_wires(&attached, wiring, &renamed)?;
            step("interfaces");
            let ifbs = emulate_wires(wiring, opts, dir, &ports, &mut state)?;
            step("emulation");
            Ok::<_, Error>(ifbs)
        })();
        (wired, ready.join().expect("the SSH wait does not panic"))
    });
    let ifbs = wired?;
    ready?;
    step("ssh");
    Ok((ifbs, state.medium_pid))
}

/// Makes the nodes' directories and writes the state file, first: from here on, `down`
/// knows the cluster even if `up` dies.
fn record_state(
    wiring: &Wiring,
    opts: &UpOptions,
    dir: &ClusterDir,
    image: &NodeImage,
) -> Result<State> {
    let c = &opts.name;
    for n in &wiring.nodes {
        mkdir(&dir.node_dir(&n.name))?;
    }
    let state = State::planned(
        c,
        Kind::Docker,
        image.tag.clone(),
        opts.source.clone(),
        wiring,
    );
    state.save(&dir.state_file())?;
    Ok(state)
}

/// The cluster's login key (authorized on every node) and one host key per node; returns
/// each node's public host key, for known_hosts.
fn generate_keys(
    c: &ClusterName,
    wiring: &Wiring,
    dir: &ClusterDir,
) -> Result<BTreeMap<String, String>> {
    let user_key = ssh::generate_key(&dir.identity(), &format!("orchestrate cluster {c}"))?;
    write(&dir.authorized_keys(), &format!("{user_key}\n"))?;
    let mut host_keys = BTreeMap::new();
    for n in &wiring.nodes {
        let k = ssh::generate_key(&dir.host_key(&n.name), &format!("root@{}", n.name))?;
        host_keys.insert(n.name.clone(), k);
    }
    Ok(host_keys)
}

/// The running containers as docker reports them and the host's interfaces by index: what
/// naming the interfaces works from.
struct Attached<'a> {
    cluster: &'a ClusterName,
    containers: Vec<ContainerInfo>,
    host_ifnames: BTreeMap<u32, String>,
    /// The tool's own wires, to make.
    wires: Vec<Wire>,
    /// `rps_cpus` for the wires' inside ends.
    rps_mask: Option<String>,
}

impl<'a> Attached<'a> {
    fn inspect(docker: &Docker, c: &'a ClusterName, wiring: &Wiring) -> Result<Attached<'a>> {
        Ok(Attached {
            cluster: c,
            containers: docker.inspect_containers(&docker.cluster_containers(c)?)?,
            host_ifnames: ns_links(Ns::Host)?
                .into_iter()
                .map(|l| (l.ifindex, l.ifname))
                .collect(),
            wires: veth::plan(c, wiring),
            // The receive work of frames the medium emulator writes goes to the CPUs its
            // event thread leaves to the nodes (nothing to steer on a one-CPU host).
            rps_mask: Placement::for_this_process().map(|p| p.steering_mask()),
        })
    }

    fn container(&self, role: &str, name: &str) -> Result<&ContainerInfo> {
        self.containers
            .iter()
            .find(|ci| ci.label(LABEL_ROLE) == Some(role) && ci.label(LABEL_NAME) == Some(name))
            .ok_or_else(|| Error::Unexpected {
                what: format!("finding the container of {role} {name}"),
                command: "docker container inspect".into(),
                detail: "compose did not create it".into(),
            })
    }

    /// The MAC and IP address of `ci`'s endpoint on the network `key`.
    fn endpoint(&self, ci: &ContainerInfo, key: &str) -> Result<(String, String)> {
        let net = self.cluster.network_name(key);
        ci.network_settings
            .networks
            .get(&net)
            .map(|e| (e.mac_address.clone(), e.ip_address.clone()))
            .ok_or_else(|| Error::Unexpected {
                what: format!("finding {}'s endpoint on {net}", ci.name),
                command: "docker container inspect".into(),
                detail: "the container is not attached to the network".into(),
            })
    }

    /// The host side's name of the veth whose peer is interface `index` of `owner`.
    fn host_name(&self, index: u32, owner: &str) -> Result<String> {
        self.host_ifnames
            .get(&index)
            .cloned()
            .ok_or_else(|| Error::Unexpected {
                what: format!("finding the host side of {owner}'s interface"),
                command: "ip -j link show".into(),
                detail: format!("no host interface has index {index}"),
            })
    }
}

/// A container once docker's endpoints have their names: its main process, and the host
/// side of each endpoint on a token-bucket segment, in port order.
struct Renamed {
    pid: u32,
    docker_ports: Vec<String>,
}

/// Every container's docker endpoints renamed, and the nodes' management addresses.
struct Endpoints {
    nodes: Vec<Renamed>,
    switches: Vec<Renamed>,
    mgmt_addr: BTreeMap<String, String>,
}

/// Gives docker's endpoints the topology's names in every container at once (a few
/// processes in each namespace): `mgmt0`, and the ports on segments shaped by token buckets.
fn rename_endpoints(attached: &Attached, wiring: &Wiring) -> Result<Endpoints> {
    let nodes = parallel::try_map(NAMING_WIDTH, &wiring.nodes, |n| {
        rename_node(attached, wiring, n)
    })?;
    let switches = parallel::try_map(NAMING_WIDTH, &wiring.switches, |sw| {
        rename_switch(attached, wiring, sw)
    })?;
    let mut mgmt_addr = BTreeMap::new();
    let mut renamed = Vec::new();
    for (n, (ip, r)) in wiring.nodes.iter().zip(nodes) {
        mgmt_addr.insert(n.name.clone(), ip);
        renamed.push(r);
    }
    Ok(Endpoints {
        nodes: renamed,
        switches,
        mgmt_addr,
    })
}

/// `mgmt0` and the node's ports on token-bucket segments; returns its management address.
fn rename_node(attached: &Attached, wiring: &Wiring, n: &Node) -> Result<(String, Renamed)> {
    let ci = attached.container("node", &n.name)?;
    let (mac, ip) = attached.endpoint(ci, MGMT_NETWORK_KEY)?;
    let mut wanted = vec![Wanted {
        mac,
        name: MGMT_IFNAME.into(),
        flush: false,
        bridge: None,
    }];
    for p in n.ports.iter().filter(|p| !wiring.carries_frames(p.segment)) {
        let (mac, _) =
            attached.endpoint(ci, &segment_network_key(&wiring.segment(p.segment).name))?;
        wanted.push(Wanted {
            mac,
            name: p.interface.clone(),
            flush: true,
            bridge: None,
        });
    }
    let pid = running_pid(ci)?;
    let peers = rename(
        pid,
        &wanted,
        &format!("naming node {}'s interfaces", n.name),
    )?;
    let docker_ports = peers[1..]
        .iter()
        .map(|peer| attached.host_name(*peer, &n.name))
        .collect::<Result<_>>()?;
    Ok((ip, Renamed { pid, docker_ports }))
}

/// A switch's ports on token-bucket segments, on its bridge.
fn rename_switch(attached: &Attached, wiring: &Wiring, sw: &Switch) -> Result<Renamed> {
    let ci = attached.container("switch", &sw.name)?;
    let mut wanted = Vec::new();
    for (i, id) in sw.segments.iter().enumerate() {
        if wiring.carries_frames(*id) {
            continue;
        }
        let (mac, _) = attached.endpoint(ci, &segment_network_key(&wiring.segment(*id).name))?;
        wanted.push(Wanted {
            mac,
            name: format!("port{i}"),
            flush: true,
            bridge: Some(SWITCH_BRIDGE.into()),
        });
    }
    let pid = running_pid(ci)?;
    let peers = rename(pid, &wanted, &format!("building switch {}", sw.name))?;
    let docker_ports = peers
        .iter()
        .map(|peer| attached.host_name(*peer, &switch_service(&sw.name)))
        .collect::<Result<_>>()?;
    Ok(Renamed { pid, docker_ports })
}

/// Makes the tool's wires into every container, turns segmentation offloads off on the
/// nodes' experiment interfaces, and returns per segment the host side of every port on it:
/// nodes first in member order, then switch ports (the medium's port order).
fn make_wires(
    attached: &Attached,
    wiring: &Wiring,
    renamed: &Endpoints,
) -> Result<BTreeMap<SegmentId, Vec<String>>> {
    let node_pid: BTreeMap<&str, u32> = wiring
        .nodes
        .iter()
        .zip(&renamed.nodes)
        .map(|(n, r)| (n.name.as_str(), r.pid))
        .collect();
    let switch_pid: BTreeMap<String, u32> = wiring
        .switches
        .iter()
        .zip(&renamed.switches)
        .map(|(sw, r)| (switch_service(&sw.name), r.pid))
        .collect();
    let pid_of = |owner: &Owner| -> Result<String> {
        match owner {
            Owner::Node(n) => node_pid.get(n.as_str()).copied(),
            Owner::Switch(s) => switch_pid.get(s).copied(),
        }
        .map(|pid| pid.to_string())
        .ok_or_else(|| Error::Wiring(format!("a wire names {owner:?}, which has no container")))
    };
    veth::create(&attached.wires, pid_of)?;
    let nodes: Vec<(&Node, &Renamed)> = wiring.nodes.iter().zip(&renamed.nodes).collect();
    parallel::try_for_each(NAMING_WIDTH, &nodes, |(n, r)| {
        let own = veth::of(&attached.wires, &Owner::Node(n.name.clone()));
        veth::name_inside(
            &own,
            Ns::Pid(r.pid),
            false,
            &format!("wiring node {}", n.name),
        )?;
        let ifnames: Vec<&str> = n.ports.iter().map(|p| p.interface.as_str()).collect();
        offloads_off(
            r.pid,
            &ifnames,
            &format!("turning segmentation offloads off on node {}", n.name),
        )?;
        steer_off_the_emulator(attached, r.pid, &own, &format!("node {}", n.name))
    })?;
    let switches: Vec<(&Switch, &Renamed)> =
        wiring.switches.iter().zip(&renamed.switches).collect();
    parallel::try_for_each(NAMING_WIDTH, &switches, |(sw, r)| {
        let own = veth::of(&attached.wires, &Owner::Switch(switch_service(&sw.name)));
        let bridge_made = !r.docker_ports.is_empty();
        let what = format!("building switch {}", sw.name);
        veth::name_inside(&own, Ns::Pid(r.pid), bridge_made, &what)?;
        steer_off_the_emulator(attached, r.pid, &own, &format!("switch {}", sw.name))
    })?;
    // The wires and docker's ports in the wiring's order: nodes' ports, then switches'.
    let owners = nodes
        .iter()
        .map(|(n, r)| {
            let segments: Vec<SegmentId> = n.ports.iter().map(|p| p.segment).collect();
            (format!("node {}", n.name), segments, *r)
        })
        .chain(
            switches
                .iter()
                .map(|(sw, r)| (format!("switch {}", sw.name), sw.segments.clone(), *r)),
        );
    let mut ports: BTreeMap<SegmentId, Vec<String>> = BTreeMap::new();
    let mut own = attached.wires.iter();
    for (who, segments, r) in owners {
        let mut docker = r.docker_ports.iter();
        for id in segments {
            let host = if wiring.carries_frames(id) {
                own.next().map(|w| w.outside.clone())
            } else {
                docker.next().cloned()
            };
            let host = host.ok_or_else(|| {
                Error::Wiring(format!(
                    "{who}'s port on segment {} has no host side",
                    wiring.segment(id).name
                ))
            })?;
            ports.entry(id).or_default().push(host);
        }
    }
    Ok(ports)
}

/// Steers the receive work of an owner's wires (the medium emulator writes every frame into
/// them) to the CPUs the emulator's event thread leaves to the nodes.
fn steer_off_the_emulator(attached: &Attached, pid: u32, own: &[&Wire], owner: &str) -> Result<()> {
    let Some(mask) = attached.rps_mask.as_deref() else {
        return Ok(());
    };
    let ifnames: Vec<&str> = own.iter().map(|w| w.inside.as_str()).collect();
    steer_receive(
        pid,
        &ifnames,
        mask,
        &format!("steering {owner}'s receive work off the emulator's CPU"),
    )
}

/// Emulates the wires on the host (ifb and tbf, or the medium emulator), each device and
/// process recorded in the state file before or as it is made. Returns how many ifb devices.
pub(super) fn emulate_wires(
    wiring: &Wiring,
    opts: &UpOptions,
    dir: &ClusterDir,
    ports: &BTreeMap<SegmentId, Vec<String>>,
    state: &mut State,
) -> Result<usize> {
    let setup = emulation_setup(&opts.name, wiring, ports);
    state.ifbs = setup.ifbs.clone();
    state.save(&dir.state_file())?;
    apply_emulation(&setup)?;
    if let Some(config) = emulator_config(wiring, ports, opts.medium_seed) {
        state.medium_pid = Some(start_emulator(dir, &config)?);
        state.save(&dir.state_file())?;
    }
    Ok(setup.ifbs.len())
}

/// known_hosts, the inventory and an ssh_config: everything needed to reach the nodes.
pub(super) fn write_access_files(
    c: &ClusterName,
    wiring: &Wiring,
    dir: &ClusterDir,
    mgmt_addr: &BTreeMap<String, String>,
    host_keys: &BTreeMap<String, String>,
) -> Result<Inventory> {
    let mut known_hosts = String::new();
    let mut inventory = Inventory::default();
    for n in &wiring.nodes {
        let addr = &mgmt_addr[&n.name];
        known_hosts.push_str(&ssh::known_hosts_line(addr, 22, &host_keys[&n.name]));
        known_hosts.push('\n');
        let node = n
            .name
            .parse::<NodeName>()
            .map_err(|e| Error::Wiring(e.to_string()))?;
        inventory.hosts.insert(
            node.clone(),
            Host {
                node,
                address: addr.clone(),
                port: Some(22),
                user: Some(NODE_USER.into()),
                identity: Some(dir.identity()),
                known_hosts: Some(dir.known_hosts()),
                jump: None,
                sudo: false,
            },
        );
    }
    write(&dir.known_hosts(), &known_hosts)?;
    write(&dir.inventory(), &inventory_file(c, &inventory, dir.root()))?;
    write(&dir.ssh_config(), &ssh_config(&inventory))?;
    Ok(inventory)
}

/// The container's main process, whose namespaces are the node's; an error if it is not
/// running.
fn running_pid(ci: &ContainerInfo) -> Result<u32> {
    if !ci.state.running || ci.state.pid == 0 {
        return Err(Error::Host {
            problem: format!("container {} is {}", ci.name, ci.state.status),
            what_to_do: format!("see `docker logs {}`", ci.name.trim_start_matches('/')),
        });
    }
    Ok(ci.state.pid)
}

/// Renames the docker endpoints `wanted` names in the namespace of `pid`; returns each one's
/// host-side peer index.
fn rename(pid: u32, wanted: &[Wanted], what: &str) -> Result<Vec<u32>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let ns = Ns::Pid(pid);
    let (lines, peers) = rename_plan(&ns_links(ns)?, wanted)?;
    ip_batch(ns, what, &lines)?;
    Ok(peers)
}

/// The inventory in the controller's format, with a header saying what it is. Paths inside
/// `dir` (the cluster's directory, where it is written) are relative to it.
fn inventory_file(c: &ClusterName, inventory: &Inventory, dir: &Path) -> String {
    format!(
        "# Inventory of virtual cluster {:?}, written by `orchestrate cluster up`.\n\
         # Paths are relative to this file. Host keys are pinned in known_hosts.\n\n{}",
        c.as_str(),
        inventory.to_toml(dir)
    )
}

fn wait_all_ready(inv: &Inventory) -> Result<()> {
    let hosts: Vec<&Host> = inv.hosts.values().collect();
    parallel::try_for_each(SSH_PROBE_WIDTH, &hosts, |h| {
        ssh::wait_ready(h, Duration::from_secs(60))
    })
}

/// The inventory as an OpenSSH config, for `ssh -F`. (`up` gives every node all of these
/// settings; one it did not give would be left to ssh's default.)
fn ssh_config(inv: &Inventory) -> String {
    let mut s = String::from(
        "# OpenSSH config for this virtual cluster: `ssh -F ssh_config <node>`.\n\
         # Host keys are pinned; nothing is accepted blindly.\n",
    );
    for (name, h) in &inv.hosts {
        s.push_str(&format!("\nHost {name}\n  HostName {}\n", h.address));
        if let Some(port) = h.port {
            s.push_str(&format!("  Port {port}\n"));
        }
        if let Some(user) = &h.user {
            s.push_str(&format!("  User {user}\n"));
        }
        if let Some(identity) = &h.identity {
            s.push_str(&format!("  IdentityFile {}\n", identity.display()));
        }
        s.push_str("  IdentitiesOnly yes\n");
        if let Some(known_hosts) = &h.known_hosts {
            s.push_str(&format!("  UserKnownHostsFile {}\n", known_hosts.display()));
        }
        s.push_str("  StrictHostKeyChecking yes\n");
    }
    s
}

fn check_host() -> Result<()> {
    let uid = Cmd::new("id", "checking the user").arg("-u").run()?;
    if uid.trim() != "0" {
        return Err(Error::Host {
            problem: "the virtual cluster shapes links with tc and names the nodes' interfaces \
                      from the host, which needs root"
                .into(),
            what_to_do: "run `orchestrate cluster` as root (e.g. with sudo)".into(),
        });
    }
    check_tun()
}

/// Nodes of either kind need /dev/net/tun for the userspace bond.
pub(super) fn check_tun() -> Result<()> {
    if !Path::new("/dev/net/tun").exists() {
        return Err(Error::Host {
            problem: "/dev/net/tun does not exist; nodes need it for the userspace bond".into(),
            what_to_do: "load the tun module (modprobe tun)".into(),
        });
    }
    Ok(())
}

pub(super) fn mkdir(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p).map_err(|e| Error::io("creating the cluster directory", p, e))
}

pub(super) fn write(p: &Path, text: &str) -> Result<()> {
    std::fs::write(p, text).map_err(|e| Error::io("writing", p, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_nodes(dir: &Path) -> Inventory {
        let host = |node: &str, address: &str| Host {
            node: node.parse().unwrap(),
            address: address.into(),
            port: Some(22),
            user: Some(NODE_USER.into()),
            identity: Some(dir.join("id_ed25519")),
            known_hosts: Some(dir.join("known_hosts")),
            jump: None,
            sudo: false,
        };
        let hosts = [host("n01", "172.20.0.2"), host("n02", "172.20.0.3")];
        Inventory {
            hosts: hosts.into_iter().map(|h| (h.node.clone(), h)).collect(),
        }
    }

    #[test]
    fn the_inventory_file_has_its_header_and_paths_relative_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let inv = two_nodes(dir.path());
        let text = inventory_file(&ClusterName::parse("demo").unwrap(), &inv, dir.path());
        assert_eq!(
            text,
            "# Inventory of virtual cluster \"demo\", written by `orchestrate cluster up`.\n\
             # Paths are relative to this file. Host keys are pinned in known_hosts.\n\n\
             [defaults]\nuser = \"root\"\nport = 22\nidentity = \"id_ed25519\"\n\
             known_hosts = \"known_hosts\"\n\n\
             [[host]]\nnodes = \"n01\"\naddress = \"172.20.0.2\"\n\n\
             [[host]]\nnodes = \"n02\"\naddress = \"172.20.0.3\"\n"
        );
        // The controller reads it back as it was (with the key and known_hosts `up` writes
        // before it: the inventory's files must exist).
        for f in ["id_ed25519", "known_hosts"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let p = dir.path().join("inventory.toml");
        std::fs::write(&p, text).unwrap();
        assert_eq!(Inventory::load(&p).unwrap(), inv);
    }

    #[test]
    fn the_ssh_config_pins_every_setting() {
        let inv = two_nodes(Path::new("/c"));
        let config = ssh_config(&inv);
        assert!(
            config.ends_with(
                "\nHost n02\n  HostName 172.20.0.3\n  Port 22\n  User root\n  \
                 IdentityFile /c/id_ed25519\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile /c/known_hosts\n  StrictHostKeyChecking yes\n"
            ),
            "{config}"
        );
    }
}
