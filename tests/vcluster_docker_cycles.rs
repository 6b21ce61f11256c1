//! Three up/down cycles of a cluster with every kind of wire leave the host exactly as it
//! was: the same interfaces, qdiscs, docker networks, containers and processes (the medium
//! emulator included). `down` also works twice,
//! without the compose file, and without the cluster's directory at all.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

#[test]
fn docker_three_up_down_cycles_leave_the_host_as_found() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    let topo = support::write_four_nodes(tmp.path());
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let topo_s = topo.to_str().unwrap();
    let name = &support::cluster_name("vct-cycles");
    let dir = state.join("clusters").join(name);
    // Make sure the image exists first: building it creates (and removes) helper containers.
    support::orchestrate_ok(&["cluster", "image"]);
    let before = support::host_snapshot(name);
    let result = std::panic::catch_unwind(|| cycles(&before, topo_s, state_s, name, &dir));
    // Whatever happened, leave nothing behind.
    support::orchestrate(&["cluster", "down", "--name", name, "--state-dir", state_s]);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

fn cycles(before: &[String], topo_s: &str, state_s: &str, name: &str, dir: &std::path::Path) {
    for cycle in 0..3 {
        support::orchestrate_ok(&[
            "cluster",
            "up",
            topo_s,
            "--name",
            name,
            "--state-dir",
            state_s,
        ]);
        let during = support::host_snapshot(name);
        let prefix = orchestrate::vcluster::ClusterName::parse(name)
            .unwrap()
            .ifb_prefix();
        let ifbs = during
            .iter()
            .filter(|l| l.contains("qdisc tbf") && l.contains(&format!(" dev {prefix}")))
            .count();
        // One per port of the two token-bucket switched segments (2 nodes + 1 switch port
        // each); the bus is the medium emulator's.
        assert_eq!(
            ifbs,
            3 + 3,
            "tbf-shaped ifbs during cycle {cycle}: {during:#?}"
        );
        let emulators = during
            .iter()
            .filter(|l| l.starts_with("process ") && l.contains(&format!("/{name}/medium.")))
            .count();
        assert_eq!(
            emulators, 1,
            "medium emulators during cycle {cycle}: {during:#?}"
        );
        let (status, _) =
            support::orchestrate_ok(&["cluster", "status", "--name", name, "--state-dir", state_s]);
        assert!(status.contains("5 containers"), "{status}");
        match cycle {
            // Down must not need the compose file...
            1 => std::fs::remove_file(dir.join("compose.yaml")).unwrap(),
            // ...nor anything in the cluster's directory.
            2 => std::fs::remove_dir_all(dir).unwrap(),
            _ => {}
        }
        support::orchestrate_ok(&["cluster", "down", "--name", name, "--state-dir", state_s]);
        // Idempotent: a second down finds nothing and succeeds.
        let (again, _) =
            support::orchestrate_ok(&["cluster", "down", "--name", name, "--state-dir", state_s]);
        assert!(
            again
                .contains("0 containers, 0 networks, 0 ifb devices, 0 medium emulator(s), 0 files"),
            "{again}"
        );
        assert!(!dir.exists(), "{} left behind", dir.display());
        let after = support::host_snapshot(name);
        support::assert_host_as_found(before, &after, &format!("cycle {cycle}"));
    }
}
