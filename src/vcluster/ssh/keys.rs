//! SSH keys as on a real cluster: one key pair to log in with, one host key per node, and a
//! known_hosts file that pins every node's host key.

use std::path::Path;

use crate::vcluster::cluster_dir::with_pub;
use crate::vcluster::cmd::{Cmd, on_path};
use crate::vcluster::error::{Error, Result};

/// Generates an ed25519 key pair at `path` (and `path.pub`); returns the public key line.
pub fn generate(path: &Path, comment: &str) -> Result<String> {
    if on_path("ssh-keygen").is_none() {
        return Err(Error::Host {
            problem: "`ssh-keygen` is not installed".into(),
            what_to_do: "install the OpenSSH client (Debian: apt-get install openssh-client)"
                .into(),
        });
    }
    for p in [path.to_owned(), with_pub(path)] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing an old key", p, e)),
        }
    }
    Cmd::new(
        "ssh-keygen",
        format!("generating the key pair {}", path.display()),
    )
    .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
    .arg(path.display().to_string())
    .run()?;
    read_public(&with_pub(path))
}

pub fn read_public(path: &Path) -> Result<String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io("reading the public key", path, e))?;
    Ok(text.trim().to_owned())
}

/// One known_hosts line for `host:port` with the given public key line (its comment dropped).
pub fn known_hosts_line(host: &str, port: u16, public_key: &str) -> String {
    let mut parts = public_key.split_whitespace();
    let kind = parts.next().unwrap_or_default();
    let key = parts.next().unwrap_or_default();
    let who = if port == 22 {
        host.to_owned()
    } else {
        format!("[{host}]:{port}")
    };
    format!("{who} {kind} {key}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_hosts_lines_follow_openssh() {
        let k = "ssh-ed25519 AAAAC3Nz root@n01";
        assert_eq!(
            known_hosts_line("10.0.0.2", 22, k),
            "10.0.0.2 ssh-ed25519 AAAAC3Nz"
        );
        assert_eq!(
            known_hosts_line("127.0.0.1", 2222, k),
            "[127.0.0.1]:2222 ssh-ed25519 AAAAC3Nz"
        );
    }

    #[test]
    fn generates_an_ed25519_pair() {
        if on_path("ssh-keygen").is_none() {
            eprintln!("skipping: ssh-keygen is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k");
        let public = generate(&p, "test key").unwrap();
        assert!(public.starts_with("ssh-ed25519 "), "{public}");
        assert!(p.is_file());
        // A second call replaces the pair instead of failing on the existing file.
        let again = generate(&p, "test key").unwrap();
        assert_ne!(public, again);
    }
}
