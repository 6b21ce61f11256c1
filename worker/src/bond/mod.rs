//! `orchestrate-worker bond`: a userspace stand-in for the kernel's bonding driver, for nodes
//! whose kernel has none. A TUN device carries the bond's address; IP packets the kernel
//! routes to it are carried to the peer bonds over the slave interfaces, below IP, in
//! Ethernet frames of a local ethertype, spread over the slaves as the bonding mode says.
//!
//! Threads: one reads the TUN device and transmits, one receives from every slave and hands
//! packets to the kernel, and the calling thread monitors links, sends hellos, reports counters and
//! waits for SIGINT/SIGTERM. Exiting closes the TUN device, which removes it.

mod config;
mod ifreq;
mod link;
pub mod mode;
pub mod packet;
mod peers;
mod stats;
mod tun;

use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

pub use config::{BondArgs, Config, LONG_ABOUT};
pub use link::ETHERTYPE;

use crate::shutdown;
use ifreq::Ctl;
use link::{ETH_HEADER, Mac, SlaveLink};
use mode::{Links, Policy, Tx};
use packet::Packet;
use peers::{HELLO_LEN, Hello, Kind, NextHop, PeerTable};
use stats::{BondStats, SlaveStats};
use tun::Tun;

/// Largest frame handled: an IP packet of up to 64 KiB (a slave with jumbo frames) plus the
/// Ethernet header.
const BUF: usize = ETH_HEADER + 65536;
/// How often the main thread looks at signals and timers.
const TICK: Duration = Duration::from_millis(5);

static DUMP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_usr1(_sig: libc::c_int) {
    DUMP.store(true, Ordering::SeqCst);
}

struct Slave {
    link: SlaveLink,
    peers: PeerTable,
    stats: SlaveStats,
}

struct Bond {
    cfg: Config,
    /// For the link monitor's ioctls (main thread only).
    ctl: Ctl,
    tun: Tun,
    slaves: Vec<Slave>,
    links: Links,
    policy: Box<dyn Policy>,
    stats: BondStats,
    /// Set by a thread that cannot go on; the main thread exits with it.
    fatal: Mutex<Option<String>>,
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One JSON line on stdout: events and counters, for whoever started the bond.
fn emit(mut v: Value) {
    v["time_ns"] = json!(now_ns());
    println!("{v}");
}

/// Runs the bond until SIGINT/SIGTERM; returns the process exit status.
pub fn main(args: BondArgs) -> i32 {
    let cfg = match Config::try_from(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("orchestrate-worker bond: {e}");
            return 2;
        }
    };
    let mut raised = Vec::new();
    let code = match run(cfg, &mut raised) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("orchestrate-worker bond: {e}");
            1
        }
    };
    // Like the driver releasing a slave, close the slaves this bond opened.
    if let Ok(ctl) = Ctl::open() {
        for name in raised {
            let _ = ctl.set_up(&name, false);
        }
    }
    code
}

fn run(cfg: Config, raised: &mut Vec<String>) -> Result<(), String> {
    // Before touching anything, so a stop request during setup still ends in the cleanup.
    shutdown::install();
    // SAFETY: the handler only performs an atomic store.
    unsafe {
        libc::signal(
            libc::SIGUSR1,
            on_usr1 as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let ctl = Ctl::open().map_err(|e| format!("interface control socket: {e}"))?;
    let mut slaves = Vec::new();
    for name in &cfg.slaves {
        let link = SlaveLink::open(name, &ctl)?;
        let flags = ctl
            .flags(name)
            .map_err(|e| format!("slave {name}: cannot read its flags: {e}"))?;
        // Enslaving opens a slave in the driver; do the same, and close it again at exit.
        if flags & libc::IFF_UP as i16 == 0 {
            ctl.set_up(name, true)
                .map_err(|e| format!("slave {name}: cannot bring it up: {e}"))?;
            raised.push(name.clone());
        }
        slaves.push(Slave {
            link,
            peers: PeerTable::default(),
            stats: SlaveStats::default(),
        });
    }
    // Nothing is added to an IP packet on the wire, so the bond takes the smallest slave MTU.
    let mtu = slaves.iter().map(|s| s.link.mtu).min().unwrap_or(1500);
    // A freshly raised veth or NIC needs a moment for its carrier; the driver's monitor
    // would catch up on its next pass, so wait at most one pass for the first reading.
    let settle = Instant::now() + cfg.miimon.unwrap_or(Duration::ZERO).max(TICK);
    while !slaves.iter().all(|s| s.link.carrier(&ctl)) && Instant::now() < settle {
        std::thread::sleep(TICK);
    }
    let initial: Vec<bool> = slaves
        .iter()
        .map(|s| cfg.miimon.is_none() || s.link.carrier(&ctl))
        .collect();
    let links = Links::new(&initial);
    let policy = mode::policy(cfg.mode, cfg.options, &links);
    let tun = Tun::create(&cfg.name, cfg.address, cfg.prefix, mtu)?;
    let bond = Arc::new(Bond {
        cfg,
        ctl,
        tun,
        slaves,
        links,
        policy,
        stats: BondStats::default(),
        fatal: Mutex::new(None),
    });

    let b = Arc::clone(&bond);
    std::thread::Builder::new()
        .name("rx".into())
        .spawn(move || b.receive_loop())
        .map_err(|e| format!("cannot start the receive thread: {e}"))?;
    let b = Arc::clone(&bond);
    std::thread::Builder::new()
        .name("tx".into())
        .spawn(move || b.transmit_loop())
        .map_err(|e| format!("cannot start the transmit thread: {e}"))?;

    bond.announce_all(Kind::Announce);
    emit(bond.ready(mtu));
    bond.supervise();
    let fatal = bond.fatal.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut last = bond.report("exit");
    if let Some(e) = &fatal {
        last["error"] = json!(e);
    }
    emit(last);
    bond.write_stats_file();
    fatal.map_or(Ok(()), Err)
}

impl Bond {
    fn fail(&self, e: String) {
        let mut f = self.fatal.lock().unwrap_or_else(|e| e.into_inner());
        f.get_or_insert(e);
    }

    fn failed(&self) -> bool {
        self.fatal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Kernel -> slaves.
    fn transmit_loop(&self) {
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
            let frame = &mut buf[..ETH_HEADER + n];
            match tx {
                Tx::One(i) => self.send_on(i, dst, group, frame),
                Tx::All => {
                    for i in self.links.usable() {
                        self.send_on(i, dst, group, frame);
                    }
                }
                Tx::Nowhere => self.stats.no_slave.add(1),
            }
        }
    }

    fn send_on(&self, i: usize, dst: IpAddr, group: bool, frame: &mut [u8]) {
        let s = &self.slaves[i];
        let to = if group {
            Mac::BROADCAST
        } else {
            match s.peers.lookup(dst) {
                NextHop::Peer(m) => m,
                NextHop::Unknown => return self.stats.no_peer.add(1),
            }
        };
        match s.link.send(to, frame) {
            Ok(()) => {
                s.stats.tx_packets.add(1);
                s.stats.tx_bytes.add((frame.len() - ETH_HEADER) as u64);
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
            }
        }
    }

    /// Slaves -> kernel, every slave in this one thread. It takes one frame from each slave
    /// in turn while any has one waiting, so frames striped over the wires reach the kernel
    /// in the order they arrived, as far as the wires allow: a thread per slave would add
    /// the scheduler's whims to the reordering balance-rr makes by itself.
    fn receive_loop(&self) {
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
    fn deliver(&self, i: usize, frame: &[u8]) {
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

    fn heard(&self, i: usize, h: Hello, from: Mac) {
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

    fn hello(&self, i: usize, kind: Kind, to: Mac) {
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

    fn announce_all(&self, kind: Kind) {
        for i in 0..self.slaves.len() {
            self.hello(i, kind, Mac::BROADCAST);
        }
    }

    /// The main thread: link monitor, hellos, counters, signals.
    fn supervise(&self) {
        let start = Instant::now();
        let mut next_mii = start;
        let mut next_hello = start + peers::HELLO_EVERY;
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
            if now >= next_hello {
                self.announce_all(Kind::Announce);
                next_hello += peers::HELLO_EVERY;
            }
            if self.cfg.stats_file.is_some() && now >= next_file {
                self.write_stats_file();
                next_file += Duration::from_secs(1);
            }
            std::thread::sleep(TICK);
        }
    }

    /// One pass of the MII monitor.
    fn monitor(&self) {
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

    fn ready(&self, mtu: u32) -> Value {
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

    fn report(&self, event: &str) -> Value {
        for s in &self.slaves {
            s.stats.rx_overruns.add(s.link.overruns());
        }
        json!({
            "event": event,
            "bond": self.cfg.name,
            "mode": self.cfg.mode.to_string(),
            "active": self.policy.active().map(|i| self.slaves[i].link.name.clone()),
            "counters": self.stats.json(),
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
    fn write_stats_file(&self) {
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
