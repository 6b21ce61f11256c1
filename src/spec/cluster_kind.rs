//! `[cluster] kind`: where an experiment's nodes come from. Its own module because both the
//! experiment and its `[[reference]]` values name it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClusterKind {
    /// The built-in virtual cluster of docker containers, brought up on this machine.
    #[default]
    Docker,
    /// Real machines listed in an inventory file.
    Inventory,
    /// The machines of the current Slurm allocation (`SLURM_JOB_NODELIST`), in order.
    Slurm,
    /// The built-in virtual cluster without containers: each node a network namespace of
    /// this machine with its own sshd, hostname and private /run, /root, /tmp and /var/tmp, running
    /// this machine's programs (no image, no docker engine). Segments must be carried by the
    /// medium emulator (no `emulation = "rate"`).
    Netns,
    /// The netns cluster with a QEMU guest in every node, booting Debian's kernel: a kernel
    /// of each node's own, for the kernel's bonding driver (`driver = "kernel"`). Needs
    /// qemu-system-x86 and busybox-static; without KVM, slow to boot (TCG).
    Vm,
}

impl ClusterKind {
    /// As the experiment file writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Docker => "docker",
            Self::Inventory => "inventory",
            Self::Slurm => "slurm",
            Self::Netns => "netns",
            Self::Vm => "vm",
        }
    }
}
