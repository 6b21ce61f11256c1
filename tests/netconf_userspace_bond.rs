//! Userspace bonds in node scripts: how `driver = "userspace"` renders (snapshots), that a
//! mode the userspace bond refuses stops the apply script before it changes anything, and,
//! as root, that two nodes' rendered scripts start real `orchestrate-worker bond` processes
//! that carry TCP between the bonds' addresses, and that teardown stops them and leaves each
//! namespace as it was.

mod common;
#[path = "common/need.rs"]
mod need;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use orchestrate::netconf;
use orchestrate::topology::{BondDriver, BondMode, DriverChoice, Topology};

fn userspace(mut t: Topology) -> Topology {
    for b in t.nodes.iter_mut().flat_map(|n| n.bonds.iter_mut()) {
        b.driver = DriverChoice::Named(BondDriver::Userspace);
    }
    t
}

#[test]
fn userspace_bond_scripts_match_their_snapshots() {
    let t = userspace(common::topology("bonded-dual-net"));
    let n = t.node(&"n01".parse().unwrap()).unwrap();
    let s = netconf::render(&t, n);
    insta::assert_snapshot!("bonded-dual-net-userspace-n01-apply", s.apply);
    insta::assert_snapshot!("bonded-dual-net-userspace-n01-teardown", s.teardown);
    // The worker puts the address on its TUN device; no separate address or link step.
    assert!(!s.apply.contains("ip addr add"));
    assert!(!s.apply.contains("type bond"));
    assert!(!s.apply.contains("/sys/module/bonding"));
}

#[test]
fn auto_bonds_settle_on_the_driver_the_node_has() {
    let t = common::topology("bonded-dual-net");
    let n = t.node(&"n01".parse().unwrap()).unwrap();
    assert!(n.bonds.iter().all(|b| b.driver == DriverChoice::Auto));
    let auto = netconf::render(&t, n).apply;
    assert!(auto.contains("type bond") && auto.contains("driver = \"auto\""));

    let without = netconf::render(&t, &netconf::settle_bond_drivers(n, false)).apply;
    assert!(without.contains("start_bond 1 bond0") && !without.contains("type bond"));
    let with = netconf::render(&t, &netconf::settle_bond_drivers(n, true)).apply;
    assert!(with.contains("type bond") && !with.contains("driver = \"auto\""));

    let mut kernel = n.clone();
    kernel.bonds[0].driver = DriverChoice::Named(BondDriver::Kernel);
    let kept = netconf::settle_bond_drivers(&kernel, false);
    assert_eq!(
        kept.bonds[0].driver,
        DriverChoice::Named(BondDriver::Kernel),
        "a named driver is kept"
    );
}

#[test]
fn userspace_bond_in_a_refused_mode_fails_the_checks() {
    for mode in [
        BondMode::Ieee8023ad,
        BondMode::BalanceTlb,
        BondMode::BalanceAlb,
    ] {
        let t = userspace(common::topology("bonded-dual-net").with_bond_mode(mode));
        let n = t.node(&"n01".parse().unwrap()).unwrap();
        let apply = netconf::render(&t, n).apply;
        let fail = apply
            .find(&format!(
                "fail 'bond bond0: mode {mode} needs the kernel bonding driver"
            ))
            .unwrap_or_else(|| panic!("{mode}: no refusal in\n{apply}"));
        let first_change = apply.find(": >\"$ledger\"").expect("ledger created");
        assert!(
            fail < first_change,
            "{mode}: refused before anything changes"
        );
    }
}

struct Netns(String);

impl Netns {
    fn create(name: &str) -> Netns {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        sh(&format!(
            "ip netns add {name} && ip -n {name} link set lo up"
        ));
        Netns(name.to_owned())
    }

    fn state(&self) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.0, "sh", "-c"])
            .arg(
                "ip -4 -o addr show; ip -4 route show table all; tc qdisc show; \
                 ip -o link show | sed 's/ link\\/ether.*//'",
            )
            .output()
            .expect("ip netns exec");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn run(&self, script: &str, ledger: &Path, worker: &Path) -> Output {
        let path = ledger.with_extension("sh");
        std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
        std::fs::write(&path, script).unwrap();
        Command::new("ip")
            .args(["netns", "exec", &self.0, "sh"])
            .arg(&path)
            .arg(ledger)
            .env("ORCHESTRATE_WORKER", worker)
            .output()
            .expect("sh runs")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn sh(cmd: &str) {
    let out = Command::new("sh").arg("-c").arg(cmd).output().expect("sh");
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).expect("netns file");
        // SAFETY: setns on this thread only, with a valid descriptor.
        const CLONE_NEWNET: i32 = 0x4000_0000;
        assert_eq!(
            unsafe { setns(file.as_raw_fd(), CLONE_NEWNET) },
            0,
            "setns {path}"
        );
        f()
    })
}

// The one call the test needs from libc.
unsafe extern "C" {
    fn setns(fd: i32, nstype: i32) -> i32;
}

#[test]
fn netns_tun_userspace_bond_scripts_carry_tcp_and_teardown_restores() {
    require_needs!();
    let worker = common::worker_binary();
    let t = userspace(common::topology("bonded-dual-net"));
    let tag = std::process::id() % 10000;
    let names = ["n01", "n02"];
    let nss: Vec<Netns> = names
        .iter()
        .map(|n| Netns::create(&format!("orch-ub{tag}-{n}")))
        .collect();
    // Each bus becomes one veth pair between the two nodes; eth1 and eth2 as in the topology.
    for dev in ["eth1", "eth2"] {
        sh(&format!(
            "ip link add {dev} netns {a} type veth peer name {dev} netns {b}",
            a = nss[0].0,
            b = nss[1].0
        ));
        for ns in &nss {
            sh(&format!(
                "ip -n {0} link set {dev} up && ip -n {0} link set {dev} down",
                ns.0
            ));
        }
    }
    let before: Vec<String> = nss.iter().map(Netns::state).collect();
    let dir = tempfile::tempdir().unwrap();
    let scripts: Vec<_> = names
        .iter()
        .map(|n| netconf::render(&t, t.node(&n.parse().unwrap()).unwrap()))
        .collect();
    let ledgers: Vec<PathBuf> = names
        .iter()
        .map(|n| dir.path().join(n).join("ledger"))
        .collect();
    for ((ns, s), ledger) in nss.iter().zip(&scripts).zip(&ledgers) {
        let out = ns.run(&s.apply, ledger, &worker);
        assert!(
            out.status.success(),
            "apply on {}: {}",
            ns.0,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(ns.state().contains("bond0"), "the TUN device is there");
    }

    // TCP from n01 to n02's bond address, through both bonds.
    let bond_addr = |i: usize| {
        t.node(&names[i].parse().unwrap()).unwrap().bonds[0]
            .address
            .addr()
    };
    let to = SocketAddr::from((bond_addr(1), 5401));
    let (tx, rx) = std::sync::mpsc::channel();
    let server = in_netns(&nss[1].0, move || {
        let l = TcpListener::bind(to).expect("bind on the bond address");
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v).expect("read");
        v
    });
    rx.recv_timeout(Duration::from_secs(5)).expect("listening");
    let payload: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    let sent = payload.clone();
    in_netns(&nss[0].0, move || {
        let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).expect("connect");
        s.write_all(&sent).expect("write");
    })
    .join()
    .unwrap();
    assert_eq!(server.join().unwrap(), payload, "bytes through the bonds");

    for (i, ((ns, s), ledger)) in nss.iter().zip(&scripts).zip(&ledgers).enumerate() {
        let out = ns.run(&s.teardown, ledger, &worker);
        assert!(
            out.status.success(),
            "teardown on {}: {}",
            ns.0,
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("\"event\":\"exit\""),
            "teardown prints the final counters: {stdout}"
        );
        assert_eq!(ns.state(), before[i], "{}: left as it was found", ns.0);
        assert!(!ledger.exists());
        let leftovers: Vec<_> = std::fs::read_dir(ledger.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .filter(|f| !f.to_string_lossy().ends_with(".sh"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "bond log and stats removed: {leftovers:?}"
        );
    }
}
