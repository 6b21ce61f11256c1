//! The 1996 study's topologies, by the names the project ships (`topologies/*.toml`), and
//! which of their configurations the study measured.

pub const BONDED_DUAL_NET: &str = "bonded-dual-net";
pub const ROUTED_MESH: &str = "routed-mesh-4x4";
pub const SWITCHED_MESH: &str = "switched-mesh-4x4";
pub const SWITCHED_BONDED_MESH: &str = "switched-bonded-mesh-4x4";
pub const MESHES: [&str; 2] = [ROUTED_MESH, SWITCHED_MESH];

/// Whether a configuration is one the 1996 study measured: its bonded topologies with their
/// balance-rr bonds, the others as they are.
pub fn as_in_the_study(topology: &str, bonding: &str) -> bool {
    if topology.contains("bonded") {
        bonding == "balance-rr"
    } else {
        bonding == "none"
    }
}

/// The better of the two meshes by `value` (`None` where neither has one): (topology, value).
pub fn best_mesh(value: impl Fn(&str) -> Option<f64>) -> Option<(&'static str, f64)> {
    MESHES
        .iter()
        .filter_map(|t| value(t).map(|v| (*t, v)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}
