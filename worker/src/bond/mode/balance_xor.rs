//! balance-xor (mode 2): each packet goes out on slave `hash % usable`, so a flow stays on one
//! slave and different flows spread over the slaves. The hash is the driver's
//! (`bond_xmit_hash` in drivers/net/bonding/bond_main.c), computed on the same bytes in the
//! same (host) byte order:
//!
//! - layer2: `dst_mac[5] ^ src_mac[5] ^ ethertype`. A kernel bond's MAC is the same on every
//!   slave, so layer2 means "one slave per pair of bonds". The userspace bond's slaves keep
//!   their own MACs, so the last byte of each bond's IP address stands in for its MAC: the
//!   same per-peer behaviour, not the same numbers.
//! - layer2+3: that value, xor the IP addresses, folded.
//! - layer3+4: the port bytes, xor the IP addresses, folded, lowest bit dropped.
//!   Fragments hash without ports, as in the driver (ICMP echo ids, which newer drivers
//!   also hash, are not).

use std::net::IpAddr;

use super::policy::{Links, Mode, Policy, Tx};
use crate::bond::packet::Packet;

// The controller's spec reuses this type for a bond's `xmit_hash_policy`.
/// The driver's `xmit_hash_policy` values the userspace bond implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum XmitHashPolicy {
    #[serde(rename = "layer2")]
    Layer2,
    #[serde(rename = "layer2+3")]
    Layer2And3,
    #[serde(rename = "layer3+4")]
    Layer3And4,
}

impl std::str::FromStr for XmitHashPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "layer2" | "0" => Ok(XmitHashPolicy::Layer2),
            "layer3+4" | "1" => Ok(XmitHashPolicy::Layer3And4),
            "layer2+3" | "2" => Ok(XmitHashPolicy::Layer2And3),
            _ => Err(format!(
                "unsupported xmit_hash_policy {s:?}; the userspace bond implements layer2, \
                 layer2+3 and layer3+4 (encap and vlan policies need the kernel driver)"
            )),
        }
    }
}

impl XmitHashPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            XmitHashPolicy::Layer2 => "layer2",
            XmitHashPolicy::Layer2And3 => "layer2+3",
            XmitHashPolicy::Layer3And4 => "layer3+4",
        }
    }
}

/// A 32-bit word of an address, as the driver's `flow_get_u32_*` reads it.
fn addr_word(a: IpAddr) -> u32 {
    match a {
        IpAddr::V4(a) => u32::from_ne_bytes(a.octets()),
        IpAddr::V6(a) => {
            let o = a.octets();
            (0..4).fold(0, |h, k| {
                h ^ u32::from_ne_bytes([o[4 * k], o[4 * k + 1], o[4 * k + 2], o[4 * k + 3]])
            })
        }
    }
}

fn last_byte(a: IpAddr) -> u8 {
    match a {
        IpAddr::V4(a) => a.octets()[3],
        IpAddr::V6(a) => a.octets()[15],
    }
}

/// The driver's transmit hash for `pkt` under `policy`.
pub fn xmit_hash(policy: XmitHashPolicy, pkt: &Packet<'_>) -> u32 {
    let ethertype: u32 = if pkt.dst.is_ipv4() { 0x0800 } else { 0x86dd };
    let eth = u32::from(last_byte(pkt.dst) ^ last_byte(pkt.src)) ^ ethertype;
    let mut h = match policy {
        XmitHashPolicy::Layer2 => return eth,
        XmitHashPolicy::Layer2And3 => eth,
        XmitHashPolicy::Layer3And4 => pkt.ports.map_or(0, u32::from_ne_bytes),
    };
    h ^= addr_word(pkt.dst) ^ addr_word(pkt.src);
    h ^= h >> 16;
    h ^= h >> 8;
    if policy == XmitHashPolicy::Layer3And4 {
        // The driver drops the lowest bit: even port numbers are common.
        h >>= 1;
    }
    h
}

pub struct BalanceXor {
    policy: XmitHashPolicy,
}

impl BalanceXor {
    pub fn new(policy: XmitHashPolicy) -> BalanceXor {
        BalanceXor { policy }
    }
}

impl Policy for BalanceXor {
    fn mode(&self) -> Mode {
        Mode::BalanceXor
    }

    fn transmit(&self, pkt: &Packet<'_>, links: &Links) -> Tx {
        let usable = links.usable().count();
        if usable == 0 {
            return Tx::Nowhere;
        }
        let k = xmit_hash(self.policy, pkt) as usize % usable;
        links.usable().nth(k).map_or(Tx::Nowhere, Tx::One)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bond::packet::tests::v4;

    fn slave(x: &BalanceXor, links: &Links, sport: u16) -> Tx {
        let p = v4([10, 0, 0, 1], [10, 0, 0, 2], 6, sport, 5001);
        x.transmit(&Packet::parse(&p).unwrap(), links)
    }

    #[test]
    fn a_flow_stays_on_one_slave_and_flows_spread() {
        let x = BalanceXor::new(XmitHashPolicy::Layer3And4);
        let links = Links::new(&[true, true]);
        let mut seen = [0; 2];
        for sport in 40000..40064 {
            let first = slave(&x, &links, sport);
            assert_eq!(first, slave(&x, &links, sport));
            if let Tx::One(i) = first {
                seen[i] += 1;
            }
        }
        assert!(seen[0] > 16 && seen[1] > 16, "{seen:?}");
    }

    #[test]
    fn layer2_puts_all_traffic_to_a_peer_on_one_slave() {
        let x = BalanceXor::new(XmitHashPolicy::Layer2);
        let links = Links::new(&[true, true]);
        let first = slave(&x, &links, 1);
        assert!((2..100).all(|s| slave(&x, &links, s) == first));
    }

    #[test]
    fn hash_matches_the_driver_on_known_values() {
        // 10.0.0.1:4660 -> 10.0.0.2:80 over TCP. Worked by hand from bond_ip_hash on a
        // little-endian host: ports 0x50003412 ^ 0x0200000a ^ 0x0100000a = 0x53003412,
        // folded: ^ >>16 -> 0x53006712, ^ >>8 -> 0x53536775, >>1 -> 0x29a9b3ba.
        let p = v4([10, 0, 0, 1], [10, 0, 0, 2], 6, 0x1234, 80);
        let pkt = Packet::parse(&p).unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(xmit_hash(XmitHashPolicy::Layer3And4, &pkt), 0x29a9_b3ba);
        }
        assert_eq!(xmit_hash(XmitHashPolicy::Layer2, &pkt), 0x0803);
    }

    #[test]
    fn down_slaves_leave_the_modulus() {
        let x = BalanceXor::new(XmitHashPolicy::Layer3And4);
        let links = Links::new(&[true, false, true]);
        for sport in 1..50 {
            assert!(matches!(slave(&x, &links, sport), Tx::One(0) | Tx::One(2)));
        }
    }
}
