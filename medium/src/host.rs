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
}

impl HostCosts {
    pub fn is_free(&self) -> bool {
        self.send_ns == 0 && self.receive_ns == 0 && self.forward_ns == 0
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
