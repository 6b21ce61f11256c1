//! The inventory: which machine plays which logical node, and how to reach it over SSH.
//!
//! ```toml
//! [defaults]               # for every host unless a [[host]] says otherwise
//! user = "root"
//! port = 22
//! identity = "~/.ssh/id_ed25519"
//! known_hosts = "known_hosts"   # relative to this file; default: ssh's own
//! sudo = false                  # run configuration commands through sudo -n
//!
//! [[host]]
//! nodes = "n[01-16]"            # logical names, as the topology calls them
//! address = "node[01-16].cluster"   # one address per node, in the same order
//! ```
//!
//! Paths are relative to the inventory file. The user's `~/.ssh/config`, agent and jump hosts
//! apply as with plain `ssh`. `Inventory::from_slurm` maps topology nodes onto the hosts of
//! `SLURM_JOB_NODELIST` in order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::spec::{NodeName, SourceFile, SpecErrors};

/// How to reach one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub node: NodeName,
    /// Host name or address, as ssh takes it (may name a `Host` block of ~/.ssh/config).
    pub address: String,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub identity: Option<PathBuf>,
    /// A known_hosts file to check host keys against, strictly, instead of ssh's default.
    pub known_hosts: Option<PathBuf>,
    /// Jump host (ProxyJump) for reaching the node.
    pub jump: Option<String>,
    pub sudo: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    pub hosts: BTreeMap<NodeName, Host>,
}

// The file's layout, read by `load` and written by `to_toml`.

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    known_hosts: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jump: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    sudo: bool,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct HostSpec {
    nodes: Spanned<String>,
    address: Spanned<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    known_hosts: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jump: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sudo: Option<bool>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct InventorySpec {
    #[serde(default, skip_serializing_if = "Defaults::is_empty")]
    defaults: Defaults,
    #[serde(default)]
    host: Vec<HostSpec>,
}

impl Defaults {
    fn is_empty(&self) -> bool {
        let Defaults {
            user,
            port,
            identity,
            known_hosts,
            jump,
            sudo,
        } = self;
        user.is_none()
            && port.is_none()
            && identity.is_none()
            && known_hosts.is_none()
            && jump.is_none()
            && !sudo
    }
}

impl Inventory {
    /// Reads an inventory file; errors name file:line:column.
    pub fn load(path: &Path) -> Result<Inventory, SpecErrors> {
        let source = SourceFile::read(path)?;
        let spec: InventorySpec = source.parse()?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &Option<PathBuf>| p.as_ref().map(|p| expand_home(p, dir));
        let mut errors = Vec::new();
        let mut hosts = BTreeMap::new();
        for h in &spec.host {
            let nodes = match hostlist_parser::parse(h.nodes.get_ref()) {
                Ok(n) => n,
                Err(e) => {
                    errors.push(source.error(
                        h.nodes.span(),
                        format!("invalid node list: {e}"),
                        None,
                    ));
                    continue;
                }
            };
            let addresses = match hostlist_parser::parse(h.address.get_ref()) {
                Ok(a) => a,
                Err(e) => {
                    errors.push(source.error(
                        h.address.span(),
                        format!("invalid address list: {e}"),
                        None,
                    ));
                    continue;
                }
            };
            if addresses.len() != nodes.len() {
                errors.push(source.error(
                    h.address.span(),
                    format!("{} node(s) but {} address(es): give one address per node, in the same order", nodes.len(), addresses.len()),
                    None,
                ));
                continue;
            }
            for (node, address) in nodes.into_iter().zip(addresses) {
                let node: NodeName = match node.parse() {
                    Ok(n) => n,
                    Err(e) => {
                        errors.push(source.error(h.nodes.span(), e.to_string(), None));
                        continue;
                    }
                };
                if address.starts_with('-') || address.chars().any(|c| c.is_whitespace()) {
                    errors.push(source.error(
                        h.address.span(),
                        format!("invalid address {address:?}"),
                        None,
                    ));
                    continue;
                }
                let host = Host {
                    node: node.clone(),
                    address,
                    port: h.port.or(spec.defaults.port),
                    user: h.user.clone().or_else(|| spec.defaults.user.clone()),
                    identity: resolve(&h.identity).or_else(|| resolve(&spec.defaults.identity)),
                    known_hosts: resolve(&h.known_hosts)
                        .or_else(|| resolve(&spec.defaults.known_hosts)),
                    jump: h.jump.clone().or_else(|| spec.defaults.jump.clone()),
                    sudo: h.sudo.unwrap_or(spec.defaults.sudo),
                };
                if hosts.insert(node.clone(), host).is_some() {
                    errors.push(source.error(
                        h.nodes.span(),
                        format!("node `{node}` is listed twice"),
                        None,
                    ));
                }
            }
        }
        if errors.is_empty() {
            Ok(Inventory { hosts })
        } else {
            Err(SpecErrors { errors })
        }
    }

    /// Maps `nodes` (in topology order) onto the hosts of a Slurm node list such as
    /// `SLURM_JOB_NODELIST="cn[001-016]"`, in order.
    pub fn from_slurm(nodelist: &str, nodes: &[NodeName]) -> Result<Inventory, String> {
        let hosts = hostlist_parser::parse(nodelist)
            .map_err(|e| format!("invalid Slurm node list {nodelist:?}: {e}"))?;
        if hosts.len() < nodes.len() {
            return Err(format!(
                "the Slurm allocation has {} node(s); the topology needs {}",
                hosts.len(),
                nodes.len()
            ));
        }
        Ok(Inventory {
            hosts: nodes
                .iter()
                .zip(hosts)
                .map(|(n, address)| {
                    (
                        n.clone(),
                        Host {
                            node: n.clone(),
                            address,
                            port: None,
                            user: None,
                            identity: None,
                            known_hosts: None,
                            jump: None,
                            sudo: false,
                        },
                    )
                })
                .collect(),
        })
    }

    /// Nodes of `wanted` that the inventory does not list.
    pub fn missing<'a>(&self, wanted: impl IntoIterator<Item = &'a NodeName>) -> Vec<&'a NodeName> {
        wanted
            .into_iter()
            .filter(|n| !self.hosts.contains_key(*n))
            .collect()
    }

    /// How to reach `node`, if the inventory lists it.
    pub fn host(&self, node: &str) -> Option<&Host> {
        let node: NodeName = node.parse().ok()?;
        self.hosts.get(&node)
    }

    /// Writes the inventory in the file format [`Inventory::load`] reads: what every host has
    /// in common under `[defaults]`, then one `[[host]]` per node with what is its own. `dir`
    /// is where the file is to be written: paths inside it are written relative to it, so the
    /// directory can move; other paths as given.
    pub fn to_toml(&self, dir: &Path) -> String {
        let relative = |p: Option<&PathBuf>| {
            p.map(|p| {
                p.strip_prefix(dir)
                    .map(Path::to_owned)
                    .unwrap_or_else(|_| p.clone())
            })
        };
        let user = self.shared(|h| h.user.clone());
        let port = self.shared(|h| h.port);
        let identity = self.shared(|h| relative(h.identity.as_ref()));
        let known_hosts = self.shared(|h| relative(h.known_hosts.as_ref()));
        let jump = self.shared(|h| h.jump.clone());
        let sudo = self.shared(|h| h.sudo);
        let file = InventorySpec {
            host: self
                .hosts
                .values()
                .map(|h| HostSpec {
                    // Spans only matter when reading.
                    nodes: Spanned::new(0..0, h.node.to_string()),
                    address: Spanned::new(0..0, h.address.clone()),
                    user: own(&user, h.user.clone()).flatten(),
                    port: own(&port, h.port).flatten(),
                    identity: own(&identity, relative(h.identity.as_ref())).flatten(),
                    known_hosts: own(&known_hosts, relative(h.known_hosts.as_ref())).flatten(),
                    jump: own(&jump, h.jump.clone()).flatten(),
                    sudo: own(&sudo, h.sudo),
                })
                .collect(),
            defaults: Defaults {
                user: user.flatten(),
                port: port.flatten(),
                identity: identity.flatten(),
                known_hosts: known_hosts.flatten(),
                jump: jump.flatten(),
                sudo: sudo.unwrap_or(false),
            },
        };
        toml::to_string(&file).expect("inventory serializes")
    }

    /// The value `get` finds on every host, when they all have the same one.
    fn shared<T: PartialEq>(&self, get: impl Fn(&Host) -> T) -> Option<T> {
        let mut values = self.hosts.values().map(get);
        let first = values.next()?;
        values.all(|v| v == first).then_some(first)
    }
}

/// A host's own value of a setting: written only when the hosts do not share one.
fn own<T>(shared: &Option<T>, value: T) -> Option<T> {
    match shared {
        Some(_) => None,
        None => Some(value),
    }
}

/// `~/x` from $HOME; relative paths from the inventory's directory.
fn expand_home(p: &Path, dir: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    if p.is_absolute() {
        p.to_owned()
    } else {
        dir.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn ranges_zip_nodes_with_addresses_and_defaults_apply() {
        let (dir, path) = write(
            "[defaults]\nuser = \"root\"\nknown_hosts = \"kh\"\n\n[[host]]\nnodes = \"n[01-03]\"\naddress = \"10.0.0.[1-3]\"\nport = 2222\n",
        );
        let inv = Inventory::load(&path).unwrap();
        assert_eq!(inv.hosts.len(), 3);
        let h = &inv.hosts[&"n02".parse().unwrap()];
        assert_eq!(h.address, "10.0.0.2");
        assert_eq!(h.port, Some(2222));
        assert_eq!(h.user.as_deref(), Some("root"));
        assert_eq!(
            h.known_hosts.as_deref(),
            Some(dir.path().join("kh").as_path())
        );
        // What is written reads back the same.
        let d2 = tempfile::tempdir().unwrap();
        let p2 = d2.path().join("hosts.toml");
        std::fs::write(&p2, inv.to_toml(d2.path())).unwrap();
        assert_eq!(Inventory::load(&p2).unwrap(), inv);
    }

    #[test]
    fn mismatched_counts_are_located() {
        let (_d, path) = write("[[host]]\nnodes = \"n[1-3]\"\naddress = \"a[1-2]\"\n");
        let e = Inventory::load(&path).unwrap_err();
        assert_eq!(e.errors[0].location.line, 3);
        assert!(e.errors[0].message.contains("3 node(s) but 2 address(es)"));
    }

    #[test]
    fn shared_settings_are_written_once_and_paths_inside_the_directory_relative() {
        let dir = tempfile::tempdir().unwrap();
        let host = |node: &str, address: &str| Host {
            node: node.parse().unwrap(),
            address: address.into(),
            port: Some(22),
            user: Some("root".into()),
            identity: Some(dir.path().join("id_ed25519")),
            known_hosts: Some(dir.path().join("known_hosts")),
            jump: None,
            sudo: false,
        };
        let inv = Inventory {
            hosts: [host("n01", "172.20.0.2"), host("n02", "172.20.0.3")]
                .into_iter()
                .map(|h| (h.node.clone(), h))
                .collect(),
        };
        let text = inv.to_toml(dir.path());
        assert_eq!(
            text,
            "[defaults]\nuser = \"root\"\nport = 22\nidentity = \"id_ed25519\"\n\
             known_hosts = \"known_hosts\"\n\n[[host]]\nnodes = \"n01\"\naddress = \"172.20.0.2\"\n\n\
             [[host]]\nnodes = \"n02\"\naddress = \"172.20.0.3\"\n"
        );
        let path = dir.path().join("inventory.toml");
        std::fs::write(&path, text).unwrap();
        assert_eq!(Inventory::load(&path).unwrap(), inv);
    }

    #[test]
    fn settings_the_hosts_do_not_share_are_written_per_host() {
        let (_dir, path) = write(
            "[defaults]\nport = 2222\n\n[[host]]\nnodes = \"a\"\naddress = \"10.0.0.1\"\nuser = \"x\"\nsudo = true\n\n\
             [[host]]\nnodes = \"b\"\naddress = \"10.0.0.2\"\njump = \"gw\"\n",
        );
        let inv = Inventory::load(&path).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let text = inv.to_toml(elsewhere.path());
        assert!(text.starts_with("[defaults]\nport = 2222\n\n"), "{text}");
        assert!(text.contains("user = \"x\"\nsudo = true\n"), "{text}");
        assert!(text.contains("jump = \"gw\"\nsudo = false\n"), "{text}");
        let (_d2, p2) = write(&text);
        assert_eq!(Inventory::load(&p2).unwrap(), inv);
    }

    #[test]
    fn slurm_lists_map_in_order() {
        let nodes: Vec<NodeName> = ["n01", "n02"].iter().map(|n| n.parse().unwrap()).collect();
        let inv = Inventory::from_slurm("cn[007-009]", &nodes).unwrap();
        assert_eq!(inv.hosts[&nodes[1]].address, "cn008");
        assert!(Inventory::from_slurm("cn1", &nodes).is_err());
    }
}
