//! Host costs: what a node's CPU spends per frame it sends, receives and forwards. A 1996 PC
//! spent hundreds of microseconds per frame in its driver and IP stack, so a forwarding node
//! delayed what it forwarded and saturated under load long before the wire did. Each node is
//! one server: frames wait for it in arrival order, sends and receives alike.

use serde::{Deserialize, Serialize};

use crate::time::Nanos;

/// Per-frame costs of one node, ns. All zero for a modern node (`none`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCosts {
    pub send_ns: u64,
    pub receive_ns: u64,
    /// Added to `send_ns` for a frame the node forwards rather than originates.
    pub forward_ns: u64,
    /// Added to a send and to a receive per byte of the frame, picoseconds: the copies and
    /// checksums a stack makes of every byte, which a faster host's fixed costs no longer hide.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub per_byte_ps: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl HostCosts {
    pub fn is_free(&self) -> bool {
        self.send_ns == 0 && self.receive_ns == 0 && self.forward_ns == 0 && self.per_byte_ps == 0
    }

    /// What sending (or forwarding) a frame of `len` bytes costs, ns.
    pub fn send_cost(&self, len: u32, forwarded: bool) -> u64 {
        let forward = if forwarded { self.forward_ns } else { 0 };
        self.send_ns + forward + self.bytes_cost(len)
    }

    /// What receiving a frame of `len` bytes costs, ns.
    pub fn receive_cost(&self, len: u32) -> u64 {
        self.receive_ns + self.bytes_cost(len)
    }

    fn bytes_cost(&self, len: u32) -> u64 {
        // Rounded to the nearest ns.
        (self.per_byte_ps * u64::from(len) + 500) / 1000
    }
}

/// What a node's CPU did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCounters {
    pub sent: u64,
    pub received: u64,
    pub forwarded: u64,
    /// Frames dropped because the node's backlog was full.
    pub backlog_drops: u64,
    pub busy_ns: u64,
}

impl HostCounters {
    /// What happened since `earlier`, a snapshot of the same node.
    pub fn since(&self, earlier: &HostCounters) -> HostCounters {
        HostCounters {
            sent: self.sent - earlier.sent,
            received: self.received - earlier.received,
            forwarded: self.forwarded - earlier.forwarded,
            backlog_drops: self.backlog_drops - earlier.backlog_drops,
            busy_ns: self.busy_ns - earlier.busy_ns,
        }
    }
}

/// The most frames waiting for one node's CPU (the kernel's input backlog).
pub const BACKLOG_LIMIT: usize = 1000;

#[derive(Debug)]
pub struct HostCpu {
    pub costs: HostCosts,
    free_from: Nanos,
    backlog: usize,
    pub counters: HostCounters,
}

impl HostCpu {
    pub fn new(costs: HostCosts) -> HostCpu {
        HostCpu {
            costs,
            free_from: 0,
            backlog: 0,
            counters: HostCounters::default(),
        }
    }

    /// Work of `cost` that arrives at `at`: when it is done, or `None` when the backlog is
    /// full and it is dropped (counted).
    pub fn take(&mut self, at: Nanos, cost: Nanos) -> Option<Nanos> {
        if self.backlog >= BACKLOG_LIMIT {
            self.counters.backlog_drops += 1;
            return None;
        }
        self.backlog += 1;
        let done = at.max(self.free_from) + cost;
        self.free_from = done;
        self.counters.busy_ns += cost;
        Some(done)
    }

    /// A piece of work taken earlier has finished.
    pub fn done(&mut self) {
        self.backlog -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_queues_behind_work() {
        let mut cpu = HostCpu::new(HostCosts {
            send_ns: 100,
            ..Default::default()
        });
        assert_eq!(cpu.take(0, 100), Some(100));
        assert_eq!(cpu.take(50, 100), Some(200));
        assert_eq!(cpu.take(1000, 100), Some(1100));
        assert_eq!(cpu.counters.busy_ns, 300);
    }

    #[test]
    fn a_per_byte_cost_grows_with_the_frame() {
        let c = HostCosts {
            send_ns: 1000,
            receive_ns: 2000,
            forward_ns: 500,
            per_byte_ps: 17_000,
        };
        assert_eq!(c.send_cost(60, false), 1000 + 1020);
        assert_eq!(c.send_cost(1514, true), 1000 + 500 + 25_738);
        assert_eq!(c.receive_cost(1514), 2000 + 25_738);
        assert!(
            !HostCosts {
                per_byte_ps: 1,
                ..HostCosts::default()
            }
            .is_free()
        );
        // Old configurations without the field read as no per-byte cost.
        let old: HostCosts =
            serde_json::from_str(r#"{"send_ns":1,"receive_ns":2,"forward_ns":3}"#).unwrap();
        assert_eq!(old.per_byte_ps, 0);
    }

    #[test]
    fn a_full_backlog_drops() {
        let mut cpu = HostCpu::new(HostCosts::default());
        for _ in 0..BACKLOG_LIMIT {
            assert!(cpu.take(0, 1).is_some());
        }
        assert_eq!(cpu.take(0, 1), None);
        cpu.done();
        assert!(cpu.take(0, 1).is_some());
        assert_eq!(cpu.counters.backlog_drops, 1);
    }
}
