//! The bond's data path: packets from the kernel out over the slaves as the mode says, and
//! frames from the slaves back to the kernel (or to peer discovery).

use std::io;
use std::net::IpAddr;

use super::link::{self, ETH_HEADER};
use super::mac::Mac;
use super::mode::Tx;
use super::packet::Packet;
use super::peers::{self, Hello, NextHop};
use super::stats::FlowKey;
use super::{BUF, Bond};

impl Bond {
    /// Kernel -> slaves.
    pub(super) fn transmit_loop(&self) {
        let mut buf = vec![0u8; BUF];
        loop {
            let n = match self.tun.recv(&mut buf[ETH_HEADER..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return self.fail(format!("reading TUN device {}: {e}", self.tun.name()));
                }
            };
            self.stats.from_kernel.add(1);
            let Some(pkt) = Packet::parse(&buf[ETH_HEADER..ETH_HEADER + n]) else {
                self.stats.malformed.add(1);
                continue;
            };
            let dst = pkt.dst;
            let group = pkt.is_group(self.cfg.broadcast());
            let tx = self.policy.transmit(&pkt, &self.links);
            let flow = FlowKey::of(&pkt);
            let frame = &mut buf[..ETH_HEADER + n];
            match tx {
                Tx::One(i) => {
                    if self.send_on(i, dst, group, frame) {
                        self.flows.count(flow, i);
                    }
                }
                Tx::All => {
                    for i in self.links.usable() {
                        if self.send_on(i, dst, group, frame) {
                            self.flows.count(flow, i);
                        }
                    }
                }
                Tx::Nowhere => self.stats.no_slave.add(1),
            }
        }
    }

    /// Sends `frame` on slave `i`; false when it could not go (no peer known, send error).
    pub(super) fn send_on(&self, i: usize, dst: IpAddr, group: bool, frame: &mut [u8]) -> bool {
        let s = &self.slaves[i];
        let to = if group {
            Mac::BROADCAST
        } else {
            match s.peers.lookup(dst) {
                NextHop::Peer(m) => m,
                NextHop::Unknown => {
                    self.stats.no_peer.add(1);
                    return false;
                }
            }
        };
        match s.link.send(to, frame) {
            Ok(()) => {
                s.stats.tx_packets.add(1);
                s.stats.tx_bytes.add((frame.len() - ETH_HEADER) as u64);
                true
            }
            // A full queue or a dead link loses the packet, as it would below a kernel bond.
            Err(e) => {
                if s.stats.tx_errors.get() == 0 {
                    eprintln!(
                        "orchestrate-worker bond: first send error on {}: {e} (counted in \
                         tx_errors from now on)",
                        s.link.name
                    );
                }
                s.stats.tx_errors.add(1);
                false
            }
        }
    }

    /// Slaves -> kernel, every slave in this one thread. It takes one frame from each slave
    /// in turn while any has one waiting, so frames striped over the wires reach the kernel
    /// in the order they arrived, as far as the wires allow: a thread per slave would add
    /// the scheduler's whims to the reordering balance-rr makes by itself.
    pub(super) fn receive_loop(&self) {
        let mut fds: Vec<libc::pollfd> = self
            .slaves
            .iter()
            .map(|s| libc::pollfd {
                fd: s.link.fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let mut buf = vec![0u8; BUF];
        let mut reported = vec![false; self.slaves.len()];
        loop {
            // SAFETY: fds is a valid array of pollfd of the given length.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return self.fail(format!("waiting for frames on the slaves: {e}"));
            }
            let mut more = true;
            while more {
                more = false;
                for (i, s) in self.slaves.iter().enumerate() {
                    match s.link.try_recv(&mut buf) {
                        Ok(Some(n)) => {
                            more = true;
                            self.deliver(i, &buf[..n]);
                        }
                        Ok(None) => {}
                        // A link set down reports ENETDOWN once; the monitor reports the
                        // link itself. Anything else is worth saying, once per slave.
                        Err(e) => {
                            if e.raw_os_error() != Some(libc::ENETDOWN) && !reported[i] {
                                reported[i] = true;
                                eprintln!(
                                    "orchestrate-worker bond: receiving on {}: {e}",
                                    s.link.name
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// One frame received on slave `i`.
    pub(super) fn deliver(&self, i: usize, frame: &[u8]) {
        let s = &self.slaves[i];
        if !s.link.wants(frame) {
            return;
        }
        let payload = &frame[ETH_HEADER..];
        if peers::is_control(payload) {
            if let Some(h) = Hello::decode(payload) {
                self.heard(i, h, link::source(frame));
            }
            return;
        }
        if !self.policy.delivers(i) {
            s.stats.rx_dropped_inactive.add(1);
            return;
        }
        s.stats.rx_packets.add(1);
        s.stats.rx_bytes.add(payload.len() as u64);
        if self.tun.send(payload).is_ok() {
            self.stats.to_kernel.add(1);
        }
    }
}
