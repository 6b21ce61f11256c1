//! The cluster's record of what `up` created on the host, written before each thing is
//! created, so that `down` (or a second `down` after a failed one) can undo all of it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::names::ClusterName;
use super::netns::record::NetnsRecord;
use super::vm::record::VmRecord;
use super::wires::{Wiring, veth};

/// What a cluster's nodes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Docker containers of the node image (sshd, iproute2, tc and the worker in it).
    #[default]
    Docker,
    /// Network namespaces on this host, each with its own sshd, hostname and private /run,
    /// /tmp and /var/tmp, running this host's programs: no image, no docker engine.
    Netns,
    /// QEMU guests booting Debian's kernel, one in each namespace of a netns cluster, their
    /// NICs spliced to its interfaces: a kernel of each node's own (its bonding driver), this
    /// host's programs read-only.
    Vm,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Docker => "docker",
            Kind::Netns => "netns",
            Kind::Vm => "vm",
        }
    }

    /// Whether the nodes are namespaces of this host (a VM cluster's guests run in them).
    pub fn is_netns(self) -> bool {
        matches!(self, Kind::Netns | Kind::Vm)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub cluster: String,
    /// What the nodes are; a state file written before netns clusters existed is docker's.
    #[serde(default)]
    pub kind: Kind,
    /// The docker compose project name.
    pub project: String,
    /// The node image the containers run.
    pub image: String,
    /// The topology or experiment file the cluster was made from.
    pub source: String,
    pub created_unix_s: u64,
    /// Host ifb devices made for link emulation (they outlive the containers; the qdiscs on
    /// the containers' host-side veths do not).
    pub ifbs: Vec<String>,
    /// Host-side names of the tool's wires (veth pairs), both ends' (see
    /// [`super::wires::veth`]). Each pair goes with its container; one left on the host by an
    /// `up` that died while making it is removed by `down`.
    #[serde(default)]
    pub wires: Vec<String>,
    /// The medium emulator's process, while it runs.
    #[serde(default)]
    pub medium_pid: Option<u32>,
    /// The wires, as built: `status` and `verify` read them from here.
    pub wiring: Wiring,
    /// A netns cluster's namespaces, management network and sshd processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<NetnsRecord>,
    /// A VM cluster's kernel and guests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmRecord>,
}

impl State {
    /// A new cluster's state, written before anything is made: its wires are named already,
    /// so one an `up` dies in the middle of making is found.
    pub fn planned(
        c: &ClusterName,
        kind: Kind,
        image: String,
        source: String,
        wiring: &Wiring,
    ) -> State {
        State {
            cluster: c.to_string(),
            kind,
            project: c.project(),
            image,
            source,
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            ifbs: Vec::new(),
            wires: veth::host_names(&veth::plan(c, wiring)),
            medium_pid: None,
            wiring: wiring.clone(),
            netns: None,
            vm: None,
        }
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = toml::to_string(self).map_err(|e| Error::File {
            what: "writing the cluster state".into(),
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(
            &tmp,
            format!("# Written by orchestrate; `cluster down` reads it.\n{text}"),
        )
        .map_err(|e| Error::io("writing the cluster state", &tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io("writing the cluster state", path, e))
    }

    /// `Ok(None)` when the cluster has no state file (never made, or already removed).
    pub fn load(path: &Path) -> Result<Option<State>> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("reading the cluster state", path, e)),
        };
        toml::from_str(&text).map(Some).map_err(|e| Error::File {
            what: "reading the cluster state".into(),
            path: path.to_owned(),
            detail: format!(
                "{e}; if the file is damaged, `cluster down` still finds the \
                             cluster's containers, networks and ifbs by its name"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vcluster::wires::mesh;

    #[test]
    fn round_trips() {
        let s = State {
            cluster: "m".into(),
            kind: Kind::Docker,
            project: "orchestrate-m".into(),
            image: "orchestrate-node:abc".into(),
            source: "topologies/switched-mesh-4x4.toml".into(),
            created_unix_s: 1,
            medium_pid: Some(4242),
            ifbs: vec!["oc123456s0".into()],
            wires: vec!["oc12345w0".into(), "oc12345x0".into()],
            wiring: mesh(true),
            netns: None,
            vm: None,
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("state.toml");
        assert_eq!(State::load(&p).unwrap(), None);
        s.save(&p).unwrap();
        assert_eq!(State::load(&p).unwrap(), Some(s.clone()));

        // A file written before `kind` existed is a docker cluster's.
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("kind = \"docker\""), "{text}");
        std::fs::write(&p, text.replace("kind = \"docker\"\n", "")).unwrap();
        assert_eq!(State::load(&p).unwrap().unwrap().kind, Kind::Docker);

        // A netns cluster's record comes back whole.
        let c = crate::vcluster::names::ClusterName::parse("m").unwrap();
        let netns = s.clone();
        let netns = State {
            kind: Kind::Netns,
            netns: Some(crate::vcluster::netns::record::sample(&c, &netns.wiring)),
            ..netns
        };
        netns.save(&p).unwrap();
        assert_eq!(State::load(&p).unwrap(), Some(netns));
    }
}
