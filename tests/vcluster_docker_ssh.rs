//! A four-node cluster is reached over SSH exactly as the inventory says, with host keys
//! verified (and a wrong key refused); its interfaces carry the topology's names and no
//! addresses; the worker runs on the nodes; `cluster ssh` runs a command on one; and traffic between two nodes over SSH (iperf3
//! standing in for the worker's stream pattern) gets the bus's rate.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use orchestrate::remote::Inventory;

#[test]
fn docker_four_node_cluster_over_ssh_runs_the_worker_and_traffic() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    let topo = support::write_four_nodes(tmp.path());
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let name = &support::cluster_name("vct-ssh");
    support::orchestrate_ok(&[
        "cluster",
        "up",
        topo.to_str().unwrap(),
        "--name",
        name,
        "--state-dir",
        state_s,
    ]);
    let result = std::panic::catch_unwind(|| {
        let dir = state.join("clusters").join(name);
        let inv = Inventory::load(&dir.join("inventory.toml")).unwrap();
        assert_eq!(
            inv.hosts.keys().map(|n| n.as_str()).collect::<Vec<_>>(),
            ["n1", "n2", "n3", "n4"]
        );
        for (node, host) in &inv.hosts {
            let out = support::ssh(
                host,
                "hostname; ip -o -4 addr show; ip -o link show; sysctl -n net.ipv4.ip_forward",
            );
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "ssh {node}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(text.starts_with(&format!("{node}\n")), "{text}");
            for ifname in ["mgmt0", "eth1", "eth2"] {
                assert!(
                    text.contains(&format!(": {ifname}@")),
                    "{node} lacks {ifname}: {text}"
                );
            }
            // Only the management interface (and lo) has an IPv4 address.
            let addressed: Vec<&str> = text.lines().filter(|l| l.contains(" inet ")).collect();
            assert!(
                addressed
                    .iter()
                    .all(|l| l.contains(" lo ") || l.contains(" mgmt0 ")),
                "{text}"
            );
            assert!(text.trim_end().ends_with('0'), "forwarding is on: {text}");
        }
        // The worker is in the image and runs over SSH.
        let n1 = inv.host("n1").unwrap();
        let out = support::ssh(n1, "orchestrate-worker --version || orchestrate-worker");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("orchestrate-worker"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Host keys really are checked: a known_hosts with another key is refused.
        let wrong = tmp.path().join("wrong_known_hosts");
        let other_key =
            std::fs::read_to_string(dir.join("nodes/n2/ssh_host_ed25519_key.pub")).unwrap();
        let mut fields = other_key.split_whitespace();
        let (kind, key) = (fields.next().unwrap(), fields.next().unwrap());
        std::fs::write(&wrong, format!("{} {kind} {key}\n", n1.address)).unwrap();
        let mut impostor = n1.clone();
        impostor.known_hosts = Some(wrong);
        let out = support::ssh(&impostor, "true");
        assert!(!out.status.success(), "a wrong host key was accepted");
        // `cluster ssh`: one command on a node, its output and its exit status passed back;
        // an unknown node refused with the cluster's nodes named.
        let on_node = |node: &str, command: &[&str]| {
            let mut args = vec![
                "cluster",
                "ssh",
                "--name",
                name,
                "--state-dir",
                state_s,
                node,
            ];
            args.push("--");
            args.extend_from_slice(command);
            support::orchestrate(&args)
        };
        let out = on_node("n3", &["cat", "/etc/hostname"]);
        assert!(out.status.success(), "cluster ssh n3 failed");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "n3\n");
        // As with ssh, the words make one command line for the node's shell.
        let out = on_node("n2", &["test -d /proc &&", "exit 7"]);
        assert_eq!(
            out.status.code(),
            Some(7),
            "the remote exit status comes back"
        );
        let out = on_node("n9", &["true"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "an unknown node was accepted");
        assert!(
            err.contains("has no node \"n9\"") && err.contains("n1, n2, n3, n4"),
            "{err}"
        );
        // Traffic between two nodes over SSH, on the bus and across the switch.
        let (table, _) =
            support::orchestrate_ok(&["cluster", "verify", "--name", name, "--state-dir", state_s]);
        assert!(table.contains("n1:eth1->n2:eth1"), "{table}");
        assert!(table.contains("switch core"), "{table}");
        assert!(!table.contains("FAIL"), "{table}");
    });
    support::orchestrate_ok(&["cluster", "down", "--name", name, "--state-dir", state_s]);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}
