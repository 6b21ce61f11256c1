//! Peer discovery: which MAC, on each slave wire, belongs to which peer bond. Each bond
//! announces its address on every slave with a hello (broadcast at start, repeated at
//! doubling intervals from one second to half a minute ([`HelloSchedule`]), and when a link
//! comes up or the bond fails over, as the driver sends gratuitous ARPs); a bond
//! that hears a peer for the first time answers it directly, so two bonds know each other
//! within a round trip of the later one starting. Hellos go out on every slave, an
//! active-backup bond's backups included: they stand in for the ARP a kernel bond's peers
//! rely on, and carry no data.
//!
//! Hello payload (after the Ethernet header): 0x00, "OBND", version 1, kind (1 announce,
//! 2 answer), IPv4 address (4 bytes), prefix length.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use super::mac::Mac;

const MAGIC: [u8; 6] = [0, b'O', b'B', b'N', b'D', 1];
pub const HELLO_LEN: usize = MAGIC.len() + 1 + 4 + 1;
/// The first repetition of a bond's announcement comes this long after its start.
pub const HELLO_FIRST: Duration = Duration::from_secs(1);
/// Repetitions stop doubling at this interval.
pub const HELLO_LONGEST: Duration = Duration::from_secs(32);

/// When a bond repeats its announcement: a safety net for a hello lost on the wire (a bus
/// drops a frame after sixteen collisions), since a peer that starts later is answered at
/// once anyway. The interval doubles from [`HELLO_FIRST`] to [`HELLO_LONGEST`]: the
/// kernel's balance-rr sends no frames of its own, and on a shared bus every hello is a
/// broadcast each station receives. Announcing every second, the sixteen bonds of the
/// bonded dual net put sixteen fan-outs of fifteen copies a second onto each bus, whose
/// copies the medium emulator writes one after another: the later ones arrived over a
/// contention slot late, which alone took the one-pair cells' p99 lateness past the bound.
/// The clock is passed in.
#[derive(Debug, Clone)]
pub struct HelloSchedule {
    next: Instant,
    every: Duration,
}

impl HelloSchedule {
    pub fn new(start: Instant) -> HelloSchedule {
        HelloSchedule {
            next: start + HELLO_FIRST,
            every: HELLO_FIRST,
        }
    }

    /// Whether a repetition is due at `now`; if so, the next is scheduled.
    pub fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.every = (self.every * 2).min(HELLO_LONGEST);
        self.next = now + self.every;
        true
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Announce = 1,
    Answer = 2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub kind: Kind,
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Hello {
    pub fn encode(&self, out: &mut [u8]) -> usize {
        out[..6].copy_from_slice(&MAGIC);
        out[6] = self.kind as u8;
        out[7..11].copy_from_slice(&self.addr.octets());
        out[11] = self.prefix;
        HELLO_LEN
    }

    /// A hello, or `None` for a control message this version does not know.
    pub fn decode(b: &[u8]) -> Option<Hello> {
        if b.len() < HELLO_LEN || b[..6] != MAGIC {
            return None;
        }
        let kind = match b[6] {
            1 => Kind::Announce,
            2 => Kind::Answer,
            _ => return None,
        };
        Some(Hello {
            kind,
            addr: Ipv4Addr::new(b[7], b[8], b[9], b[10]),
            prefix: b[11],
        })
    }
}

/// Whether a payload is a control message rather than an IP packet.
pub fn is_control(payload: &[u8]) -> bool {
    payload.first() == Some(&0)
}

/// The peers heard on one slave wire.
#[derive(Default)]
pub struct PeerTable {
    map: RwLock<HashMap<Ipv4Addr, Mac>>,
}

/// Where to send a unicast packet on one wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHop {
    Peer(Mac),
    /// No peer known for the destination.
    Unknown,
}

impl PeerTable {
    /// Records `addr` at `mac`; true if that is new or changed.
    pub fn learn(&self, addr: Ipv4Addr, mac: Mac) -> bool {
        let mut m = self.map.write().unwrap_or_else(|e| e.into_inner());
        m.insert(addr, mac) != Some(mac)
    }

    /// The MAC for `dst`. A TUN device hands over packets without their next hop, so a
    /// packet routed through the bond to an address beyond the peers still finds its way when
    /// the wire has only one peer (the two-node case); with several peers it is unknown.
    pub fn lookup(&self, dst: IpAddr) -> NextHop {
        let m = self.map.read().unwrap_or_else(|e| e.into_inner());
        let direct = match dst {
            IpAddr::V4(d) => m.get(&d).copied(),
            IpAddr::V6(_) => None,
        };
        match direct {
            Some(mac) => NextHop::Peer(mac),
            None if m.len() == 1 => NextHop::Peer(*m.values().next().expect("one peer")),
            None => NextHop::Unknown,
        }
    }

    pub fn addresses(&self) -> Vec<Ipv4Addr> {
        let m = self.map.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<Ipv4Addr> = m.keys().copied().collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announcements_repeat_at_doubling_intervals_up_to_the_longest() {
        let t0 = Instant::now();
        let s = |secs: f64| t0 + Duration::from_secs_f64(secs);
        let mut h = HelloSchedule::new(t0);
        assert!(!h.due(s(0.5)), "nothing before the first second");
        let due: Vec<f64> = (1..=200)
            .map(|k| f64::from(k) * 0.5)
            .filter(|&t| h.due(s(t)))
            .collect();
        assert_eq!(due, [1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 95.0]);
    }

    #[test]
    fn hello_round_trips_and_rejects_others() {
        let h = Hello {
            kind: Kind::Answer,
            addr: Ipv4Addr::new(10, 111, 0, 5),
            prefix: 24,
        };
        let mut b = [0u8; 64];
        let n = h.encode(&mut b);
        assert!(is_control(&b[..n]));
        assert_eq!(Hello::decode(&b[..n]), Some(h));
        b[1] = b'X';
        assert_eq!(Hello::decode(&b[..n]), None);
        assert_eq!(Hello::decode(&b[..3]), None);
    }

    #[test]
    fn lookup_uses_the_only_peer_for_unknown_destinations() {
        let t = PeerTable::default();
        let a = Mac([2, 0, 0, 0, 0, 1]);
        let b = Mac([2, 0, 0, 0, 0, 2]);
        let far: IpAddr = Ipv4Addr::new(192, 0, 2, 1).into();
        assert_eq!(t.lookup(far), NextHop::Unknown);
        assert!(t.learn(Ipv4Addr::new(10, 0, 0, 1), a));
        assert!(!t.learn(Ipv4Addr::new(10, 0, 0, 1), a));
        assert_eq!(t.lookup(far), NextHop::Peer(a));
        assert!(t.learn(Ipv4Addr::new(10, 0, 0, 2), b));
        assert_eq!(t.lookup(far), NextHop::Unknown);
        assert_eq!(
            t.lookup(Ipv4Addr::new(10, 0, 0, 2).into()),
            NextHop::Peer(b)
        );
    }
}
