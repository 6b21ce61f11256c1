//! The SSH layer against a real sshd on loopback: commands, failures that name node and
//! command, timeouts, and strict host key checking.

mod common;
#[path = "common/need.rs"]
mod need;

use std::time::Duration;

use common::sshd::Sshd;
use orchestrate::remote::{ConnectOptions, Inventory, RemoteError, Sessions};
use orchestrate::spec::NodeName;

fn names(ns: &[&str]) -> Vec<NodeName> {
    ns.iter().map(|n| n.parse().unwrap()).collect()
}

#[tokio::test]
async fn sshd_commands_run_on_every_node_and_failures_name_node_and_command() {
    require_needs!();
    let sshd = Sshd::start();
    let nodes = ["n1", "n2", "n3"];
    let inv = Inventory::load(&sshd.inventory(&nodes)).unwrap();
    let cluster = Sessions::connect(&inv, &names(&nodes), &ConnectOptions::default())
        .await
        .unwrap();

    let all = cluster
        .run_all("echo hello $((6*7))", Duration::from_secs(10))
        .await;
    assert_eq!(all.len(), 3);
    for (_, r) in &all {
        assert_eq!(r.as_ref().unwrap().stdout, "hello 42\n");
    }

    let n2: NodeName = "n2".parse().unwrap();
    let err = cluster
        .run(&n2, "echo oops >&2; exit 3", None, Duration::from_secs(10))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("n2: `echo oops >&2; exit 3` failed (exit 3): oops"),
        "{msg}"
    );

    let echoed = cluster
        .run(&n2, "cat", Some(b"stdin arrives"), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(echoed.stdout, "stdin arrives");

    let slow = cluster
        .run(&n2, "sleep 5", None, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(matches!(slow, RemoteError::Timeout { .. }), "{slow}");
    cluster.close().await;
}

#[tokio::test]
async fn sshd_a_master_idle_past_its_idle_exit_still_carries_the_next_command() {
    require_needs!();
    let sshd = Sshd::start();
    let nodes = ["n1", "n2"];
    let inv = Inventory::load(&sshd.inventory(&nodes)).unwrap();
    let idle_exit = Duration::from_secs(3);
    let opts = ConnectOptions {
        idle_exit,
        ..ConnectOptions::default()
    };
    let cluster = Sessions::connect(&inv, &names(&nodes), &opts)
        .await
        .unwrap();
    // Nodes wait their turn in a fan-out longer than that: their masters must not have gone.
    tokio::time::sleep(4 * idle_exit).await;
    for (node, r) in cluster
        .run_all("echo still here", Duration::from_secs(10))
        .await
    {
        assert_eq!(r.map(|o| o.stdout).unwrap(), "still here\n", "{node}");
    }
    cluster.close().await;
}

#[tokio::test]
async fn sshd_a_changed_host_key_is_refused_before_anything_runs() {
    require_needs!();
    let sshd = Sshd::start();
    let inv_path = sshd.inventory(&["n1", "n2"]);
    sshd.forget_real_host_key();
    let inv = Inventory::load(&inv_path).unwrap();
    let errors =
        match Sessions::connect(&inv, &names(&["n1", "n2"]), &ConnectOptions::default()).await {
            Ok(_) => panic!("connected despite a changed host key"),
            Err(e) => e,
        };
    assert_eq!(errors.len(), 2);
    for e in &errors {
        let msg = e.to_string();
        assert!(matches!(e, RemoteError::Connect { .. }), "{msg}");
        assert!(
            msg.to_lowercase().contains("host key") || msg.contains("verification failed"),
            "{msg}"
        );
    }
}

#[tokio::test]
async fn nodes_missing_from_the_inventory_are_named() {
    let inv = Inventory::default();
    let errors = match Sessions::connect(&inv, &names(&["n7"]), &ConnectOptions::default()).await {
        Ok(_) => panic!("connected to nothing"),
        Err(e) => e,
    };
    assert_eq!(errors[0].to_string(), "n7 is not in the inventory");
}
