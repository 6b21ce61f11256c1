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

pub fn topology(name: &str) -> orchestrate::topology::Topology {
    let path = root().join("topologies").join(format!("{name}.toml"));
    orchestrate::topology::load(&path).unwrap_or_else(|e| panic!("{name}: {e:?}"))
}
