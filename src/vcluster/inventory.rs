//! The inventory `up` writes: logical node -> how to reach it over SSH. Nothing in it says the
//! nodes are containers; the SSH controller reads it as it reads a real cluster's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// Informational: which virtual cluster wrote this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    pub nodes: BTreeMap<String, Host>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub identity_file: PathBuf,
    pub known_hosts: PathBuf,
}

impl Inventory {
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("inventory serializes");
        format!(
            "# Inventory written by `orchestrate cluster up`: how to reach each node over SSH.\n\
             # Host keys are pinned in `known_hosts`; connect with StrictHostKeyChecking=yes.\n\n{body}"
        )
    }

    pub fn load(path: &Path) -> Result<Inventory> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io("reading the inventory", path, e))?;
        toml::from_str(&text).map_err(|e| Error::File {
            what: "reading the inventory".into(),
            path: path.to_owned(),
            detail: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_toml() {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            "n01".to_owned(),
            Host {
                host: "172.20.0.2".into(),
                port: 22,
                user: "root".into(),
                identity_file: "/c/id_ed25519".into(),
                known_hosts: "/c/known_hosts".into(),
            },
        );
        let inv = Inventory {
            cluster: Some("demo".into()),
            nodes,
        };
        let text = inv.to_toml();
        assert!(text.contains("[nodes.n01]"), "{text}");
        assert!(text.contains("host = \"172.20.0.2\""), "{text}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("inventory.toml");
        std::fs::write(&p, text).unwrap();
        assert_eq!(Inventory::load(&p).unwrap(), inv);
    }
}
