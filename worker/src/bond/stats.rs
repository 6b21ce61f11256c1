//! Counters, per slave and for the bond, and their JSON form. Tests and the controller read
//! them to see where traffic went: on stdout at exit and on SIGUSR1, and in a stats file
//! rewritten every second when asked for.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One slave's traffic. Bytes are IP packet bytes (what the bond carries), not frame bytes;
/// control frames (hellos) are counted apart.
#[derive(Default)]
pub struct SlaveStats {
    pub tx_packets: Counter,
    pub tx_bytes: Counter,
    pub rx_packets: Counter,
    pub rx_bytes: Counter,
    /// Sends the interface refused (queue full, link down).
    pub tx_errors: Counter,
    /// Packets that arrived on a slave the mode does not receive on (active-backup backups).
    pub rx_dropped_inactive: Counter,
    /// Frames lost because the receive thread fell behind (socket buffer full).
    pub rx_overruns: Counter,
    pub hellos_tx: Counter,
    pub hellos_rx: Counter,
    /// Link state changes the monitor saw.
    pub link_changes: Counter,
}

impl SlaveStats {
    pub fn json(&self) -> Value {
        json!({
            "tx_packets": self.tx_packets.get(),
            "tx_bytes": self.tx_bytes.get(),
            "rx_packets": self.rx_packets.get(),
            "rx_bytes": self.rx_bytes.get(),
            "tx_errors": self.tx_errors.get(),
            "rx_dropped_inactive": self.rx_dropped_inactive.get(),
            "rx_overruns": self.rx_overruns.get(),
            "hellos_tx": self.hellos_tx.get(),
            "hellos_rx": self.hellos_rx.get(),
            "link_changes": self.link_changes.get(),
        })
    }
}

/// The bond's own counters: what the kernel handed it and what it could not place.
#[derive(Default)]
pub struct BondStats {
    pub from_kernel: Counter,
    pub to_kernel: Counter,
    /// Packets with no slave to go out on (every link down).
    pub no_slave: Counter,
    /// Unicast packets for which the chosen wire knows no peer.
    pub no_peer: Counter,
    /// Packets that are not IPv4/IPv6, or are truncated.
    pub malformed: Counter,
    pub failovers: Counter,
}

impl BondStats {
    pub fn json(&self) -> Value {
        json!({
            "from_kernel": self.from_kernel.get(),
            "to_kernel": self.to_kernel.get(),
            "no_slave": self.no_slave.get(),
            "no_peer": self.no_peer.get(),
            "malformed": self.malformed.get(),
            "failovers": self.failovers.get(),
        })
    }
}

/// A flow as the bond sees it: addresses, and ports where the packet has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: std::net::IpAddr,
    pub dst: std::net::IpAddr,
    /// Source and destination port, when the packet carries them.
    pub ports: Option<(u16, u16)>,
}

impl FlowKey {
    pub fn of(p: &super::packet::Packet<'_>) -> FlowKey {
        FlowKey {
            src: p.src,
            dst: p.dst,
            ports: p.ports.map(|b| {
                (
                    u16::from_be_bytes([b[0], b[1]]),
                    u16::from_be_bytes([b[2], b[3]]),
                )
            }),
        }
    }
}

/// Packets sent per flow and slave: shows which wire each flow took (one for balance-xor and
/// active-backup, all in turn for balance-rr). Only the first [`FlowTable::CAPACITY`] flows
/// are kept apart; later ones are summed in `other_packets`, so memory stays bounded on a
/// long run.
pub struct FlowTable {
    slaves: usize,
    flows: std::sync::Mutex<FlowMap>,
}

#[derive(Default)]
struct FlowMap {
    per_flow: std::collections::HashMap<FlowKey, Vec<u64>>,
    other_packets: Vec<u64>,
}

impl FlowTable {
    pub const CAPACITY: usize = 1024;

    pub fn new(slaves: usize) -> FlowTable {
        FlowTable {
            slaves,
            flows: std::sync::Mutex::new(FlowMap {
                per_flow: Default::default(),
                other_packets: vec![0; slaves],
            }),
        }
    }

    /// Counts one packet of `flow` sent on slave `slave`.
    pub fn count(&self, flow: FlowKey, slave: usize) {
        let mut m = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        let full = m.per_flow.len() >= Self::CAPACITY;
        match m.per_flow.get_mut(&flow) {
            Some(v) => v[slave] += 1,
            None if full => m.other_packets[slave] += 1,
            None => {
                let mut v = vec![0; self.slaves];
                v[slave] = 1;
                m.per_flow.insert(flow, v);
            }
        }
    }

    /// `{"flows": [{src, dst, sport, dport, tx_packets: [per slave]}], "other_packets": [..]}`,
    /// flows sorted by key so that the output is stable.
    pub fn json(&self) -> Value {
        let m = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        let mut flows: Vec<_> = m.per_flow.iter().collect();
        flows.sort_by_key(|(k, _)| **k);
        json!({
            "flows": flows.into_iter().map(|(k, v)| json!({
                "src": k.src.to_string(),
                "dst": k.dst.to_string(),
                "sport": k.ports.map(|p| p.0),
                "dport": k.ports.map(|p| p.1),
                "tx_packets": v,
            })).collect::<Vec<_>>(),
            "other_packets": m.other_packets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(port: u16) -> FlowKey {
        FlowKey {
            src: "10.0.0.1".parse().unwrap(),
            dst: "10.0.0.2".parse().unwrap(),
            ports: Some((port, 5201)),
        }
    }

    #[test]
    fn flows_are_counted_per_slave_and_bounded() {
        let t = FlowTable::new(2);
        t.count(flow(1), 0);
        t.count(flow(1), 0);
        t.count(flow(2), 1);
        let v = t.json();
        let flows = v["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[0]["sport"], 1);
        assert_eq!(flows[0]["tx_packets"], json!([2, 0]));
        assert_eq!(flows[1]["tx_packets"], json!([0, 1]));

        // Two flows are known; ten more than the remaining room arrive.
        let more = FlowTable::CAPACITY - 2 + 10;
        for p in 0..more as u16 {
            t.count(flow(100 + p), 1);
        }
        let v = t.json();
        assert_eq!(v["flows"].as_array().unwrap().len(), FlowTable::CAPACITY);
        // Flows past the capacity are summed, not dropped; known flows still count apart.
        assert_eq!(v["other_packets"], json!([0, 10]));
        t.count(flow(1), 1);
        assert_eq!(t.json()["flows"][0]["tx_packets"], json!([2, 1]));
    }
}
