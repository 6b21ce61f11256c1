//! `down` always finishes: a network the engine refuses to remove (here: a container that is
//! not the cluster's still attached to its management network) makes `down` fail naming the
//! network, the container and the command that frees it, with the cluster's state kept (the
//! rest, a wire an unfinished `up` left on the host included, is removed all the same); once
//! the network is freed, a second `down` removes the rest and the host is as it was.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::process::Command;
use std::sync::OnceLock;

/// This run's cluster (see `support::cluster_name`).
fn name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| support::cluster_name("vct-held"))
}

#[test]
fn docker_down_names_a_network_it_cannot_remove_keeps_the_state_and_a_later_down_finishes() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    let topo = support::write_four_nodes(tmp.path());
    let state = tmp.path().join("state");
    let state_s = state.to_str().unwrap();
    support::orchestrate_ok(&["cluster", "image"]);
    let before = support::host_snapshot(name());
    // `down --all` takes every cluster on the host: only where this test's is the only one.
    let alone = other_clusters().is_empty();
    let stranger = format!("orchestrate-test-stranger-{}", std::process::id());
    let result = std::panic::catch_unwind(|| {
        held_then_freed(topo.to_str().unwrap(), state_s, &state, &stranger, alone)
    });
    let _ = docker(&["rm", "--force", &stranger]);
    support::orchestrate(&["cluster", "down", "--name", name(), "--state-dir", state_s]);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    let after = support::host_snapshot(name());
    support::assert_host_as_found(&before, &after, "the held-network test");
}

fn held_then_freed(
    topo: &str,
    state_s: &str,
    state: &std::path::Path,
    stranger: &str,
    alone: bool,
) {
    support::orchestrate_ok(&[
        "cluster",
        "up",
        topo,
        "--name",
        name(),
        "--state-dir",
        state_s,
    ]);
    let dir = state.join("clusters").join(name());
    let image = cluster_image(state_s);
    let mgmt = format!("orchestrate-{}-mgmt", name());
    // A container of someone else's, on the cluster's management network.
    let run = docker(&[
        "run",
        "--detach",
        "--name",
        stranger,
        "--network",
        &mgmt,
        "--entrypoint",
        "/bin/sleep",
        &image,
        "600",
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    // And a wire an `up` that died half-way would leave: both ends still on the host.
    let cluster = orchestrate::vcluster::ClusterName::parse(name()).unwrap();
    let (end, staging) = (cluster.wire_end(999), cluster.wire_staging(999));
    let made = Command::new("ip")
        .args([
            "link", "add", &end, "type", "veth", "peer", "name", &staging,
        ])
        .status()
        .unwrap();
    assert!(made.success());

    let held = support::orchestrate(&["cluster", "down", "--name", name(), "--state-dir", state_s]);
    let err = String::from_utf8_lossy(&held.stderr);
    assert!(
        !held.status.success(),
        "down claimed success with a network still held"
    );
    let command = format!("docker network disconnect {mgmt} {stranger}");
    assert!(
        err.contains(&mgmt) && err.contains(stranger) && err.contains(&command),
        "the refusal does not name the network, the container and the command: {err}"
    );
    assert!(err.contains("state is kept"), "{err}");
    assert!(
        dir.join("state.toml").exists(),
        "the cluster's state was not kept"
    );
    // The stranger is untouched: still running, still on the network.
    let on = docker(&[
        "inspect",
        "--format",
        "{{.State.Running}} {{json .NetworkSettings.Networks}}",
        stranger,
    ]);
    let on = String::from_utf8_lossy(&on.stdout);
    assert!(
        on.starts_with("true") && on.contains(&mgmt),
        "down touched the stranger: {on}"
    );
    // The cluster's own containers and wires are gone all the same.
    let links = Command::new("ip").args(["-br", "link"]).output().unwrap();
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(
        !links.contains(&end) && !links.contains(&staging),
        "the unfinished wire is still there: {links}"
    );
    let (status, _) = support::orchestrate_ok(&[
        "cluster",
        "status",
        "--name",
        name(),
        "--state-dir",
        state_s,
        "--json",
    ]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        status["members"].as_array().map(Vec::len),
        Some(0),
        "{status}"
    );

    // The person runs the command named, then down again (or down --all, which finds the
    // cluster by its label and its directory).
    let freed = docker(&command.split(' ').skip(1).collect::<Vec<_>>());
    assert!(
        freed.status.success(),
        "{}",
        String::from_utf8_lossy(&freed.stderr)
    );
    let (out, _) = if alone {
        support::orchestrate_ok(&["cluster", "down", "--all", "--state-dir", state_s])
    } else {
        support::orchestrate_ok(&["cluster", "down", "--name", name(), "--state-dir", state_s])
    };
    assert!(
        out.contains(&format!("cluster {} removed", name())),
        "{out}"
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
    docker(&["rm", "--force", stranger]);
}

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs")
}

/// The node image the cluster runs, from its status.
fn cluster_image(state_s: &str) -> String {
    let (status, _) = support::orchestrate_ok(&[
        "cluster",
        "status",
        "--name",
        name(),
        "--state-dir",
        state_s,
        "--json",
    ]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    status["image"]
        .as_str()
        .expect("the cluster's image")
        .to_owned()
}

/// Containers of clusters other than this test's (none of its own exist yet).
fn other_clusters() -> Vec<String> {
    let out = docker(&[
        "ps",
        "-a",
        "--filter",
        "label=org.orchestrate.cluster",
        "--format",
        "{{.Names}}",
    ]);
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}
