//! What the medium emulates: segments, the ports on them and the nodes behind the ports.
//! Written by the virtual cluster as JSON and read by the emulator; the simulation builds one
//! in memory.

use serde::{Deserialize, Serialize};

use crate::host::HostCosts;
use crate::time::Nanos;

/// What a segment is: a shared medium or a switch. The controller's topology spec reuses this
/// type (its JSON Schema comes with the `schema` feature).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Medium {
    /// A bus or hub: one half-duplex CSMA/CD medium for all stations, as on 10BASE2 Ethernet.
    #[default]
    Shared,
    /// A full-duplex port per station into a store-and-forward switch.
    Switched,
}

impl Medium {
    pub fn as_str(self) -> &'static str {
        match self {
            Medium::Shared => "shared",
            Medium::Switched => "switched",
        }
    }
}

/// Round trip of a signal on a lab segment of 10BASE2 (about 200 m of coax and the
/// transceivers): stations that start within it collide.
pub const DEFAULT_COLLISION_WINDOW_NS: Nanos = 2_000;
/// A 1996 NIC's transmit buffer plus Linux's default txqueuelen of 100.
pub const DEFAULT_QUEUE_LIMIT: usize = 100;
/// A transmitter's turnaround between two of its own frames: 128 bit-times, a departure from
/// 802.3 by design. The standard lets a station send again one gap (96 bit-times) after its own
/// frame, so a TCP sender with a full queue collides with its receiver's deferred ACK at every
/// other gap and, having the better backoff odds, captures the wire until the ACK is dropped
/// after 16 attempts. The NICs of the era needed time to end a frame and fetch the next one;
/// with a turnaround longer than the gap plus the collision window (11.6 µs here) the station
/// that deferred takes the gap alone, so one stream interleaves its data and ACKs without
/// collisions, while stations that deferred together still collide and back off (capture
/// among them remains). It costs a sender that has the wire to itself 0.26% of its rate with
/// full frames (4.8% with minimum frames). Set the gap (9 600 ns) for the standard's timing.
/// This is the figure at 10 Mbit/s; at other rates the turnaround is the same 128 bit times
/// ([`crate::time::WireClock::turnaround`]): 1.28 µs at 100 Mbit/s, where 12.8 µs would add a
/// tenth to every full frame.
pub const DEFAULT_TURNAROUND_NS: Nanos = 12_800;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentSpec {
    pub name: String,
    pub medium: Medium,
    pub rate_bps: u64,
    #[serde(default = "default_window")]
    pub collision_window_ns: Nanos,
    #[serde(default = "default_queue")]
    pub queue_limit: usize,
    #[serde(default = "default_turnaround")]
    pub turnaround_ns: Nanos,
}

fn default_turnaround() -> Nanos {
    DEFAULT_TURNAROUND_NS
}

fn default_window() -> Nanos {
    DEFAULT_COLLISION_WINDOW_NS
}

fn default_queue() -> usize {
    DEFAULT_QUEUE_LIMIT
}

/// One station of a segment: a node's interface, or a switch's port on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    /// The host-side interface the emulator reads and writes (real time only).
    pub ifname: String,
    /// Index into [`MediumConfig::segments`].
    pub segment: usize,
    /// Index into [`MediumConfig::nodes`]; `None` for a switch's port (no host costs).
    pub node: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub costs: HostCosts,
    /// The node's own IPv4 addresses: a frame it sends from another source is one it
    /// forwards.
    #[serde(default)]
    pub ipv4: Vec<[u8; 4]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediumConfig {
    pub segments: Vec<SegmentSpec>,
    pub ports: Vec<PortSpec>,
    pub nodes: Vec<NodeSpec>,
    /// Seeds every segment's backoff (each segment mixes in its index).
    pub seed: u64,
}

impl MediumConfig {
    /// Checks the indices point where they should; the emulator refuses a config that does
    /// not hold together before it touches an interface.
    pub fn check(&self) -> Result<(), String> {
        for (i, p) in self.ports.iter().enumerate() {
            if p.segment >= self.segments.len() {
                return Err(format!(
                    "port {i} ({}) names segment {}",
                    p.ifname, p.segment
                ));
            }
            if p.node.is_some_and(|n| n >= self.nodes.len()) {
                return Err(format!(
                    "port {i} ({}) names a node that is not listed",
                    p.ifname
                ));
            }
        }
        for s in &self.segments {
            if s.rate_bps == 0 {
                return Err(format!("segment {} has a rate of zero", s.name));
            }
            if s.queue_limit == 0 {
                return Err(format!("segment {} has a queue of zero frames", s.name));
            }
            // A transmitter cannot start before the gap after its own frame.
            let gap = crate::time::WireClock::new(s.rate_bps).gap();
            if s.turnaround_ns < gap {
                return Err(format!(
                    "segment {}: a turnaround of {} ns is shorter than the {gap} ns gap",
                    s.name, s.turnaround_ns
                ));
            }
        }
        Ok(())
    }
}
