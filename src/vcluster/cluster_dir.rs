//! Where a cluster's files live: `<state dir>/clusters/<name>/`, by default
//! `./.orchestrate/clusters/<name>/`.
//!
//! ```text
//! compose.yaml      the compose file (readable; usable with docker compose by hand)
//! state.toml        what `up` created on the host: containers' labels, ifb devices, files
//! inventory.toml    logical node -> address, port, user, identity file, known_hosts
//! known_hosts       every node's pinned host key
//! ssh_config        the same as an OpenSSH config: `ssh -F ssh_config n01`
//! id_ed25519(.pub)  the cluster's key pair (the only way in)
//! authorized_keys   mounted read-only into every node
//! nodes/<n>/        each node's host key pair
//! ```
//!
//! The medium emulator's files are not there but under `/run/orchestrate/<name>/` (mode 0700,
//! root's): the emulator runs as root and relays frames between the ports its config names,
//! and the state directory usually sits in a user's checkout, where that user could swap
//! files under root's feet.
//!
//! ```text
//! medium.json       the emulator's config as it was started (segments, ports, host costs)
//! medium.sock       its control socket (mode 0600): statistics per segment
//! medium.log        what it printed
//! netns             a netns cluster's mark (how `cluster status` and `down --all` know it)
//! sshd.log          what a netns cluster's sshds printed
//! bin/              the worker every netns node runs as orchestrate-worker
//! ```

use std::path::{Path, PathBuf};

use super::names::ClusterName;

/// The default root of the clusters' directories, relative to the working directory.
pub const DEFAULT_STATE_DIR: &str = ".orchestrate";

/// Where root-only runtime files of the clusters live.
pub const RUNTIME_ROOT: &str = "/run/orchestrate";

/// The file in a netns cluster's runtime directory that marks it as one.
pub const NETNS_MARKER: &str = "netns";

/// Whether `/run/orchestrate/<name>/` is marked as a netns cluster's (`up` marks it first).
pub fn is_netns_cluster(name: &str) -> bool {
    Path::new(RUNTIME_ROOT)
        .join(name)
        .join(NETNS_MARKER)
        .is_file()
}

#[derive(Debug, Clone)]
pub struct ClusterDir {
    root: PathBuf,
    runtime: PathBuf,
}

impl ClusterDir {
    /// `state_dir` is made absolute so that the inventory's paths work from anywhere.
    pub fn new(state_dir: &Path, cluster: &ClusterName) -> ClusterDir {
        let state_dir = std::path::absolute(state_dir).unwrap_or_else(|_| state_dir.to_owned());
        ClusterDir {
            root: Self::clusters_root(&state_dir).join(cluster.as_str()),
            runtime: Path::new(RUNTIME_ROOT).join(cluster.as_str()),
        }
    }

    /// Where every cluster's directory under `state_dir` lives.
    pub fn clusters_root(state_dir: &Path) -> PathBuf {
        std::path::absolute(state_dir)
            .unwrap_or_else(|_| state_dir.to_owned())
            .join("clusters")
    }

    /// The medium emulator's directory, `/run/orchestrate/<name>/`.
    pub fn runtime(&self) -> &Path {
        &self.runtime
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn compose_file(&self) -> PathBuf {
        self.root.join("compose.yaml")
    }
    pub fn state_file(&self) -> PathBuf {
        self.root.join("state.toml")
    }
    /// The medium emulator's configuration (segments, ports, nodes' host costs).
    pub fn medium_config(&self) -> PathBuf {
        self.runtime.join("medium.json")
    }
    /// The medium emulator's control socket: statistics per segment (see
    /// `orchestrate_medium::realtime::control`). Present while the emulator runs.
    pub fn medium_socket(&self) -> PathBuf {
        self.runtime.join("medium.sock")
    }
    /// What the medium emulator prints (its errors, and its totals when it stops).
    pub fn medium_log(&self) -> PathBuf {
        self.runtime.join("medium.log")
    }
    /// Marks the runtime directory as a netns cluster's.
    pub fn netns_marker(&self) -> PathBuf {
        self.runtime.join(NETNS_MARKER)
    }
    /// What a netns cluster's sshds print (appended, all nodes).
    pub fn sshd_log(&self) -> PathBuf {
        self.runtime.join("sshd.log")
    }
    /// The directory a netns cluster's nodes lay over their /usr/local/bin.
    pub fn worker_bin_dir(&self) -> PathBuf {
        self.runtime.join("bin")
    }
    /// The sshd configuration every node of a netns cluster copies in.
    pub fn sshd_config(&self) -> PathBuf {
        self.root.join("sshd_config")
    }
    pub fn inventory(&self) -> PathBuf {
        self.root.join("inventory.toml")
    }
    pub fn known_hosts(&self) -> PathBuf {
        self.root.join("known_hosts")
    }
    pub fn ssh_config(&self) -> PathBuf {
        self.root.join("ssh_config")
    }
    pub fn identity(&self) -> PathBuf {
        self.root.join("id_ed25519")
    }
    pub fn authorized_keys(&self) -> PathBuf {
        self.root.join("authorized_keys")
    }
    pub fn nodes_dir(&self) -> PathBuf {
        self.root.join("nodes")
    }
    pub fn node_dir(&self, node: &str) -> PathBuf {
        self.nodes_dir().join(node)
    }
    pub fn host_key(&self, node: &str) -> PathBuf {
        self.node_dir(node).join("ssh_host_ed25519_key")
    }

    /// Every file `up` may write, for `down` to remove (and nothing else).
    pub fn files(&self, nodes: &[String]) -> Vec<PathBuf> {
        let mut f = vec![
            self.compose_file(),
            self.inventory(),
            self.known_hosts(),
            self.ssh_config(),
            self.identity(),
            with_pub(&self.identity()),
            self.authorized_keys(),
            self.medium_config(),
            self.medium_socket(),
            self.medium_log(),
            self.sshd_config(),
            self.sshd_log(),
            self.worker_bin_dir().join("orchestrate-worker"),
            self.netns_marker(),
        ];
        for n in nodes {
            f.push(self.host_key(n));
            f.push(with_pub(&self.host_key(n)));
            // A VM node's guest: its init script, console and QEMU's log.
            for file in ["init.sh", "console.log", "qemu.log"] {
                f.push(self.node_dir(n).join(file));
            }
        }
        // Last: while it exists, a half-removed cluster can still be found.
        f.push(self.state_file());
        f
    }
}

pub fn with_pub(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}
