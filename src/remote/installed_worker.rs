//! Where a run keeps the worker on a node, named by the build: the runner installs it there
//! (`runner::node::worker_install`, which checks the place before each use), and the virtual
//! cluster's node image holds the same build at the same place, so a run on it uploads
//! nothing.

/// The parent of each user's worker directory on the nodes.
pub const NODE_PARENT: &str = "/var/tmp";

/// The directory of the user with `uid` under `parent`.
pub fn dir(parent: &str, uid: u32) -> String {
    format!("{parent}/orchestrate-{uid}")
}

/// The SHA-256 of `bytes` as `sha256sum` prints it: what names a build and what a node
/// checks before the file may run.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The installed file's name, from the build's SHA-256 (lowercase hex): builds differ by name,
/// so several can sit side by side.
pub fn file_name(sha256_hex: &str) -> String {
    format!(
        "orchestrate-worker-{}",
        &sha256_hex[..16.min(sha256_hex.len())]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_is_named_by_its_digest_in_its_users_directory() {
        let sha = "e2c8ae84ad2134fe94f42c593c1573a74dcea33841e966c253b22fb058563f2e";
        assert_eq!(
            format!("{}/{}", dir(NODE_PARENT, 0), file_name(sha)),
            "/var/tmp/orchestrate-0/orchestrate-worker-e2c8ae84ad2134fe"
        );
    }

    #[test]
    fn the_digest_is_sha256sums() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
