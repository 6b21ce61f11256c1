//! Applies rendered scripts inside throwaway network namespaces and checks that teardown puts
//! everything back. Needs root and iproute2, and each test's name says what else it needs
//! (tests/common/need.rs).

mod common;
#[path = "common/need.rs"]
mod need;

use std::process::Command;

use orchestrate::netconf;
use orchestrate::topology::Topology;

struct Netns(String);

impl Netns {
    fn create(name: &str) -> Option<Netns> {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        let ok = Command::new("ip")
            .args(["netns", "add", name])
            .status()
            .ok()?
            .success();
        ok.then(|| Netns(name.to_owned()))
    }

    fn sh(&self, script: &str) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", &self.0, "sh", "-c", script])
            .output()
            .expect("ip netns exec runs")
    }

    fn must(&self, script: &str) {
        let out = self.sh(script);
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Everything the scripts could change: IPv4 addresses, routes in every table, qdiscs,
    /// link flags and masters, the sysctls they set, and Multipath TCP's limits and endpoints.
    fn state(&self) -> String {
        let out = self.sh(
            "ip -4 -o addr show; ip -4 route show table all; tc qdisc show; \
             ip -o link show | sed 's/ link\\/ether.*//'; sysctl net.ipv4.ip_forward; \
             ip mptcp limits show 2>/dev/null; ip mptcp endpoint show 2>/dev/null",
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Sets up a namespace that looks like a node of `t` before a run, with state of its own
/// that the run must not touch: an extra address, an extra route and a qdisc.
fn node_namespace(name: &str, t: &Topology, node: &str) -> Netns {
    let ns = Netns::create(name).expect("netns");
    let n = t.node(&node.parse().unwrap()).unwrap();
    for (i, iface) in n.interfaces.iter().enumerate() {
        ns.must(&format!(
            "ip link add {} type veth peer name peer{i} && ip link set peer{i} up",
            iface.name
        ));
        // Bring each interface up and down once so the kernel's default qdisc is settled
        // before the snapshot; the scripts are not what changes it.
        ns.must(&format!(
            "ip link set {0} up && ip link set {0} down",
            iface.name
        ));
    }
    let first = &n.interfaces[0].name;
    ns.must(&format!(
        "ip link set {first} up && ip addr add 192.0.2.7/24 dev {first} && \
         ip route add 198.51.100.0/24 via 192.0.2.1 dev {first} && \
         tc qdisc add dev {first} root tbf rate 100mbit burst 32kb latency 50ms"
    ));
    ns
}

fn run_script(ns: &Netns, script: &str, ledger: &std::path::Path) -> std::process::Output {
    let path = ledger.with_extension("sh");
    std::fs::write(&path, script).unwrap();
    Command::new("ip")
        .args(["netns", "exec", &ns.0, "sh"])
        .arg(&path)
        .arg(ledger)
        .output()
        .unwrap()
}

fn kernel_has_bonding() -> bool {
    need::Need::KernelBonding.missing().is_none()
}

/// Applies `node`'s scripts of topology `name` in a namespace set up like that node, checks
/// that its addresses and routes are there, tears down, and checks the namespace is as before
/// (twice: teardown is idempotent).
fn apply_then_teardown_restores(name: &str, ns_name: &str, node: &str, dir: &std::path::Path) {
    let t = common::topology(name);
    let ns = node_namespace(ns_name, &t, node);
    let n = t.node(&node.parse().unwrap()).unwrap();
    let scripts = netconf::render(&t, n);
    let ledger = dir.join(format!("{name}-{node}.ledger"));
    let before = ns.state();

    let applied = run_script(&ns, &scripts.apply, &ledger);
    assert!(
        applied.status.success(),
        "{name}/{node} apply failed: {}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let during = ns.state();
    for (_, addr) in n.links() {
        assert!(
            during.contains(&addr.to_string()),
            "{name}/{node}: {addr} missing after apply"
        );
    }
    for r in &n.routes {
        assert!(
            during.contains(&format!("{} via {}", r.to, r.via)),
            "{name}/{node}: route {} missing",
            r.to
        );
    }

    let torn = run_script(&ns, &scripts.teardown, &ledger);
    assert!(
        torn.status.success(),
        "{name}/{node} teardown: {}",
        String::from_utf8_lossy(&torn.stderr)
    );
    assert_eq!(
        ns.state(),
        before,
        "{name}/{node}: teardown left the namespace changed"
    );
    assert!(!ledger.exists(), "an emptied ledger is removed");
    assert!(run_script(&ns, &scripts.teardown, &ledger).status.success());
}

/// Every shipped topology's nodes, a corner one and an inner one (they differ in forwarding
/// and routes), each with whether it has a bond.
fn shipped_nodes() -> Vec<(&'static str, &'static str, bool)> {
    let mut nodes = Vec::new();
    for name in common::SHIPPED_TOPOLOGIES {
        let t = common::topology(name);
        for node in ["n01", "n06"] {
            let bonded = !t.node(&node.parse().unwrap()).unwrap().bonds.is_empty();
            nodes.push((name, node, bonded));
        }
    }
    nodes
}

#[test]
fn netns_apply_then_teardown_restores_every_unbonded_shipped_topology() {
    require_needs!();
    let dir = tempfile::tempdir().unwrap();
    let unbonded: Vec<_> = shipped_nodes().into_iter().filter(|n| !n.2).collect();
    assert!(unbonded.len() >= 6, "{unbonded:?}");
    for (i, (name, node, _)) in unbonded.into_iter().enumerate() {
        apply_then_teardown_restores(name, &format!("orch-test-{i}-{node}"), node, dir.path());
    }
}

#[test]
fn netns_kernel_bonding_apply_then_teardown_restores_every_bonded_shipped_topology() {
    require_needs!();
    let dir = tempfile::tempdir().unwrap();
    let bonded: Vec<_> = shipped_nodes().into_iter().filter(|n| n.2).collect();
    assert!(bonded.len() >= 2, "{bonded:?}");
    for (i, (name, node, _)) in bonded.into_iter().enumerate() {
        apply_then_teardown_restores(name, &format!("orch-kb-{i}-{node}"), node, dir.path());
    }
}

/// Where the kernel has no bonding driver, a bonded node's apply must stop at its capability
/// check before it changes anything. (Where it has one, the test above applies them.)
#[test]
fn netns_bonded_apply_without_a_bonding_driver_is_refused_before_any_change() {
    require_needs!();
    if kernel_has_bonding() {
        eprintln!("this kernel has a bonding driver: the kernel_bonding test applies the bonds");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (i, (name, node, _)) in shipped_nodes().into_iter().filter(|n| n.2).enumerate() {
        let t = common::topology(name);
        let ns = node_namespace(&format!("orch-nb-{i}-{node}"), &t, node);
        let scripts = netconf::render(&t, t.node(&node.parse().unwrap()).unwrap());
        let ledger = dir.path().join(format!("{name}-{node}.ledger"));
        let before = ns.state();
        let applied = run_script(&ns, &scripts.apply, &ledger);
        assert!(!applied.status.success(), "{name}/{node}: apply went ahead");
        assert!(
            String::from_utf8_lossy(&applied.stderr).contains("no bonding driver"),
            "{name}/{node}: {}",
            String::from_utf8_lossy(&applied.stderr)
        );
        assert_eq!(
            ns.state(),
            before,
            "{name}/{node}: a refused apply changed state"
        );
    }
}

#[test]
fn netns_failed_apply_is_undone_as_far_as_it_got() {
    require_needs!();
    let t = common::topology("routed-mesh-4x4");
    let ns = node_namespace("orch-test-partial", &t, "n01");
    let n = t.node(&"n01".parse().unwrap()).unwrap();
    // Occupy the first route's destination so that step fails midway through the script.
    let clash = &n.routes[2];
    ns.must(&format!("ip route add {} dev eth1", clash.to));
    let before = ns.state();
    let scripts = netconf::render(&t, n);
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");
    let applied = run_script(&ns, &scripts.apply, &ledger);
    assert!(
        !applied.status.success(),
        "apply must fail on the clashing route"
    );
    assert!(
        ledger.exists(),
        "the steps made before the failure are in the ledger"
    );
    // A second apply refuses while the ledger holds changes.
    let again = run_script(&ns, &scripts.apply, &ledger);
    assert!(String::from_utf8_lossy(&again.stderr).contains("not torn down"));
    let torn = run_script(&ns, &scripts.teardown, &ledger);
    assert!(
        torn.status.success(),
        "{}",
        String::from_utf8_lossy(&torn.stderr)
    );
    assert_eq!(
        ns.state(),
        before,
        "the pre-existing clashing route must survive, the rest undone"
    );
}

#[test]
fn netns_mptcp_announces_every_address_and_teardown_restores_limits_and_endpoints() {
    require_needs!();
    let dir = tempfile::tempdir().unwrap();
    let file = common::root().join("topologies/bonded-dual-net.toml");
    let t = orchestrate::topology::load_unbonded(&file)
        .unwrap()
        .with_mptcp();
    let n = t.node(&"n03".parse().unwrap()).unwrap();
    let addresses: Vec<String> = n.links().map(|(_, a)| a.addr().to_string()).collect();
    assert_eq!(addresses.len(), 2, "one address per bus: {addresses:?}");
    let scripts = netconf::render(&t, n);
    let ns = node_namespace("orch-test-mptcp", &t, "n03");
    // Limits and an endpoint of the node's own, which the run must put back and leave alone.
    ns.must("ip mptcp limits set subflows 3 add_addr_accepted 0 && ip mptcp endpoint add 192.0.2.7 dev eth1 subflow");
    let before = ns.state();
    let ledger = dir.path().join("mptcp.ledger");

    let applied = run_script(&ns, &scripts.apply, &ledger);
    assert!(
        applied.status.success(),
        "apply: {}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let endpoints = String::from_utf8_lossy(&ns.sh("ip mptcp endpoint show").stdout).into_owned();
    for a in &addresses {
        assert!(
            endpoints
                .lines()
                .any(|l| l.starts_with(&format!("{a} ")) && l.contains("signal")),
            "{a} is not announced: {endpoints}"
        );
    }
    assert!(
        endpoints.contains("192.0.2.7"),
        "the node's own endpoint stays: {endpoints}"
    );
    let limits = String::from_utf8_lossy(&ns.sh("ip mptcp limits show").stdout).into_owned();
    assert!(
        limits.contains("add_addr_accepted 2") && limits.contains("subflows 2"),
        "one per address the node holds: {limits}"
    );

    let torn = run_script(&ns, &scripts.teardown, &ledger);
    assert!(
        torn.status.success(),
        "teardown: {}",
        String::from_utf8_lossy(&torn.stderr)
    );
    assert_eq!(ns.state(), before, "teardown left MPTCP state changed");

    // With MPTCP switched off the apply refuses before changing anything.
    ns.must("sysctl -qw net.mptcp.enabled=0");
    let before = ns.state();
    let refused = run_script(&ns, &scripts.apply, &ledger);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Multipath TCP is off"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert_eq!(ns.state(), before, "a refused apply changed state");
}

/// The ledger lines `apply` printed for the controller to keep.
fn printed_copy(applied: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&applied.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix(netconf::LEDGER_COPY_PREFIX))
        .map(str::to_owned)
        .collect()
}

/// A node whose ledger is lost after apply is put back from the run's copy; a node whose
/// ledger is lost and one of whose changes someone else has made over since gets every other
/// change undone, that one left alone (theirs now) and named, and a failing teardown.
#[test]
fn netns_a_lost_ledger_is_undone_from_the_runs_copy_where_still_as_the_run_made_it() {
    require_needs!();
    let t = common::topology("routed-mesh-4x4");
    let n = t.node(&"n06".parse().unwrap()).unwrap();
    let scripts = netconf::render(&t, n);
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger");

    for moved in [false, true] {
        let ns = node_namespace(&format!("orch-lost-{moved}"), &t, "n06");
        let before = ns.state();
        let applied = run_script(&ns, &scripts.apply, &ledger);
        assert!(
            applied.status.success(),
            "{}",
            String::from_utf8_lossy(&applied.stderr)
        );
        let copy = printed_copy(&applied);
        assert_eq!(
            copy.join("\n") + "\n",
            std::fs::read_to_string(&ledger).unwrap(),
            "apply prints its ledger as it stands"
        );
        std::fs::remove_file(&ledger).unwrap();
        // Someone moves one of the run's addresses to another interface of theirs.
        let (dev, address) = n.links().next().expect("n06 has addresses");
        if moved {
            ns.must(&format!(
                "ip addr del {address} dev {dev} && ip link add theirs type veth peer name theirs1 \
                 && ip addr add {address} dev theirs"
            ));
        }
        let preamble = netconf::copy_preamble(&copy, scripts.steps.len()).unwrap();
        let torn = run_script(&ns, &(preamble + &scripts.teardown), &ledger);
        let said = String::from_utf8_lossy(&torn.stderr);
        assert!(
            String::from_utf8_lossy(&torn.stdout).contains(netconf::FROM_COPY_PREFIX),
            "teardown says it took steps from the copy"
        );
        assert!(
            !ledger.exists(),
            "the rebuilt ledger is emptied and removed"
        );
        if moved {
            assert!(!torn.status.success(), "a change left alone fails teardown");
            assert!(
                said.contains("left alone step")
                    && said.contains(&format!("address {address} on {dev}")),
                "{said}"
            );
            ns.must("ip link del theirs");
        } else {
            assert!(torn.status.success(), "{said}");
        }
        assert_eq!(ns.state(), before, "moved: {moved}");
    }

    // No ledger and no copy: the script says it cannot tell, and claims nothing.
    let ns = node_namespace("orch-lost-none", &t, "n06");
    let torn = run_script(&ns, &scripts.teardown, &ledger);
    assert!(torn.status.success());
    assert_eq!(
        String::from_utf8_lossy(&torn.stdout).trim(),
        netconf::NO_LEDGER_LINE
    );
}
