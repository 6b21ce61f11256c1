//! Names of everything a cluster creates, derived from the cluster's name alone, so that
//! `down` can find all of it even when the cluster's directory is gone.

use std::fmt;

use sha2::{Digest, Sha256};

use super::error::{Error, Result};

/// Docker label on every container and network of a cluster; its value is the cluster name.
pub const LABEL_CLUSTER: &str = "org.orchestrate.cluster";
/// Docker label saying what a container is: `node` or `switch`.
pub const LABEL_ROLE: &str = "org.orchestrate.role";
/// Docker label with the logical name of the node or switch a container plays.
pub const LABEL_NAME: &str = "org.orchestrate.name";

/// The management interface's name inside every node. The topology's interface names are
/// all free for its experiment interfaces, except this one (and `lo`).
pub const MGMT_IFNAME: &str = "mgmt0";

/// A cluster's name: short and plain, because it becomes part of docker project, container
/// and network names and (hashed) of host interface names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterName(String);

impl ClusterName {
    pub fn parse(s: &str) -> Result<ClusterName> {
        let ok = (1..=24).contains(&s.len())
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if ok {
            Ok(ClusterName(s.to_owned()))
        } else {
            Err(Error::ClusterName(s.to_owned()))
        }
    }

    /// A cluster name made from a topology or file name: lowercased, other characters
    /// replaced by '-', cut to length.
    pub fn from_label(label: &str) -> Result<ClusterName> {
        let mut s: String = label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        s = s.trim_matches('-').to_owned();
        if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
            s = format!("c-{s}");
        }
        s.truncate(24);
        ClusterName::parse(s.trim_end_matches('-'))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The docker compose project name.
    pub fn project(&self) -> String {
        format!("orchestrate-{}", self.0)
    }

    /// Five hex digits of the name's SHA-256: host interface names have only 15 bytes, and
    /// `oc` + 5 + `s999p999` just fits.
    pub fn short_id(&self) -> String {
        let digest = Sha256::digest(self.0.as_bytes());
        let mut hex: String = digest[..3].iter().map(|b| format!("{b:02x}")).collect();
        hex.truncate(5);
        hex
    }

    /// What every cluster's host interface (ifb) names begin with.
    pub const IFB_MARK: &str = "oc";

    /// Prefix of every host interface (ifb) the cluster creates: `oc` + short id.
    pub fn ifb_prefix(&self) -> String {
        format!("{}{}", Self::IFB_MARK, self.short_id())
    }

    /// Whether `ifname` has the form of some cluster's ifb ([`Self::shared_ifb`],
    /// [`Self::port_ifb`]): `oc`, five hex digits, `s` and a number, maybe `p` and a number.
    pub fn is_cluster_ifb(ifname: &str) -> bool {
        let Some(rest) = ifname.strip_prefix(Self::IFB_MARK) else {
            return false;
        };
        let (id, rest) = rest.split_at_checked(5).unwrap_or(("", ""));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let Some(ports) = rest.strip_prefix('s') else {
            return false;
        };
        let ports_ok = match ports.split_once('p') {
            Some((segment, port)) => digits(segment) && digits(port),
            None => digits(ports),
        };
        id.len() == 5 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) && ports_ok
    }

    /// The ifb that carries all traffic of shared segment number `segment`.
    pub fn shared_ifb(&self, segment: usize) -> String {
        format!("{}s{segment}", self.ifb_prefix())
    }

    /// The ifb that carries traffic entering switched segment `segment` from port `port`.
    pub fn port_ifb(&self, segment: usize, port: usize) -> String {
        format!("{}s{segment}p{port}", self.ifb_prefix())
    }

    /// The host end of the tool's wire number `wire` (a veth pair; the other end is a
    /// node's or switch's port): `oc` + short id + `w` + number.
    pub fn wire_end(&self, wire: usize) -> String {
        format!("{}w{wire}", self.ifb_prefix())
    }

    /// The name the inside end of wire number `wire` has on the host, for the moment between
    /// its making and its move into its node.
    pub fn wire_staging(&self, wire: usize) -> String {
        format!("{}x{wire}", self.ifb_prefix())
    }

    /// Whether `ifname` is one of this cluster's wire ends ([`Self::wire_end`],
    /// [`Self::wire_staging`]).
    pub fn owns_wire(&self, ifname: &str) -> bool {
        ifname
            .strip_prefix(&self.ifb_prefix())
            .and_then(|rest| rest.strip_prefix('w').or_else(|| rest.strip_prefix('x')))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }

    /// Whether `ifname` has the form of some cluster's wire end: `oc`, five hex digits, `w`
    /// or `x` and a number.
    pub fn is_cluster_wire(ifname: &str) -> bool {
        let Some(rest) = ifname.strip_prefix(Self::IFB_MARK) else {
            return false;
        };
        let Some((id, rest)) = rest.split_at_checked(5) else {
            return false;
        };
        let number = rest.strip_prefix('w').or_else(|| rest.strip_prefix('x'));
        id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            && number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }

    /// The network namespace of member `k` of a netns cluster (its nodes numbered first, then
    /// its switches): `oc` + short id + `n` + number, so that `down --all` finds it by name.
    pub fn namespace(&self, k: usize) -> String {
        format!("{}n{k}", self.ifb_prefix())
    }

    /// Host bridge number `j` of a netns cluster's management network: `oc` + short id +
    /// `b`, and the number after the first (a bridge takes at most 1023 ports).
    pub fn mgmt_bridge(&self, j: usize) -> String {
        match j {
            0 => format!("{}b", self.ifb_prefix()),
            j => format!("{}b{j}", self.ifb_prefix()),
        }
    }

    /// The host end of node `k`'s management veth in a netns cluster (its other end is the
    /// node's `mgmt0`): `oc` + short id + `m` + number.
    pub fn mgmt_end(&self, k: usize) -> String {
        format!("{}m{k}", self.ifb_prefix())
    }

    /// Whether `name` is one of this cluster's network namespaces ([`Self::namespace`]).
    pub fn owns_namespace(&self, name: &str) -> bool {
        name.strip_prefix(&self.ifb_prefix())
            .and_then(|rest| rest.strip_prefix('n'))
            .is_some_and(all_digits)
    }

    /// Whether `ifname` is one of this cluster's management bridges or veths.
    pub fn owns_mgmt_link(&self, ifname: &str) -> bool {
        ifname
            .strip_prefix(&self.ifb_prefix())
            .is_some_and(is_mgmt_suffix)
    }

    /// Whether `name` has the form of some cluster's network namespace: `oc`, five hex
    /// digits, `n` and a number.
    pub fn is_cluster_namespace(name: &str) -> bool {
        cluster_suffix(name)
            .and_then(|rest| rest.strip_prefix('n'))
            .is_some_and(all_digits)
    }

    /// Whether `ifname` has the form of some cluster's management bridge or veth: `oc`, five
    /// hex digits, then `b`, or `m` and a number.
    pub fn is_cluster_mgmt_link(ifname: &str) -> bool {
        cluster_suffix(ifname).is_some_and(is_mgmt_suffix)
    }

    pub fn container_name(&self, service: &str) -> String {
        format!("{}-{service}", self.project())
    }

    pub fn network_name(&self, key: &str) -> String {
        format!("{}-{key}", self.project())
    }
}

/// What follows `oc` and five lowercase hex digits in `name`, if it starts so.
fn cluster_suffix(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(ClusterName::IFB_MARK)?;
    let (id, rest) = rest.split_at_checked(5)?;
    id.bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        .then_some(rest)
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `b`, maybe with a number (a management bridge), or `m` and a number (a management veth's
/// host end).
fn is_mgmt_suffix(rest: &str) -> bool {
    rest.strip_prefix('b')
        .is_some_and(|n| n.is_empty() || all_digits(n))
        || rest.strip_prefix('m').is_some_and(all_digits)
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clusters_ifbs_are_recognised_and_nothing_else_is() {
        let c = ClusterName::parse("mesh-4x4").unwrap();
        assert!(ClusterName::is_cluster_ifb(&c.shared_ifb(3)));
        assert!(ClusterName::is_cluster_ifb(&c.port_ifb(12, 140)));
        for other in [
            "ocabcde",
            "ocabcdes",
            "ocabcdes1p",
            "ocABCDEs1",
            "ocabcdxs1",
            "ocabcdes1x",
            "eth0",
            "oc12345s1p2p3",
            "ifb0",
        ] {
            assert!(
                !ClusterName::is_cluster_ifb(other),
                "{other} taken for a cluster's"
            );
        }
    }

    #[test]
    fn a_clusters_wires_are_its_own() {
        let c = ClusterName::parse("mesh-4x4").unwrap();
        let other = ClusterName::parse("mesh-8x8").unwrap();
        for name in [c.wire_end(0), c.wire_end(143), c.wire_staging(7)] {
            assert!(c.owns_wire(&name), "{name}");
            assert!(
                !other.owns_wire(&name),
                "{name} taken for another cluster's"
            );
            assert!(ClusterName::is_cluster_wire(&name), "{name}");
            assert!(
                !ClusterName::is_cluster_ifb(&name),
                "{name} taken for an ifb"
            );
        }
        for not in [
            c.shared_ifb(1),
            c.port_ifb(1, 2),
            format!("{}w", c.ifb_prefix()),
        ] {
            assert!(!c.owns_wire(&not), "{not}");
            assert!(!ClusterName::is_cluster_wire(&not), "{not}");
        }
        assert!(!ClusterName::is_cluster_wire("ocABCDEw1"));
        assert!(!ClusterName::is_cluster_wire("eth0"));
    }

    #[test]
    fn a_netns_clusters_namespaces_and_management_links_are_its_own() {
        let c = ClusterName::parse("mesh-4x4").unwrap();
        let other = ClusterName::parse("mesh-8x8").unwrap();
        for ns in [c.namespace(0), c.namespace(1023)] {
            assert!(c.owns_namespace(&ns), "{ns}");
            assert!(!other.owns_namespace(&ns), "{ns}");
            assert!(ClusterName::is_cluster_namespace(&ns), "{ns}");
            assert!(!ClusterName::is_cluster_mgmt_link(&ns), "{ns}");
        }
        for link in [
            c.mgmt_bridge(0),
            c.mgmt_bridge(3),
            c.mgmt_end(0),
            c.mgmt_end(4095),
        ] {
            assert!(c.owns_mgmt_link(&link), "{link}");
            assert!(!other.owns_mgmt_link(&link), "{link}");
            assert!(ClusterName::is_cluster_mgmt_link(&link), "{link}");
            // Neither a wire nor an ifb: the other sweeps of `down --all` leave it alone.
            assert!(!ClusterName::is_cluster_wire(&link), "{link}");
            assert!(!ClusterName::is_cluster_ifb(&link), "{link}");
            assert!(link.len() <= 15, "{link}");
        }
        for not in [
            c.wire_end(1),
            c.shared_ifb(1),
            format!("{}m", c.ifb_prefix()),
            format!("{}n", c.ifb_prefix()),
            format!("{}bb", c.ifb_prefix()),
            format!("{}b1x", c.ifb_prefix()),
            "ocABCDEn1".to_string(),
            "eth0".to_string(),
        ] {
            assert!(!c.owns_mgmt_link(&not), "{not}");
            assert!(!c.owns_namespace(&not), "{not}");
            assert!(!ClusterName::is_cluster_namespace(&not), "{not}");
            assert!(!ClusterName::is_cluster_mgmt_link(&not), "{not}");
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(ClusterName::parse("mesh-4x4").is_ok());
        for bad in [
            "",
            "Mesh",
            "4mesh",
            "a b",
            "a_b",
            "abcdefghijklmnopqrstuvwxy",
        ] {
            assert!(ClusterName::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn labels_become_names() {
        let n = ClusterName::from_label("routed-mesh-4x4").unwrap();
        assert_eq!(n.as_str(), "routed-mesh-4x4");
        assert_eq!(
            ClusterName::from_label("My_Topo.v2").unwrap().as_str(),
            "my-topo-v2"
        );
        assert_eq!(
            ClusterName::from_label("16nodes").unwrap().as_str(),
            "c-16nodes"
        );
    }

    #[test]
    fn host_interface_names_fit_ifnamsiz() {
        let n = ClusterName::parse("abcdefghijklmnopqrstuvwx").unwrap();
        assert!(n.port_ifb(999, 999).len() <= 15);
        // Ten million wires: more than any cluster this machine could hold.
        assert!(n.wire_end(9_999_999).len() <= 15);
        assert!(n.wire_staging(9_999_999).len() <= 15);
        assert!(n.port_ifb(0, 0).starts_with(&n.ifb_prefix()));
        assert_ne!(
            ClusterName::parse("a").unwrap().short_id(),
            ClusterName::parse("b").unwrap().short_id()
        );
    }
}
