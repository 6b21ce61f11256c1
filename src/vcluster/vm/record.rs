//! What a VM cluster adds to a netns cluster's state: the kernel its guests boot, how QEMU
//! runs them, and each guest's QEMU process (recorded as it starts; `down` finds them also
//! as whatever runs in the cluster's namespaces).

use serde::{Deserialize, Serialize};

use super::guest::Accel;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmRecord {
    /// The guest kernel's version (Debian's, `6.1.0-57-amd64`).
    pub kernel: String,
    pub accel: Accel,
    /// Why that accelerator: what the KVM probe found.
    #[serde(default)]
    pub accel_reason: String,
    pub memory_mib: u32,
    #[serde(default)]
    pub guests: Vec<GuestProcess>,
}

/// One guest's QEMU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestProcess {
    pub node: String,
    pub pid: u32,
}
