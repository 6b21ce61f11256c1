//! Nodes from the current Slurm allocation: a topology's nodes, in topology order, onto the
//! hosts of `SLURM_JOB_NODELIST`, in the order Slurm lists them. The allocation is read from
//! the environment `salloc` and `sbatch` set; each node is reached at the address Slurm itself
//! uses for it (`NodeAddr`, from `scontrol show node`, as `srun` does), which is its name
//! unless the cluster's slurm.conf says otherwise. The inventory that results is written into
//! the run directory, so that a later `orchestrate teardown` reaches the same machines even
//! after the allocation has ended.

use std::path::PathBuf;

use futures_util::future::BoxFuture;

use crate::topology::Topology;

use super::inventory::{self, Host, Inventory, MAX_HOSTS, SshSettings};
use super::source::{NodeSource, Nodes};

/// The variable Slurm sets to the allocation's hosts, e.g. `cn[001-016]`.
pub const NODELIST_VAR: &str = "SLURM_JOB_NODELIST";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllocationError {
    #[error(
        "`kind = \"slurm\"` takes its nodes from the current Slurm allocation, but \
         {NODELIST_VAR} is not set: run inside `salloc` or an `sbatch` script"
    )]
    Outside,
    #[error("{NODELIST_VAR}={list:?} is not a list of hosts: {why}")]
    Unreadable { list: String, why: String },
    #[error(
        "topology `{topology}` needs {needed} node(s) but the Slurm allocation has {given} \
         ({NODELIST_VAR}={list}): allocate at least {needed} (`salloc -N {needed}`)"
    )]
    TooSmall {
        topology: String,
        needed: usize,
        given: usize,
        list: String,
    },
}

/// The hosts of an allocation, in Slurm's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    list: String,
    hosts: Vec<String>,
}

impl Allocation {
    /// The allocation this process runs in, each host at its `NodeAddr` where `scontrol`
    /// answers (it may not: a node list set by hand, or no Slurm commands on this machine).
    pub fn from_env() -> Result<Allocation, AllocationError> {
        let mut allocation = match std::env::var(NODELIST_VAR) {
            Ok(list) if !list.trim().is_empty() => Allocation::parse(&list)?,
            _ => return Err(AllocationError::Outside),
        };
        let shown = std::process::Command::new("scontrol")
            .args(["show", "node", "--oneliner", &allocation.list])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output();
        if let Ok(out) = shown
            && out.status.success()
        {
            allocation.at_addresses(&node_addresses(&String::from_utf8_lossy(&out.stdout)));
        }
        Ok(allocation)
    }

    /// Each host whose `NodeAddr` differs from its name, at that address (checked as an
    /// inventory's address is; an address ssh would not take leaves the name).
    fn at_addresses(&mut self, addresses: &std::collections::BTreeMap<String, String>) {
        for h in &mut self.hosts {
            if let Some(addr) = addresses.get(h.as_str())
                && inventory::rules::address(addr).is_ok()
            {
                *h = addr.clone();
            }
        }
    }

    /// An allocation from its node list, expanded as inventories expand theirs; each host
    /// must be something ssh takes as an address.
    pub fn parse(list: &str) -> Result<Allocation, AllocationError> {
        let unreadable = |why: String| AllocationError::Unreadable {
            list: list.to_owned(),
            why,
        };
        let hosts = inventory::expand_host_list(list.trim(), MAX_HOSTS).map_err(unreadable)?;
        for h in &hosts {
            inventory::rules::address(h).map_err(unreadable)?;
        }
        Ok(Allocation {
            list: list.trim().to_owned(),
            hosts,
        })
    }

    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// `t`'s nodes, in topology order, on the first hosts of the allocation; hosts beyond
    /// what `t` needs stay unused.
    pub fn inventory(
        &self,
        t: &Topology,
        ssh: &SshSettings,
        sudo: bool,
    ) -> Result<Inventory, AllocationError> {
        self.fits(t)?;
        let hosts = t.nodes.iter().zip(&self.hosts).map(|(n, address)| {
            let host = Host {
                node: n.name.clone(),
                address: address.clone(),
                port: ssh.port,
                user: ssh.user.clone(),
                identity: ssh.identity.clone(),
                known_hosts: ssh.known_hosts.clone(),
                jump: ssh.jump.clone(),
                sudo,
            };
            (n.name.clone(), host)
        });
        Ok(Inventory {
            hosts: hosts.collect(),
        })
    }

    /// Whether the allocation has a host for every node of `t`.
    pub fn fits(&self, t: &Topology) -> Result<(), AllocationError> {
        if self.hosts.len() < t.nodes.len() {
            return Err(AllocationError::TooSmall {
                topology: t.name.to_string(),
                needed: t.nodes.len(),
                given: self.hosts.len(),
                list: self.list.clone(),
            });
        }
        Ok(())
    }
}

/// `NodeName` → `NodeAddr` from `scontrol show node --oneliner`: one line per node of
/// `Key=Value` words.
fn node_addresses(shown: &str) -> std::collections::BTreeMap<String, String> {
    shown
        .lines()
        .filter_map(|line| {
            let value = |key: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(key))
                    .map(str::to_owned)
            };
            Some((value("NodeName=")?, value("NodeAddr=")?))
        })
        .collect()
}

/// The machines of an allocation, reached as `ssh` says. Each topology's inventory is written
/// to `dir` as `slurm-<topology>.toml`.
pub struct SlurmAllocation {
    /// The allocation, or why there is none: undoing an earlier run needs none, only the
    /// inventories it wrote.
    pub allocation: Result<Allocation, AllocationError>,
    pub ssh: SshSettings,
    pub sudo: bool,
    pub dir: PathBuf,
}

impl NodeSource for SlurmAllocation {
    fn obtain<'a>(&'a self, t: &'a Topology) -> BoxFuture<'a, anyhow::Result<Nodes>> {
        Box::pin(async move {
            let allocation = self.allocation.as_ref().map_err(Clone::clone)?;
            let inventory = allocation.inventory(t, &self.ssh, self.sudo)?;
            let path = self.dir.join(format!("slurm-{}.toml", t.name));
            std::fs::write(&path, inventory.to_toml(&self.dir))
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
            Ok(Nodes::existing(path))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(file: &str) -> Topology {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("topologies")
            .join(file);
        crate::topology::load(&path).expect("a shipped topology loads")
    }

    #[test]
    fn nodes_take_the_hosts_in_topology_order() {
        let t = topology("single-net.toml");
        let alloc = Allocation::parse("cn[007-030]").unwrap();
        let ssh = SshSettings {
            user: Some("me".into()),
            ..Default::default()
        };
        let inv = alloc.inventory(&t, &ssh, true).unwrap();
        assert_eq!(inv.hosts.len(), t.nodes.len());
        for (i, node) in t.nodes.iter().enumerate() {
            let host = &inv.hosts[&node.name];
            assert_eq!(host.address, format!("cn{:03}", 7 + i), "{}", node.name);
            assert_eq!(host.user.as_deref(), Some("me"));
            assert!(host.sudo);
        }
    }

    #[test]
    fn lists_with_several_ranges_keep_slurms_order() {
        let alloc = Allocation::parse("gpu[3-4],cn[10-11],login1").unwrap();
        assert_eq!(
            alloc.hosts(),
            ["gpu3", "gpu4", "cn10", "cn11", "login1"].map(String::from)
        );
    }

    #[test]
    fn too_small_an_allocation_says_how_many_are_needed_and_given() {
        let t = topology("single-net.toml");
        let err = Allocation::parse("cn[1-4]")
            .unwrap()
            .inventory(&t, &SshSettings::default(), false)
            .unwrap_err();
        assert_eq!(
            err,
            AllocationError::TooSmall {
                topology: "single-net".into(),
                needed: 16,
                given: 4,
                list: "cn[1-4]".into(),
            }
        );
        let msg = err.to_string();
        assert!(
            msg.contains("needs 16 node(s)") && msg.contains("has 4"),
            "{msg}"
        );
    }

    #[test]
    fn nodes_are_reached_at_the_address_slurm_gives_them() {
        let shown = "NodeName=n1 Arch=x86_64 CoresPerSocket=1 NodeAddr=10.9.0.11 NodeHostName=n1 \
                     State=ALLOCATED\n\
                     NodeName=n2 Arch=x86_64 NodeAddr=n2 NodeHostName=n2 State=ALLOCATED\n\
                     NodeName=n3 NodeAddr=-oProxyCommand=x State=ALLOCATED\n";
        let mut a = Allocation::parse("n[1-3]").unwrap();
        a.at_addresses(&node_addresses(shown));
        // n2's address is its name; n3's would be an ssh option, so its name stays.
        assert_eq!(a.hosts(), ["10.9.0.11", "n2", "n3"]);
    }

    #[test]
    fn hosts_ssh_would_take_as_options_are_refused() {
        for bad in ["-oProxyCommand=x", "cn[1-2],-x", "cn[1-"] {
            let err = Allocation::parse(bad).unwrap_err();
            assert!(
                matches!(err, AllocationError::Unreadable { .. }),
                "{bad}: {err}"
            );
        }
    }
}
