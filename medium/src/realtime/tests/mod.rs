//! The event loop run on a fake clock and in-memory ports ([`super::fake`]): when frames
//! leave, what the lateness statistics say, what a full queue drops, and what the control
//! socket answers. Expected figures are worked out here from the configuration (rates,
//! frame lengths, queue limits), not read back from the engine.

mod control;
mod deadlines;
mod drops;
mod lateness;

use crate::config::{Medium, MediumConfig, NodeSpec, PortSpec, SegmentSpec};
use crate::time::Nanos;

/// Every segment's rate, bit/s.
const RATE: u64 = 10_000_000;
/// The bus's collision window: a start is decided this long after it.
const WINDOW: Nanos = 2_000;
/// Frames a station (on the bus) or a link (on the switch) holds.
const QUEUE: usize = 4;
/// The bus's ports.
const BUS: [usize; 3] = [0, 1, 2];
/// The switch's ports.
const SWITCH: [usize; 2] = [3, 4];

/// Segment 0, "bus": a shared 10 Mbit/s segment with ports 0, 1 and 2. Segment 1, "switch":
/// a switched one with ports 3 and 4. Each port is its own node's, with no host costs.
fn bus_and_switch() -> MediumConfig {
    let segment = |name: &str, medium| SegmentSpec {
        name: name.into(),
        medium,
        rate_bps: RATE,
        collision_window_ns: WINDOW,
        queue_limit: QUEUE,
        turnaround_ns: crate::config::DEFAULT_TURNAROUND_NS,
    };
    let on = |segment: usize, i: usize| PortSpec {
        ifname: format!("veth{i}"),
        segment,
        node: Some(i),
    };
    MediumConfig {
        segments: vec![
            segment("bus", Medium::Shared),
            segment("switch", Medium::Switched),
        ],
        ports: vec![on(0, 0), on(0, 1), on(0, 2), on(1, 3), on(1, 4)],
        nodes: (0..5)
            .map(|i| NodeSpec {
                name: format!("n{i}"),
                costs: Default::default(),
                ipv4: Vec::new(),
            })
            .collect(),
        seed: 7,
    }
}

/// The MAC address of port `i`'s node.
fn mac(i: usize) -> [u8; 6] {
    [2, 0, 0, 0, 0, i as u8]
}

const BROADCAST: [u8; 6] = [0xff; 6];

/// A frame of `len` bytes as the kernel reads it (header and payload, no FCS), from port
/// `from`'s node to `dst`, its last byte a tag to tell frames apart.
fn frame(dst: [u8; 6], from: usize, len: usize, tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&mac(from));
    f[len - 1] = tag;
    f
}

/// How long a frame of `len` kernel bytes holds a 10 Mbit/s wire, first preamble bit to last
/// FCS bit: 4 bytes of FCS, padding to the 64-byte minimum, 8 bytes of preamble and start
/// delimiter, at 100 ns a bit.
fn wire_ns(len: usize) -> Nanos {
    let on_wire = (len as u64 + 4).max(64) + 8;
    on_wire * 8 * 1_000_000_000 / RATE
}

/// The inter-frame gap, 96 bit times.
fn gap_ns() -> Nanos {
    96 * 1_000_000_000 / RATE
}
