//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod sshd;

use std::path::PathBuf;

/// The worker binary next to this test's target directory: `cargo build --workspace` and
/// `scripts/test` build it; a run of this package alone must build it first.
pub fn worker_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let w = exe
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap()
        .join("orchestrate-worker");
    assert!(
        w.exists(),
        "{} is missing: build the worker first (cargo build -p orchestrate-worker)",
        w.display()
    );
    w
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub const SHIPPED_TOPOLOGIES: [&str; 5] = [
    "bonded-dual-net",
    "single-net",
    "routed-mesh-4x4",
    "switched-mesh-4x4",
    "switched-bonded-mesh-4x4",
];

pub fn topology(name: &str) -> orchestrate::topology::Topology {
    let path = root().join("topologies").join(format!("{name}.toml"));
    orchestrate::topology::load(&path).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}
