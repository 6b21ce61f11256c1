//! Link emulation on the host, outside the nodes' namespaces, so that nothing an experiment
//! runs on a node can undo it.
//!
//! A segment shaped here (`emulation = "rate"`) is a docker bridge; its ports are the
//! host-side veths of the containers attached to it (nodes, and switches' ports). The medium
//! emulator's segments are the tool's own veth pairs ([`super::veth`]) and get nothing here.
//!
//! - **Shared** (a bus or hub, like 10BASE2): every port's ingress (traffic *from* the
//!   container) is redirected to ONE ifb per segment, shaped by a tbf at the segment's rate.
//!   After the ifb the frame re-enters the bridge and is delivered as usual. Each frame on
//!   the segment, data and ACKs alike, passes that one queue once: the segment's capacity is
//!   shared by all stations and both directions, as on a half-duplex bus.
//! - **Switched**: each port gets the rate in each direction: tbf on the host veth's egress
//!   (towards the node) and an ifb with a tbf per port for its ingress (from the node).
//! - **Switches** are containers with a Linux bridge over one port on each joined segment. A
//!   frame from one bus to another is forwarded by the switch and is shaped by each bus it
//!   crosses (the switch's port on a bus is a station on that bus).
//!
//! The tbf counts Ethernet's per-frame cost on the wire beyond what the kernel sees (FCS 4,
//! preamble 8, inter-frame gap 12 bytes) with a size table (`stab overhead 24`), so one TCP
//! stream gets what it would on real 10 Mbit/s Ethernet: 1448/1538 of the rate. For that the
//! nodes' experiment interfaces send real frames, not TSO/GSO super-packets (as the study's
//! NICs did): `up` turns segmentation offloads off on them.

use std::collections::BTreeMap;

use super::kernel::KernelConfig;
use super::netns::{self, Ns};
use super::wiring::{Emulation, Medium, SegmentId, Wiring};
use crate::vcluster::cmd::Cmd;
use crate::vcluster::error::{Error, Result};
use crate::vcluster::names::ClusterName;

/// Bytes Ethernet spends per frame beyond the kernel's frame length.
pub const WIRE_OVERHEAD_BYTES: u32 = 24;
/// How long a frame may wait in a segment's queue before tbf drops it.
const QUEUE_LATENCY: &str = "100ms";

/// Host objects and commands for one cluster's emulation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmulationSetup {
    /// ifb devices to create (recorded in the state file before they are).
    pub ifbs: Vec<String>,
    /// `ip -batch` lines (host).
    pub ip: Vec<String>,
    /// `tc -batch` lines (host).
    pub tc: Vec<String>,
}

/// A token bucket at `rate_bps`; the bucket holds 4 ms of traffic but at least 16 KiB, a few
/// full frames, so that tbf's timer granularity does not keep a stream below the rate. (The
/// bucket also bounds which GSO super-packets tbf lets through uncut, charging one frame's
/// overhead for many; `up` turns segmentation offloads off on the nodes so there are none.)
fn tbf(rate_bps: u64) -> String {
    let burst = (rate_bps / 8 / 250).max(16 * 1024);
    format!(
        "stab overhead {WIRE_OVERHEAD_BYTES} tbf rate {rate_bps}bit burst {burst} latency {QUEUE_LATENCY}"
    )
}

fn netem(delay: Option<std::time::Duration>, loss: Option<f64>) -> Option<String> {
    if delay.is_none() && loss.is_none() {
        return None;
    }
    let mut s = String::from("netem");
    if let Some(d) = delay {
        s.push_str(&format!(" delay {}us", d.as_micros()));
    }
    if let Some(l) = loss {
        s.push_str(&format!(" loss {l}%"));
    }
    Some(s)
}

/// The emulation's host objects and commands. `ports` gives, per segment, the host-side veth of every container
/// attached to it (nodes first, then switch ports, in a stable order).
pub fn setup(
    cluster: &ClusterName,
    wiring: &Wiring,
    ports: &BTreeMap<SegmentId, Vec<String>>,
) -> EmulationSetup {
    let mut p = EmulationSetup::default();
    for id in wiring.segment_ids() {
        let seg = wiring.segment(id);
        // The medium emulator's segments are the tool's own wires, on no bridge.
        if seg.emulation == Emulation::Frames {
            continue;
        }
        let shaped = tbf(seg.rate_bps);
        let imp = netem(seg.delay, seg.loss_percent);
        let empty = Vec::new();
        let seg_ports = ports.get(&id).unwrap_or(&empty);
        let add_ifb = |p: &mut EmulationSetup, ifb: &str| {
            p.ifbs.push(ifb.to_owned());
            p.ip.push(format!("link add {ifb} type ifb"));
            p.ip.push(format!("link set dev {ifb} up"));
            p.tc.push(format!("qdisc add dev {ifb} root handle 1: {shaped}"));
            if let Some(n) = &imp {
                // Once per crossing of the segment: only on the ifb side.
                p.tc.push(format!("qdisc add dev {ifb} parent 1:1 handle 10: {n}"));
            }
        };
        let redirect = |p: &mut EmulationSetup, port: &str, ifb: &str| {
            p.tc.push(format!("qdisc add dev {port} handle ffff: ingress"));
            p.tc.push(format!(
                "filter add dev {port} parent ffff: protocol all prio 1 u32 match u32 0 0 \
                 action mirred egress redirect dev {ifb}"
            ));
        };
        match seg.medium {
            Medium::Shared => {
                let ifb = cluster.shared_ifb(id.index());
                add_ifb(&mut p, &ifb);
                for port in seg_ports {
                    redirect(&mut p, port, &ifb);
                }
            }
            Medium::Switched => {
                for (k, port) in seg_ports.iter().enumerate() {
                    let ifb = cluster.port_ifb(id.index(), k);
                    add_ifb(&mut p, &ifb);
                    redirect(&mut p, port, &ifb);
                    p.tc.push(format!("qdisc add dev {port} root handle 1: {shaped}"));
                }
            }
        }
    }
    p
}

/// Checks the kernel has what the wiring's emulation needs, before anything is created.
pub fn check_kernel(wiring: &Wiring) -> Result<()> {
    let Some(k) = KernelConfig::load() else {
        tracing::warn!(
            "the kernel does not publish its configuration; tc will tell what is missing"
        );
        return Ok(());
    };
    let base = "link emulation";
    for (sym, what) in [
        ("VETH", "veth devices"),
        ("BRIDGE", "the Linux bridge"),
        ("TUN", "/dev/net/tun"),
    ] {
        k.require(sym, what, base)?;
    }
    if wiring.emulated_segments().next().is_some() {
        k.require(
            "PACKET",
            "AF_PACKET sockets",
            "the medium emulator (or set `emulation = \"rate\"` in the topology)",
        )?;
    }
    if wiring.segment_ids().count() > wiring.emulated_segments().count() {
        for (sym, what) in [
            ("IFB", "ifb devices"),
            ("NET_SCH_TBF", "the tbf qdisc"),
            ("NET_SCH_INGRESS", "the ingress qdisc"),
            ("NET_CLS_U32", "the u32 classifier"),
            ("NET_ACT_MIRRED", "the mirred action"),
        ] {
            k.require(sym, what, "`emulation = \"rate\"` segments")?;
        }
    }
    if let Some(seg) = wiring.needs_netem().first() {
        k.require(
            "NET_SCH_NETEM",
            "the netem qdisc",
            &format!(
                "segment {:?}'s delay or loss (remove `delay`/`loss` from the topology to run \
                 on this kernel)",
                seg.name
            ),
        )?;
    }
    Ok(())
}

pub fn apply(setup: &EmulationSetup) -> Result<()> {
    netns::ip_batch(Ns::Host, "creating the segments' ifb devices", &setup.ip)?;
    if setup.tc.is_empty() {
        return Ok(());
    }
    let mut script = setup.tc.join("\n");
    script.push('\n');
    Cmd::new("tc", "shaping the segments")
        .args(["-batch", "-"])
        .stdin(script)
        .run()
        .map(drop)
}

/// The host's ifb devices whose names start with `prefix`.
pub fn find_ifbs(prefix: &str) -> Result<Vec<String>> {
    let cmd = Cmd::new("ip", "listing the host's ifb devices")
        .args(["-j", "link", "show", "type", "ifb"]);
    let out = cmd.run()?;
    let links: Vec<netns::Link> = serde_json::from_str(&out).map_err(|e| Error::Unexpected {
        what: "listing the host's ifb devices".into(),
        command: cmd.display(),
        detail: e.to_string(),
    })?;
    Ok(links
        .into_iter()
        .map(|l| l.ifname)
        .filter(|n| n.starts_with(prefix))
        .collect())
}

/// Deletes the given ifb devices; those already gone are fine. Returns how many it deleted.
pub fn remove_ifbs(names: &[String]) -> Result<usize> {
    let existing: Vec<String> = netns::links(Ns::Host)?
        .into_iter()
        .map(|l| l.ifname)
        .collect();
    let lines: Vec<String> = names
        .iter()
        .filter(|n| existing.contains(n))
        .map(|n| format!("link del dev {n}"))
        .collect();
    netns::ip_batch(Ns::Host, "removing the segments' ifb devices", &lines)?;
    Ok(lines.len())
}

#[cfg(test)]
mod tests {
    use super::super::wiring::{Emulation, tests::mesh};
    use super::*;

    /// The token-bucket path: every segment `rate`.
    fn rate(mut w: Wiring) -> Wiring {
        for s in &mut w.segments {
            s.emulation = Emulation::Rate;
        }
        w
    }

    #[test]
    fn frame_emulated_segments_get_no_shaping() {
        let c = ClusterName::parse("f").unwrap();
        let w = mesh(true);
        let ports = ports_of(&w);
        let p = setup(&c, &w, &ports);
        assert!(!ports.is_empty());
        assert!(p.ifbs.is_empty() && p.tc.is_empty() && p.ip.is_empty());
    }

    fn ports_of(w: &Wiring) -> BTreeMap<SegmentId, Vec<String>> {
        w.segment_ids()
            .map(|id| {
                let n = w.members(id).len()
                    + w.switches
                        .iter()
                        .filter(|s| s.segments.contains(&id))
                        .count();
                (
                    id,
                    (0..n).map(|k| format!("veth{}x{k}", id.index())).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_shared_bus_funnels_every_port_into_one_shaped_ifb() {
        let c = ClusterName::parse("m").unwrap();
        let w = rate(mesh(true));
        let p = setup(&c, &w, &ports_of(&w));
        // One ifb per bus, 8 buses.
        assert_eq!(p.ifbs.len(), 8);
        let ifb0 = c.shared_ifb(0);
        assert!(p.tc.contains(&format!(
            "qdisc add dev {ifb0} root handle 1: stab overhead 24 tbf rate 10000000bit burst 16384 latency 100ms"
        )));
        // row1: 4 nodes + the row switch's port, all redirected to the same ifb.
        let redirects =
            p.tc.iter()
                .filter(|l| l.ends_with(&format!("redirect dev {ifb0}")))
                .count();
        assert_eq!(redirects, 5);
        // Nothing shapes a port's egress on a shared bus: one queue only.
        assert!(
            !p.tc
                .iter()
                .any(|l| l.starts_with("qdisc add dev veth") && l.contains("root"))
        );
    }

    #[test]
    fn a_switched_segment_shapes_each_port_both_ways() {
        let c = ClusterName::parse("s").unwrap();
        let w = Wiring::builder("t")
            .segment("sw", 100_000_000, Medium::Switched)
            .emulation(Emulation::Rate)
            .node("a", [("eth1", "sw")])
            .node("b", [("eth1", "sw")])
            .build()
            .unwrap();
        let p = setup(&c, &w, &ports_of(&w));
        assert_eq!(p.ifbs, [c.port_ifb(0, 0), c.port_ifb(0, 1)]);
        assert!(p.tc.contains(&"qdisc add dev veth0x1 root handle 1: stab overhead 24 tbf rate 100000000bit burst 50000 latency 100ms".to_string()));
        assert!(
            p.tc.iter()
                .any(|l| l.contains("dev veth0x0 parent ffff:") && l.ends_with(&c.port_ifb(0, 0)))
        );
    }

    #[test]
    fn delay_and_loss_go_under_the_tbf_once_per_crossing() {
        let c = ClusterName::parse("d").unwrap();
        let w = Wiring::builder("t")
            .segment("a", 10_000_000, Medium::Shared)
            .impairment(Some(std::time::Duration::from_millis(2)), Some(0.5))
            .emulation(Emulation::Rate)
            .node("x", [("eth1", "a")])
            .build()
            .unwrap();
        let p = setup(&c, &w, &ports_of(&w));
        assert!(p.tc.contains(&format!(
            "qdisc add dev {} parent 1:1 handle 10: netem delay 2000us loss 0.5%",
            c.shared_ifb(0)
        )));
    }
}
