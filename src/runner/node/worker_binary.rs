//! The worker build the runner installs on the nodes: its bytes and their SHA-256, which names
//! the installed file (so a node that already has this very build is not sent it again) and
//! is what the node checks before the file may run.

use std::path::Path;

use anyhow::Context;

pub struct WorkerBuild {
    pub bytes: Vec<u8>,
    /// SHA-256 of `bytes`, lowercase hex, as `sha256sum` prints it.
    pub sha256: String,
}

impl WorkerBuild {
    pub fn read(path: &Path) -> anyhow::Result<WorkerBuild> {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(WorkerBuild::from_bytes(bytes))
    }

    pub fn from_bytes(bytes: Vec<u8>) -> WorkerBuild {
        let sha256 = crate::remote::installed_worker::sha256_hex(&bytes);
        WorkerBuild { bytes, sha256 }
    }

    /// The installed file's name: builds differ by name, so several can sit side by side.
    pub fn file_name(&self) -> String {
        crate::remote::installed_worker::file_name(&self.sha256)
    }
}
