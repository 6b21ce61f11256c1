//! The inventory `up` writes: logical node -> how to reach it over SSH, in the controller's
//! inventory format (`[defaults]` and one `[[host]]` per node; paths relative to the file).
//! Nothing in it says the nodes are containers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};

/// How to reach one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub identity_file: PathBuf,
    pub known_hosts: PathBuf,
}

/// Every node of a cluster; one user, port, key and known_hosts for all.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    pub nodes: BTreeMap<String, Host>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDefaults {
    user: String,
    port: u16,
    identity: PathBuf,
    known_hosts: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHost {
    nodes: String,
    address: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InventoryFile {
    defaults: FileDefaults,
    host: Vec<FileHost>,
}

impl Inventory {
    /// The file's text. `dir` is where it will be written: the key and known_hosts paths are
    /// written relative to it when they are inside it, so the cluster directory can move.
    pub fn to_toml(&self, cluster: &str, dir: &Path) -> Result<String> {
        let first = self
            .nodes
            .values()
            .next()
            .ok_or_else(|| Error::Wiring("no nodes".into()))?;
        if self.nodes.values().any(|h| {
            (&h.user, h.port, &h.identity_file, &h.known_hosts)
                != (
                    &first.user,
                    first.port,
                    &first.identity_file,
                    &first.known_hosts,
                )
        }) {
            return Err(Error::Wiring(
                "the inventory writer expects one user, port, key and known_hosts for all nodes"
                    .into(),
            ));
        }
        let rel = |p: &Path| {
            p.strip_prefix(dir)
                .map(Path::to_owned)
                .unwrap_or_else(|_| p.to_owned())
        };
        let file = InventoryFile {
            defaults: FileDefaults {
                user: first.user.clone(),
                port: first.port,
                identity: rel(&first.identity_file),
                known_hosts: rel(&first.known_hosts),
            },
            host: self
                .nodes
                .iter()
                .map(|(n, h)| FileHost {
                    nodes: n.clone(),
                    address: h.host.clone(),
                })
                .collect(),
        };
        let body = toml::to_string(&file).map_err(|e| Error::Wiring(e.to_string()))?;
        Ok(format!(
            "# Inventory of virtual cluster {cluster:?}, written by `orchestrate cluster up`.\n\
             # Paths are relative to this file. Host keys are pinned in known_hosts.\n\n{body}"
        ))
    }

    /// Reads an inventory written by [`Inventory::to_toml`] (one node per `[[host]]`).
    pub fn load(path: &Path) -> Result<Inventory> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io("reading the inventory", path, e))?;
        let file: InventoryFile = toml::from_str(&text).map_err(|e| Error::File {
            what: "reading the inventory".into(),
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let d = &file.defaults;
        let nodes = file
            .host
            .into_iter()
            .map(|h| {
                (
                    h.nodes,
                    Host {
                        host: h.address,
                        port: d.port,
                        user: d.user.clone(),
                        identity_file: dir.join(&d.identity),
                        known_hosts: dir.join(&d.known_hosts),
                    },
                )
            })
            .collect();
        Ok(Inventory { nodes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_paths_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let host = |addr: &str| Host {
            host: addr.into(),
            port: 22,
            user: "root".into(),
            identity_file: dir.path().join("id_ed25519"),
            known_hosts: dir.path().join("known_hosts"),
        };
        let inv = Inventory {
            nodes: [
                ("n01".to_owned(), host("172.20.0.2")),
                ("n02".to_owned(), host("172.20.0.3")),
            ]
            .into(),
        };
        let text = inv.to_toml("demo", dir.path()).unwrap();
        assert!(text.contains("[defaults]"), "{text}");
        assert!(text.contains("identity = \"id_ed25519\""), "{text}");
        assert!(
            text.contains("[[host]]\nnodes = \"n01\"\naddress = \"172.20.0.2\""),
            "{text}"
        );
        let p = dir.path().join("inventory.toml");
        std::fs::write(&p, text).unwrap();
        assert_eq!(Inventory::load(&p).unwrap(), inv);

        // The SSH controller reads the same file.
        let remote = crate::remote::Inventory::load(&p).expect("the controller reads it");
        let n02 = &remote.hosts[&"n02".parse().unwrap()];
        assert_eq!(n02.address, "172.20.0.3");
        assert_eq!(n02.port, Some(22));
        assert_eq!(n02.user.as_deref(), Some("root"));
        assert_eq!(
            n02.identity.as_deref(),
            Some(dir.path().join("id_ed25519").as_path())
        );
        assert_eq!(
            n02.known_hosts.as_deref(),
            Some(dir.path().join("known_hosts").as_path())
        );
    }
}
