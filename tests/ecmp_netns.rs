//! ECMP on a 2×2 routed mesh, in four network namespaces joined by veth pairs (each bus has
//! two members here, so a veth pair is the whole bus): the rendered scripts give every node a
//! node address and multipath routes, the path checker proves every branch, and TCP flows
//! from one corner to the opposite one are spread over both forwarders by the kernel's L4
//! hash, and kept on one by the L3 hash. Which way each flow went is read from the
//! forwarders' interface counters. Needs root and iproute2; says so and skips elsewhere.

mod common;
#[path = "common/need.rs"]
mod need;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use orchestrate::netconf;
use orchestrate::spec::SourceFile;
use orchestrate::spec::multipath::MultipathHash;
use orchestrate::topology::{Topology, paths};

const MESH: &str = r#"name = "routed-mesh-2x2"
[generator]
kind = "grid"
rows = 2
cols = 2
interconnect = "routed"
rate = "10mbit"
medium = "shared"
"#;

/// Bytes each flow sends: enough that its path's counters stand out from the ACKs' way back.
const FLOW_BYTES: usize = 256 * 1024;
const FLOWS: usize = 16;
const PORT: u16 = 7399;

/// One namespace per node, removed on drop.
struct Namespaces(Vec<String>);

impl Namespaces {
    fn ns(&self, node: usize) -> &str {
        &self.0[node]
    }

    fn sh(&self, node: usize, script: &str) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", self.ns(node), "sh", "-c", script])
            .output()
            .expect("ip netns exec runs")
    }

    fn state(&self, node: usize) -> String {
        let out = self.sh(
            node,
            "ip -4 -o addr show; ip -4 route show table all; \
             ip -o link show | sed 's/ link\\/ether.*//'; \
             sysctl net.ipv4.ip_forward net.ipv4.fib_multipath_hash_policy",
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn counter(&self, node: usize, dev: &str) -> u64 {
        let out = self.sh(
            node,
            &format!("cat /sys/class/net/{dev}/statistics/tx_bytes"),
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("tx_bytes of {dev}: {out:?}"))
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn must(cmd: &str) {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The wires of `t` as namespaces: every segment of two members one veth pair, its ends
/// named as the topology names the interfaces.
fn wire(t: &Topology, prefix: &str) -> Namespaces {
    let names: Vec<String> = (0..t.nodes.len()).map(|i| format!("{prefix}{i}")).collect();
    for n in &names {
        let _ = Command::new("ip").args(["netns", "del", n]).status();
        must(&format!("ip netns add {n}"));
    }
    let nss = Namespaces(names);
    for (si, seg) in t.segments.iter().enumerate() {
        assert_eq!(seg.members.len(), 2, "a 2x2 mesh's buses have two members");
        let ends: Vec<(usize, &str)> = seg
            .members
            .iter()
            .map(|p| (t.node_index(&p.node).unwrap(), p.interface.as_str()))
            .collect();
        must(&format!(
            "ip link add ecmpa{si} type veth peer name ecmpb{si}"
        ));
        for (end, (node, ifname)) in ["a", "b"].iter().zip(&ends) {
            let tmp = format!("ecmp{end}{si}");
            must(&format!(
                "ip link set {tmp} netns {ns} && ip -n {ns} link set {tmp} name {ifname}",
                ns = nss.ns(*node)
            ));
        }
    }
    // Each link up and down once, so that what the kernel settles the first time (the
    // default qdisc, lo's 127.0.0.1) is there before the snapshot: the scripts do not own it.
    for (n, node) in t.nodes.iter().enumerate() {
        for dev in std::iter::once("lo").chain(node.interfaces.iter().map(|i| i.name.as_str())) {
            must(&format!(
                "ip -n {ns} link set {dev} up && ip -n {ns} link set {dev} down",
                ns = nss.ns(n)
            ));
        }
    }
    nss
}

/// Runs `f` in a thread that has entered namespace `ns`.
fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("the namespace exists");
        // SAFETY: setns on a namespace file descriptor changes only this thread's network
        // namespace; the descriptor stays open for the call.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Sends `FLOWS` flows from node 0 to node 3's node address one after another, and gives for
/// each which forwarder carried it: the one whose interface towards node 3 sent at least
/// the flow's bytes while it ran (and whose interface towards node 0, in `back`, sent most of
/// its ACKs).
fn flows_by_forwarder(
    t: &Topology,
    nss: &Namespaces,
    forwarders: &[(usize, String)],
    back: &[(usize, String)],
) -> Vec<usize> {
    let target = t.nodes[3].node_address().unwrap();
    let server = in_netns(nss.ns(3), move || {
        let l = TcpListener::bind((target, PORT)).expect("bind the node address");
        for _ in 0..FLOWS {
            let (mut c, _) = l.accept().unwrap();
            let mut sink = Vec::new();
            c.read_to_end(&mut sink).unwrap();
            assert_eq!(sink.len(), FLOW_BYTES);
        }
    });
    let mut ways = Vec::new();
    let mut crossed = 0;
    for _ in 0..FLOWS {
        let before: Vec<u64> = forwarders
            .iter()
            .map(|(n, dev)| nss.counter(*n, dev))
            .collect();
        let before_back: Vec<u64> = back.iter().map(|(n, dev)| nss.counter(*n, dev)).collect();
        in_netns(nss.ns(0), move || {
            let to = SocketAddr::from((target, PORT));
            let mut c = connect_retrying(to);
            c.write_all(&vec![7u8; FLOW_BYTES]).unwrap();
        })
        .join()
        .unwrap();
        // The last bytes are through the forwarder once the server has read them; a moment
        // for the counters.
        std::thread::sleep(Duration::from_millis(50));
        let grew: Vec<u64> = forwarders
            .iter()
            .zip(&before)
            .map(|((n, dev), b)| nss.counter(*n, dev) - b)
            .collect();
        let carried: Vec<usize> = (0..forwarders.len())
            .filter(|&i| grew[i] >= FLOW_BYTES as u64)
            .collect();
        assert_eq!(
            carried.len(),
            1,
            "each flow takes one way, whole: bytes per forwarder {grew:?}"
        );
        // The reply's way: where most of the ACK bytes went (printed; the kernel hashes the
        // way back on its own, so it need not be the way there).
        let acked: Vec<u64> = back
            .iter()
            .zip(&before_back)
            .map(|((n, dev), b)| nss.counter(*n, dev) - b)
            .collect();
        let most = (0..acked.len()).max_by_key(|&i| acked[i]).unwrap();
        crossed += usize::from(most != carried[0]);
        ways.push(carried[0]);
    }
    server.join().unwrap();
    eprintln!("{crossed} of {FLOWS} flows' ACKs came back through the other forwarder");
    ways
}

fn connect_retrying(to: SocketAddr) -> TcpStream {
    for _ in 0..50 {
        if let Ok(c) = TcpStream::connect_timeout(&to, Duration::from_secs(2)) {
            return c;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("cannot connect to {to}");
}

fn mesh(hash: MultipathHash) -> Topology {
    orchestrate::topology::from_source(&SourceFile::new("routed-mesh-2x2.toml", MESH))
        .unwrap()
        .with_ecmp(hash)
}

/// The two nodes between corners 0 and 3, each with its interface towards node `far`.
fn forwarders(t: &Topology, far: usize) -> Vec<(usize, String)> {
    let far = &t.nodes[far];
    [1, 2]
        .into_iter()
        .map(|n| {
            let node = &t.nodes[n];
            let dev = node
                .interfaces
                .iter()
                .find(|i| far.interfaces.iter().any(|o| o.segment == i.segment))
                .unwrap();
            (n, dev.name.to_string())
        })
        .collect()
}

#[test]
fn multipath_routes_render_and_pass_the_path_checker_on_every_branch() {
    let t = mesh(MultipathHash::L4);
    paths::check_all(&t).expect("every branch of every multipath route arrives");
    let n0 = &t.nodes[0];
    let to3 = n0
        .ecmp
        .as_ref()
        .unwrap()
        .routes
        .iter()
        .find(|r| r.to.addr() == t.nodes[3].node_address().unwrap())
        .unwrap();
    assert_eq!(
        to3.nexthops.len(),
        2,
        "two equal-cost ways to the far corner"
    );
    let scripts = netconf::render(&t, n0);
    let line = scripts
        .apply
        .lines()
        .find(|l| l.starts_with(&format!("ip route add {} src", to3.to)))
        .expect("the multipath route is rendered");
    assert_eq!(line.matches("nexthop via").count(), 2, "{line}");
    assert!(
        scripts
            .teardown
            .contains(&format!("ip route del {} src", to3.to))
    );

    // Two ways there, each with both ways back: the kernel hashes the reply on its own.
    let f = orchestrate::topology::forwarding::Forwarding::new(&t);
    let path = f.round_trip(0, t.nodes[3].node_address().unwrap()).unwrap();
    let mut ways: Vec<(String, String)> = path
        .ways()
        .iter()
        .map(|w| {
            assert_eq!((w.hops.len(), w.reply.len()), (2, 2));
            (w.hops[1].from.to_string(), w.reply[1].from.to_string())
        })
        .collect();
    ways.sort();
    let (a, b) = (t.nodes[1].name.to_string(), t.nodes[2].name.to_string());
    let every = vec![
        (a.clone(), a.clone()),
        (a.clone(), b.clone()),
        (b.clone(), a),
        (b.clone(), b),
    ];
    assert_eq!(ways, every);
    assert_eq!(path.segments.len(), 4, "every wire of the mesh");
}

#[test]
fn netns_ecmp_spreads_flows_over_both_paths_of_a_2x2_mesh_and_teardown_restores() {
    require_needs!();
    for (hash, prefix) in [
        (MultipathHash::L4, "orch-ecmp4-"),
        (MultipathHash::L3, "orch-ecmp3-"),
    ] {
        let t = mesh(hash);
        let nss = wire(&t, prefix);
        let before: Vec<String> = (0..4).map(|n| nss.state(n)).collect();
        let dir = tempfile::tempdir().unwrap();
        let scripts: Vec<_> = t.nodes.iter().map(|n| netconf::render(&t, n)).collect();
        let run = |n: usize, script: &str| {
            let path = dir.path().join(format!("n{n}.sh"));
            std::fs::write(&path, script).unwrap();
            Command::new("ip")
                .args(["netns", "exec", nss.ns(n), "sh"])
                .arg(&path)
                .arg(dir.path().join(format!("n{n}.ledger")))
                .output()
                .unwrap()
        };
        // A node that already uses the node addresses' network is refused before any change.
        let taken = format!(
            "ip addr add {}/32 dev lo",
            t.nodes[0].node_address().unwrap()
        );
        assert!(nss.sh(0, &taken).status.success());
        let taken_state = nss.state(0);
        let refused = run(0, &scripts[0].apply);
        assert!(!refused.status.success());
        let why = String::from_utf8_lossy(&refused.stderr);
        assert!(why.contains("already uses"), "{why}");
        assert_eq!(nss.state(0), taken_state, "a refused apply changed nothing");
        assert!(nss.sh(0, &taken.replace(" add ", " del ")).status.success());
        for (n, s) in scripts.iter().enumerate() {
            let out = run(n, &s.apply);
            assert!(
                out.status.success(),
                "apply on n{n}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let (there, back) = (forwarders(&t, 3), forwarders(&t, 0));
        let ways = flows_by_forwarder(&t, &nss, &there, &back);
        let per_path: Vec<usize> = (0..there.len())
            .map(|i| ways.iter().filter(|&&w| w == i).count())
            .collect();
        eprintln!("{hash}: {FLOWS} flows per forwarder {per_path:?}");
        match hash {
            // 16 flows all one way under a fair hash: 1 in 32 768.
            MultipathHash::L4 => assert!(
                per_path.iter().all(|&c| c > 0),
                "the L4 hash spreads flows over both paths: {per_path:?}"
            ),
            MultipathHash::L3 => assert!(
                per_path.contains(&FLOWS),
                "the L3 hash keeps the two nodes' flows on one path: {per_path:?}"
            ),
        }
        for (n, s) in scripts.iter().enumerate().rev() {
            let out = run(n, &s.teardown);
            assert!(
                out.status.success(),
                "teardown on n{n}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let after: Vec<String> = (0..4).map(|n| nss.state(n)).collect();
        assert_eq!(after, before, "teardown leaves every node as found");
    }
}
