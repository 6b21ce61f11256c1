//! The study's routed 4x4 mesh as a 16-node cluster: the image builds in under 5 minutes
//! (when it has to), `up` takes under a minute, every node answers over SSH with its host key
//! verified, `cluster verify` passes on the buses, and after `down` the host is as it was.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::time::Duration;

use orchestrate::remote::Inventory;

#[test]
fn docker_routed_mesh_sixteen_nodes_up_in_under_a_minute() {
    require_needs!();
    let (image, took) = support::orchestrate_ok(&["cluster", "image"]);
    assert!(
        took < Duration::from_secs(300),
        "image took {took:?}: {image}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    let name = &support::cluster_name("vct-mesh");
    // After the image: building it makes (and removes) helper containers.
    let before = support::host_snapshot(name);
    let (out, took) = support::orchestrate_ok(&[
        "cluster",
        "up",
        "topologies/routed-mesh-4x4.toml",
        "--name",
        name,
        "--state-dir",
        state_s,
    ]);
    let result = std::panic::catch_unwind(|| {
        assert!(took < Duration::from_secs(60), "up took {took:?}: {out}");
        assert!(out.contains("16 nodes"), "{out}");
        let inv =
            Inventory::load(&state.join("clusters").join(name).join("inventory.toml")).unwrap();
        assert_eq!(inv.hosts.len(), 16);
        std::thread::scope(|s| {
            for (node, host) in &inv.hosts {
                s.spawn(move || {
                    let o = support::ssh(host, "hostname");
                    assert!(
                        o.status.success(),
                        "{node}: {}",
                        String::from_utf8_lossy(&o.stderr)
                    );
                    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), node.as_str());
                });
            }
        });
        let (table, _) = support::orchestrate_ok(&[
            "cluster",
            "verify",
            "--name",
            name,
            "--state-dir",
            state_s,
            "--segment",
            "row1",
            "--segment",
            "col4",
        ]);
        assert!(!table.contains("FAIL"), "{table}");
    });
    support::orchestrate_ok(&["cluster", "down", "--name", name, "--state-dir", state_s]);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    // One whole 16-node cycle leaves the host as it found it.
    let after = support::host_snapshot(name);
    support::assert_host_as_found(&before, &after, "the 16-node cycle");
}
