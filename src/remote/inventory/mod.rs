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
//! Paths are relative to the inventory file; `~/` is the user's home. The user's
//! `~/.ssh/config`, agent and jump hosts apply as with plain `ssh`. A Slurm allocation's
//! inventory is made, not read: see [`crate::remote::slurm`].
//!
//! [`Inventory::load`] checks everything that can be checked without a network: the layout,
//! host lists of at most [`MAX_HOSTS`] names that pair nodes and addresses one to one, each node
//! once, and every value by the rules of [`rules`]; every problem is reported, each at the value
//! at fault. That the inventory covers an experiment's nodes is checked against the experiment
//! (`plan::inventory`).

mod file;
mod ranges;
pub mod rules;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::spec::{NodeName, SourceFile, SpecError, SpecErrors};

pub use file::SettingsSpec;

/// The JSON Schema of the inventory file, for editors.
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(InventorySpec)).expect("a schema is JSON")
}
use file::{Defaults, HostSpec, InventorySpec, unplaced};
pub use ranges::{MAX_HOSTS, expand as expand_host_list};

/// At most this many problems are reported from one file; the rest are counted.
const MAX_ERRORS: usize = 50;

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

/// An inventory with the file it was read from and where each node is listed in it, for
/// messages about it that point into the file.
#[derive(Debug, Clone)]
pub struct LocatedInventory {
    pub inventory: Inventory,
    pub source: SourceFile,
    listed_at: BTreeMap<NodeName, Range<usize>>,
}

impl LocatedInventory {
    /// Reads and checks an inventory file; every problem is reported, at file:line:column.
    pub fn load(path: &Path) -> Result<LocatedInventory, SpecErrors> {
        let source = SourceFile::read(path)?;
        let spec: InventorySpec = source.parse()?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut check = Check {
            source: &source,
            dir,
            errors: Vec::new(),
        };
        let defaults = check.settings(spec.defaults.settings());
        let mut hosts = BTreeMap::new();
        let mut listed_at: BTreeMap<NodeName, Range<usize>> = BTreeMap::new();
        for h in &spec.host {
            let own = check.settings(h.settings());
            let room = MAX_HOSTS.saturating_sub(listed_at.len() as u64);
            let (nodes, addresses) = check.listing(h, room);
            check.not_listed_before(h, &nodes, &listed_at);
            for node in &nodes {
                listed_at.entry(node.clone()).or_insert(h.nodes.span());
            }
            for (node, address) in nodes.into_iter().zip(addresses.unwrap_or_default()) {
                hosts.entry(node.clone()).or_insert_with(|| Host {
                    node,
                    address,
                    port: own.port.or(defaults.port),
                    user: own.user.clone().or_else(|| defaults.user.clone()),
                    identity: own.identity.clone().or_else(|| defaults.identity.clone()),
                    known_hosts: own
                        .known_hosts
                        .clone()
                        .or_else(|| defaults.known_hosts.clone()),
                    jump: own.jump.clone().or_else(|| defaults.jump.clone()),
                    sudo: h.sudo.unwrap_or(spec.defaults.sudo),
                });
            }
        }
        let errors = capped(check.errors);
        if !errors.is_empty() {
            return Err(SpecErrors { errors });
        }
        Ok(LocatedInventory {
            inventory: Inventory { hosts },
            source,
            listed_at,
        })
    }

    /// One message per `[[host]]` that lists nodes `pick` takes, at its `nodes`, saying
    /// what `say` says of them.
    pub fn notes_on_unlisted(
        &self,
        pick: impl Fn(&NodeName) -> bool,
        say: impl Fn(&[&NodeName]) -> String,
    ) -> Vec<SpecError> {
        let mut by_listing: BTreeMap<(usize, usize), Vec<&NodeName>> = BTreeMap::new();
        for (node, span) in &self.listed_at {
            if pick(node) {
                by_listing
                    .entry((span.start, span.end))
                    .or_default()
                    .push(node);
            }
        }
        by_listing
            .into_iter()
            .map(|((start, end), nodes)| self.source.error(start..end, say(&nodes), None))
            .collect()
    }
}

/// The first [`MAX_ERRORS`] problems in file order, the last counting the others.
fn capped(mut errors: Vec<SpecError>) -> Vec<SpecError> {
    errors.sort_by_key(|e| (e.location.line, e.location.column));
    if errors.len() > MAX_ERRORS {
        let more = errors.len() - MAX_ERRORS;
        errors.truncate(MAX_ERRORS);
        let last = errors.last_mut().expect("MAX_ERRORS > 0");
        last.message += &format!(" (and {more} more problem(s) not shown)");
    }
    errors
}

/// How to reach hosts over SSH, as one table sets it, each value checked where it is written
/// (a refused one is left out: the load fails anyway). Unset, ssh's own defaults apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SshSettings {
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity: Option<PathBuf>,
    pub known_hosts: Option<PathBuf>,
    pub jump: Option<String>,
}

/// SSH settings written in another file (an experiment's `[cluster]` table), checked by the
/// rules an inventory's are: paths relative to `dir`, every problem located in `source`.
pub fn ssh_settings(
    source: &SourceFile,
    dir: &Path,
    spec: SettingsSpec<'_>,
) -> Result<SshSettings, Vec<SpecError>> {
    let mut check = Check {
        source,
        dir,
        errors: Vec::new(),
    };
    let settings = check.settings(spec);
    if check.errors.is_empty() {
        Ok(settings)
    } else {
        Err(check.errors)
    }
}

/// The checks of one file, collecting every problem.
struct Check<'a> {
    source: &'a SourceFile,
    dir: &'a Path,
    errors: Vec<SpecError>,
}

impl Check<'_> {
    fn push(&mut self, span: Range<usize>, message: impl Into<String>) {
        self.errors.push(self.source.error(span, message, None));
    }

    /// `Some(value)` if `check` takes it, else `None` with the problem recorded at `span`.
    fn take<T>(&mut self, span: Range<usize>, checked: Result<T, String>) -> Option<T> {
        checked.map_err(|e| self.push(span, e)).ok()
    }

    fn settings(&mut self, spec: SettingsSpec<'_>) -> SshSettings {
        let name = |v: &Spanned<String>, rule: fn(&str) -> Result<(), String>| {
            rule(v.get_ref()).map(|()| v.get_ref().clone())
        };
        SshSettings {
            user: spec
                .user
                .and_then(|v| self.take(v.span(), name(v, rules::user))),
            port: spec
                .port
                .and_then(|v| self.take(v.span(), rules::port(*v.get_ref()))),
            identity: spec.identity.and_then(|v| {
                let file = self.file(v, "identity");
                self.take(v.span(), file)
            }),
            known_hosts: spec.known_hosts.and_then(|v| {
                let file = self.file(v, "known_hosts");
                self.take(v.span(), file)
            }),
            jump: spec
                .jump
                .and_then(|v| self.take(v.span(), name(v, rules::jump))),
        }
    }

    /// A file setting resolved against the inventory's directory and `~`, and readable.
    fn file(&self, v: &Spanned<String>, key: &str) -> Result<PathBuf, String> {
        rules::ssh_path(v.get_ref(), key)?;
        let path = expand_home(Path::new(v.get_ref()), self.dir);
        rules::ssh_path(&path.to_string_lossy(), key)?;
        rules::readable_file(&path, key)?;
        Ok(path)
    }

    /// One `[[host]]`'s nodes, and its addresses if there is one for each node, in order
    /// (else the problem is recorded). At most `room` nodes.
    fn listing(&mut self, h: &HostSpec, room: u64) -> (Vec<NodeName>, Option<Vec<String>>) {
        let nodes = self.expanded(&h.nodes, room, |n| n.parse::<NodeName>().map_err(|e| e.0));
        // Addresses are bounded alone: their count is held against the nodes' next.
        let addresses = self.expanded(&h.address, MAX_HOSTS, |a| {
            rules::address(a).map(|()| a.to_owned())
        });
        let Some(nodes) = nodes else {
            return (Vec::new(), None);
        };
        match addresses {
            Some(a) if a.len() != nodes.len() => {
                self.push(
                    h.address.span(),
                    format!(
                        "{} node(s) but {} address(es): give one address per node, in the same order",
                        nodes.len(),
                        a.len()
                    ),
                );
                (nodes, None)
            }
            addresses => (nodes, addresses),
        }
    }

    /// A host list expanded and each name checked; the first problem is recorded.
    fn expanded<T>(
        &mut self,
        list: &Spanned<String>,
        room: u64,
        check: impl Fn(&str) -> Result<T, String>,
    ) -> Option<Vec<T>> {
        let checked = ranges::expand(list.get_ref(), room)
            .and_then(|names| names.iter().map(|n| check(n)).collect());
        self.take(list.span(), checked)
    }

    /// Records a problem if this `[[host]]` names a node an earlier one did.
    fn not_listed_before(
        &mut self,
        h: &HostSpec,
        nodes: &[NodeName],
        listed_at: &BTreeMap<NodeName, Range<usize>>,
    ) {
        let again: Vec<(&NodeName, &Range<usize>)> = nodes
            .iter()
            .filter_map(|n| listed_at.get_key_value(n))
            .collect();
        if let Some((first, span)) = again.first() {
            let line = self.source.error((*span).clone(), "", None).location.line;
            let others = match again.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            self.push(
                h.nodes.span(),
                format!("node `{first}`{others} is listed twice: already at line {line}"),
            );
        }
    }
}

impl Inventory {
    /// Reads and checks an inventory file; every problem is reported, at file:line:column.
    pub fn load(path: &Path) -> Result<Inventory, SpecErrors> {
        LocatedInventory::load(path).map(|l| l.inventory)
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
                    .unwrap_or(p)
                    .to_string_lossy()
                    .into_owned()
            })
        };
        let user = self.shared(|h| h.user.clone());
        let port = self.shared(|h| h.port.map(i64::from));
        let identity = self.shared(|h| relative(h.identity.as_ref()));
        let known_hosts = self.shared(|h| relative(h.known_hosts.as_ref()));
        let jump = self.shared(|h| h.jump.clone());
        let sudo = self.shared(|h| h.sudo);
        let file = InventorySpec {
            host: self
                .hosts
                .values()
                .map(|h| HostSpec {
                    nodes: unplaced(h.node.to_string()),
                    address: unplaced(h.address.clone()),
                    user: placed(own(&user, h.user.clone())),
                    port: placed(own(&port, h.port.map(i64::from))),
                    identity: placed(own(&identity, relative(h.identity.as_ref()))),
                    known_hosts: placed(own(&known_hosts, relative(h.known_hosts.as_ref()))),
                    jump: placed(own(&jump, h.jump.clone())),
                    sudo: own(&sudo, h.sudo),
                })
                .collect(),
            defaults: Defaults {
                user: placed(user),
                port: placed(port),
                identity: placed(identity),
                known_hosts: placed(known_hosts),
                jump: placed(jump),
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

/// A setting to write, if there is one.
fn placed<T>(value: Option<Option<T>>) -> Option<Spanned<T>> {
    value.flatten().map(unplaced)
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
        std::fs::write(dir.path().join("kh"), "").unwrap();
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
        std::fs::write(d2.path().join("kh"), "").unwrap();
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
        for f in ["id_ed25519", "known_hosts"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
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
}
