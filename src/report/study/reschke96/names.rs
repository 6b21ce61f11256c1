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
