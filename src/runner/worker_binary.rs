//! The worker build the runner installs on the nodes, under a name that carries its checksum,
//! so a node that already has this very build is not sent it again.

use std::path::Path;

use anyhow::Context;
use sha2::Digest;

/// Where the worker is installed on the nodes.
const NODE_WORKER_DIR: &str = "/var/tmp/orchestrate";

pub struct WorkerBuild {
    pub bytes: Vec<u8>,
    /// Its path on every node.
    pub node_path: String,
}

impl WorkerBuild {
    pub fn read(path: &Path) -> anyhow::Result<WorkerBuild> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let digest: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let node_path = format!("{NODE_WORKER_DIR}/orchestrate-worker-{}", &digest[..16]);
        Ok(WorkerBuild { bytes, node_path })
    }
}
