//! Looking at and changing links inside a container's network namespace from the host, with
//! the host's own `ip` (nsenter into the namespace only): nodes are set up the same whatever
//! their image contains, and nothing here runs inside the node's shell.

use serde::Deserialize;

use crate::vcluster::cmd::Cmd;
use crate::vcluster::error::{Error, Result};

/// One link as `ip -j link show` reports it.
#[derive(Debug, Clone, Deserialize)]
pub struct Link {
    pub ifindex: u32,
    pub ifname: String,
    #[serde(default)]
    pub address: Option<String>,
    /// For a veth: the peer's ifindex (in the peer's namespace, here the host's).
    #[serde(default)]
    pub link_index: Option<u32>,
}

/// Where a command runs: the host's namespace, a container's (by its main process id), or a
/// named network namespace (`ip netns`, as a netns cluster's nodes are).
#[derive(Debug, Clone, Copy)]
pub enum Ns<'a> {
    Host,
    Pid(u32),
    Named(&'a str),
}

fn ip(ns: Ns, what: &str) -> Cmd {
    match ns {
        Ns::Host => Cmd::new("ip", what),
        // Not `ip -n`, which also unshares a mount namespace, copying the host's mounts (one
        // per named namespace: a thousand nodes made this step quadratic).
        Ns::Named(name) => Cmd::new("nsenter", what)
            .arg(format!("--net=/run/netns/{name}"))
            .arg("ip")
            .hint("nsenter (util-linux) and root are needed to set up the nodes' interfaces"),
        Ns::Pid(pid) => Cmd::new("nsenter", what)
            .args(["-t", &pid.to_string(), "-n", "ip"])
            .hint("nsenter (util-linux) and root are needed to set up the nodes' interfaces"),
    }
}

pub fn links(ns: Ns) -> Result<Vec<Link>> {
    let cmd = ip(ns, "listing network interfaces").args(["-j", "link", "show"]);
    let out = cmd.run()?;
    serde_json::from_str(&out).map_err(|e| Error::Unexpected {
        what: "listing network interfaces".into(),
        command: cmd.display(),
        detail: format!("{e}; iproute2 with JSON output (-j) is needed"),
    })
}

/// Runs `ip -batch -`: all lines or, at the first failing one, an error naming it.
pub fn ip_batch(ns: Ns, what: &str, lines: &[String]) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut script = lines.join("\n");
    script.push('\n');
    ip(ns, what)
        .args(["-batch", "-"])
        .stdin(script)
        .run()
        .map(drop)
}

/// Turns TCP segmentation offload, GSO and transmit checksum offload off on a container's
/// interfaces, with the image's own ethtool (the host may have none), so that every packet
/// leaving a node is one frame with its checksums filled in (the medium emulator copies
/// frames as bytes; a checksum left to the hardware would arrive wrong).
pub fn offloads_off(pid: u32, ifnames: &[&str], what: &str) -> Result<()> {
    if ifnames.is_empty() {
        return Ok(());
    }
    let script = ifnames
        .iter()
        .map(|i| format!("ethtool -K {i} tso off gso off tx off"))
        .collect::<Vec<_>>()
        .join(" && ");
    Cmd::new("nsenter", what)
        .args(["-t", &pid.to_string(), "-n", "-m", "sh", "-c", &script])
        .run()
        .map(drop)
}

/// Sets Receive Packet Steering on a container's interfaces: frames written into them are
/// received (the node's IP and TCP input) on the CPUs of `mask` (an `rps_cpus` mask), not on
/// the writer's, which for an emulated segment is the medium emulator's event thread.
///
/// A container's own sysfs is read-only, and a new sysfs mount in its network namespace
/// shares that read-only superblock; so the host's shell, in the container's network
/// namespace and a private mount namespace of its own, mounts sysfs, remounts it writable
/// and writes the masks. The container's own mount stays read-only.
pub fn steer_receive(pid: u32, ifnames: &[&str], mask: &str, what: &str) -> Result<()> {
    if ifnames.is_empty() {
        return Ok(());
    }
    let writes = ifnames
        .iter()
        .map(|i| {
            format!("for q in /sys/class/net/{i}/queues/rx-*; do echo {mask} > $q/rps_cpus; done")
        })
        .collect::<Vec<_>>()
        .join(" && ");
    let script = format!("mount -t sysfs sysfs /sys && mount -o remount,rw /sys && {writes}");
    Cmd::new("nsenter", what)
        .args([
            "-t",
            &pid.to_string(),
            "-n",
            "unshare",
            "-m",
            "--propagation",
            "private",
        ])
        .args(["sh", "-c", &script])
        .hint(
            "nsenter and unshare (util-linux) and root are needed to steer the nodes' receive work",
        )
        .run()
        .map(drop)
}

/// What one container's interfaces should become.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// MAC address docker gave the endpoint (how the interface is recognised).
    pub mac: String,
    pub name: String,
    /// Experiment interfaces lose docker's address; the management one keeps it.
    pub flush: bool,
    /// Switch ports are enslaved to the switch's bridge.
    pub bridge: Option<String>,
}

/// The `ip -batch` lines that rename a container's interfaces (through temporary names, so
/// that swapping eth1 and eth2 works), drop their addresses, bridge switch ports and bring
/// everything up. Returns the lines and, per wanted interface, the host-side peer ifindex.
pub fn rename_plan(current: &[Link], wanted: &[Wanted]) -> Result<(Vec<String>, Vec<u32>)> {
    let mut lines = Vec::new();
    let mut tail = Vec::new();
    let mut peers = Vec::new();
    let mut bridges: Vec<&str> = Vec::new();
    for (k, w) in wanted.iter().enumerate() {
        let link = current
            .iter()
            .find(|l| {
                l.address
                    .as_deref()
                    .is_some_and(|a| a.eq_ignore_ascii_case(&w.mac))
            })
            .ok_or_else(|| Error::Unexpected {
                what: format!("finding the interface for {}", w.name),
                command: "ip -j link show".into(),
                detail: format!("no interface has MAC {} (docker's endpoint)", w.mac),
            })?;
        let peer = link.link_index.ok_or_else(|| Error::Unexpected {
            what: format!("finding the host side of {}", w.name),
            command: "ip -j link show".into(),
            detail: format!("{} is not a veth (no peer index)", link.ifname),
        })?;
        peers.push(peer);
        let tmp = format!("ocrn{k}");
        lines.push(format!("link set dev {} down", link.ifname));
        lines.push(format!("link set dev {} name {tmp}", link.ifname));
        tail.push(format!("link set dev {tmp} name {}", w.name));
        if w.flush {
            tail.push(format!("addr flush dev {}", w.name));
        }
        if let Some(br) = &w.bridge {
            if !bridges.contains(&br.as_str()) {
                lines.push(format!("link add {br} type bridge"));
                bridges.push(br);
            }
            tail.push(format!("link set dev {} master {br}", w.name));
        }
        tail.push(format!("link set dev {} up", w.name));
    }
    for br in bridges {
        tail.push(format!("link set dev {br} up"));
    }
    lines.extend(tail);
    Ok((lines, peers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(i: u32, name: &str, mac: &str, peer: u32) -> Link {
        Link {
            ifindex: i,
            ifname: name.into(),
            address: Some(mac.into()),
            link_index: Some(peer),
        }
    }

    #[test]
    fn renames_by_mac_through_temporary_names() {
        let cur = [
            link(2, "eth0", "02:42:ac:00:00:02", 40),
            link(3, "eth1", "02:42:ac:00:00:03", 41),
            link(4, "eth2", "02:42:ac:00:00:04", 42),
        ];
        let wanted = [
            Wanted {
                mac: "02:42:AC:00:00:03".into(),
                name: "mgmt0".into(),
                flush: false,
                bridge: None,
            },
            Wanted {
                mac: "02:42:ac:00:00:04".into(),
                name: "eth1".into(),
                flush: true,
                bridge: None,
            },
            Wanted {
                mac: "02:42:ac:00:00:02".into(),
                name: "eth2".into(),
                flush: true,
                bridge: None,
            },
        ];
        let (lines, peers) = rename_plan(&cur, &wanted).unwrap();
        assert_eq!(peers, [41, 42, 40]);
        let first_final = lines.iter().position(|l| l.ends_with("name eth1")).unwrap();
        let last_tmp = lines.iter().rposition(|l| l.contains("name ocrn")).unwrap();
        assert!(last_tmp < first_final, "{lines:#?}");
        assert!(lines.contains(&"addr flush dev eth2".to_string()));
        assert!(!lines.contains(&"addr flush dev mgmt0".to_string()));
    }

    #[test]
    fn switch_ports_join_one_bridge() {
        let cur = [
            link(2, "eth0", "aa:00:00:00:00:01", 7),
            link(3, "eth1", "aa:00:00:00:00:02", 8),
        ];
        let wanted: Vec<_> = cur
            .iter()
            .enumerate()
            .map(|(i, l)| Wanted {
                mac: l.address.clone().unwrap(),
                name: format!("port{i}"),
                flush: true,
                bridge: Some("br0".into()),
            })
            .collect();
        let (lines, _) = rename_plan(&cur, &wanted).unwrap();
        assert_eq!(
            lines
                .iter()
                .filter(|l| *l == "link add br0 type bridge")
                .count(),
            1
        );
        assert!(lines.contains(&"link set dev port1 master br0".to_string()));
        assert_eq!(lines.last().unwrap(), "link set dev br0 up");
    }

    #[test]
    fn a_missing_interface_is_an_error() {
        let cur = [link(2, "eth0", "aa:00:00:00:00:01", 7)];
        let wanted = [Wanted {
            mac: "bb:00:00:00:00:01".into(),
            name: "eth1".into(),
            flush: true,
            bridge: None,
        }];
        assert!(
            rename_plan(&cur, &wanted)
                .unwrap_err()
                .to_string()
                .contains("no interface has MAC")
        );
    }
}
