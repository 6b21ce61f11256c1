//! What the bond tells whoever started it: JSON lines on stdout (ready, peer, link, failover,
//! stats, exit) and, when asked for, a stats file rewritten atomically.

use serde_json::{Value, json};

use super::Bond;
use super::emit::now_ns;

impl Bond {
    pub(super) fn ready(&self, mtu: u32) -> Value {
        json!({
            "event": "ready",
            "bond": self.cfg.name,
            "address": format!("{}/{}", self.cfg.address, self.cfg.prefix),
            "mode": self.cfg.mode.to_string(),
            "driver": "userspace",
            "mtu": mtu,
            "miimon_ms": self.cfg.miimon.map_or(0, |d| d.as_millis() as u64),
            "active": self.policy.active().map(|i| self.slaves[i].link.name.clone()),
            "pid": std::process::id(),
            "slaves": self.slaves.iter().enumerate().map(|(i, s)| json!({
                "name": s.link.name, "mac": s.link.mac.to_string(), "mtu": s.link.mtu,
                "up": self.links.is_up(i),
            })).collect::<Vec<_>>(),
        })
    }

    pub(super) fn report(&self, event: &str) -> Value {
        for s in &self.slaves {
            s.stats.rx_overruns.add(s.link.overruns());
        }
        json!({
            "event": event,
            "bond": self.cfg.name,
            "mode": self.cfg.mode.to_string(),
            "active": self.policy.active().map(|i| self.slaves[i].link.name.clone()),
            "counters": self.stats.json(),
            "flow_table": self.flows.json(),
            "slaves": self.slaves.iter().enumerate().map(|(i, s)| {
                let mut v = s.stats.json();
                v["name"] = json!(s.link.name);
                v["up"] = json!(self.links.is_up(i));
                v["peers"] = json!(s.peers.addresses().iter().map(|a| a.to_string())
                    .collect::<Vec<_>>());
                v
            }).collect::<Vec<_>>(),
        })
    }

    /// Rewrites the stats file atomically (a reader never sees half a file).
    pub(super) fn write_stats_file(&self) {
        let Some(path) = &self.cfg.stats_file else {
            return;
        };
        let mut v = self.report("stats");
        v["time_ns"] = json!(now_ns());
        let tmp = path.with_extension("tmp");
        let ok = std::fs::write(&tmp, format!("{v}\n")).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = ok {
            eprintln!("orchestrate-worker bond: writing {}: {e}", path.display());
        }
    }
}
