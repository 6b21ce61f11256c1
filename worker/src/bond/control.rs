//! The bond's control plane: hellos to and from peers, and the main thread's loop that runs
//! the link monitor, repeats hellos, reports counters and waits for the stop signal.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use super::emit::emit;
use super::link::ETH_HEADER;
use super::mac::Mac;
use super::peers::{self, HELLO_LEN, Hello, Kind};
use super::{Bond, DUMP, TICK};
use crate::shutdown;

impl Bond {
    pub(super) fn heard(&self, i: usize, h: Hello, from: Mac) {
        let s = &self.slaves[i];
        s.stats.hellos_rx.add(1);
        if h.addr == self.cfg.address {
            // Our own hello, heard through another of our slaves on the same wire.
            return;
        }
        if !s.peers.learn(h.addr, from) {
            return;
        }
        emit(json!({
            "event": "peer", "bond": self.cfg.name, "slave": s.link.name,
            "peer": h.addr.to_string(), "mac": from.to_string(),
        }));
        // Answer a newcomer at once so it need not wait for our next announce. Only a
        // newcomer: on a 10 Mbit/s bus of 16 bonds, answering every announce would cost
        // about 1% of the wire.
        if h.kind == Kind::Announce {
            self.hello(i, Kind::Answer, from);
        }
    }

    pub(super) fn hello(&self, i: usize, kind: Kind, to: Mac) {
        let s = &self.slaves[i];
        let mut frame = [0u8; ETH_HEADER + HELLO_LEN];
        Hello {
            kind,
            addr: self.cfg.address,
            prefix: self.cfg.prefix,
        }
        .encode(&mut frame[ETH_HEADER..]);
        if s.link.send(to, &mut frame).is_ok() {
            s.stats.hellos_tx.add(1);
        }
    }

    pub(super) fn announce_all(&self, kind: Kind) {
        for i in 0..self.slaves.len() {
            self.hello(i, kind, Mac::BROADCAST);
        }
    }

    /// The main thread: link monitor, hellos, counters, signals.
    pub(super) fn supervise(&self) {
        let start = Instant::now();
        let mut next_mii = start;
        let mut hellos = peers::HelloSchedule::new(start);
        let mut next_file = start;
        while !shutdown::requested() && !self.failed() {
            let now = Instant::now();
            if DUMP.swap(false, Ordering::SeqCst) {
                emit(self.report("stats"));
            }
            if let Some(every) = self.cfg.miimon
                && now >= next_mii
            {
                self.monitor();
                next_mii += every;
            }
            if hellos.due(now) {
                self.announce_all(Kind::Announce);
            }
            if self.cfg.stats_file.is_some() && now >= next_file {
                self.write_stats_file();
                next_file += Duration::from_secs(1);
            }
            std::thread::sleep(TICK);
        }
    }

    /// One pass of the MII monitor.
    pub(super) fn monitor(&self) {
        let mut changed = false;
        for (i, s) in self.slaves.iter().enumerate() {
            let up = s.link.carrier(&self.ctl);
            if self.links.set(i, up) {
                changed = true;
                s.stats.link_changes.add(1);
                emit(json!({
                    "event": "link", "bond": self.cfg.name, "slave": s.link.name, "up": up,
                }));
                if up {
                    self.hello(i, Kind::Announce, Mac::BROADCAST);
                }
            }
        }
        if !changed {
            return;
        }
        if let Some(f) = self.policy.links_changed(&self.links) {
            self.stats.failovers.add(1);
            let name = |i: Option<usize>| i.map(|i| self.slaves[i].link.name.clone());
            emit(json!({
                "event": "failover", "bond": self.cfg.name,
                "from": name(f.from), "to": name(f.to),
            }));
            // Tell the peers at once, as the driver does with gratuitous ARPs.
            if let Some(to) = f.to {
                self.hello(to, Kind::Announce, Mac::BROADCAST);
            }
        }
    }
}
