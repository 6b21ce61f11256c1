//! `orchestrate-worker bond`: a userspace stand-in for the kernel's bonding driver, for nodes
//! whose kernel has none. A TUN device carries the bond's address; IP packets the kernel
//! routes to it are carried to the peer bonds over the slave interfaces, below IP, in
//! Ethernet frames of a local ethertype, spread over the slaves as the bonding mode says.
//!
//! Threads: one reads the TUN device and transmits, one receives from every slave and hands
//! packets to the kernel (`datapath`), and the calling thread monitors links, sends hellos
//! (`control`), reports counters (`report`) and waits for SIGINT/SIGTERM. Exiting closes the
//! TUN device, which removes it.

mod config;
mod control;
mod datapath;
mod emit;
mod ifreq;
mod link;
mod mac;
pub mod mode;
pub mod packet;
mod peers;
mod report;
mod stats;
mod tun;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

pub use config::{BondArgs, Config, LONG_ABOUT};
pub use link::ETHERTYPE;

use crate::shutdown;
use emit::emit;
use ifreq::Ctl;
use link::{ETH_HEADER, SlaveLink};
use mode::{Links, Policy};
use peers::{Kind, PeerTable};
use stats::{BondStats, FlowTable, SlaveStats};
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
    /// Which slave each flow went out on.
    flows: FlowTable,
    /// Set by a thread that cannot go on; the main thread exits with it.
    fatal: Mutex<Option<String>>,
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
        flows: FlowTable::new(initial.len()),
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
}
