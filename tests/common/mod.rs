//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod sshd;

use std::path::PathBuf;

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

/// Whether this test may make network namespaces: root, with iproute2.
pub fn can_use_netns() -> bool {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let ip = std::process::Command::new("ip").arg("-V").output().is_ok();
    root && ip
}

pub fn topology(name: &str) -> orchestrate::topology::Topology {
    let path = root().join("topologies").join(format!("{name}.toml"));
    orchestrate::topology::load(&path).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}
