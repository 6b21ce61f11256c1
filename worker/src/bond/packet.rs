//! The few fields of an IP packet the bond needs: where it goes (to pick the peer's MAC) and
//! its flow (for balance-xor's hash). Packets come whole from the TUN device (no packet
//! information header), so anything malformed came from the local kernel and is just counted.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Transport protocols whose ports the kernel's flow dissector reads for layer3+4 hashing.
const PORTED: [u8; 5] = [6, 17, 33, 132, 136]; // TCP, UDP, DCCP, SCTP, UDP-Lite

/// A parsed view of one IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub bytes: &'a [u8],
    pub src: IpAddr,
    pub dst: IpAddr,
    /// Source and destination port bytes as they appear on the wire, when the packet has
    /// them (not for fragments, as the kernel's hash does not use them there either).
    pub ports: Option<[u8; 4]>,
}

impl<'a> Packet<'a> {
    /// Parses an IPv4 or IPv6 packet; `None` for anything else or anything truncated.
    pub fn parse(bytes: &'a [u8]) -> Option<Packet<'a>> {
        match bytes.first()? >> 4 {
            4 => Self::v4(bytes),
            6 => Self::v6(bytes),
            _ => None,
        }
    }

    fn v4(b: &'a [u8]) -> Option<Packet<'a>> {
        if b.len() < 20 {
            return None;
        }
        let ihl = usize::from(b[0] & 0x0f) * 4;
        let src = Ipv4Addr::new(b[12], b[13], b[14], b[15]);
        let dst = Ipv4Addr::new(b[16], b[17], b[18], b[19]);
        let frag = u16::from_be_bytes([b[6], b[7]]);
        let fragmented = frag & 0x3fff != 0; // MF flag or a non-zero offset
        let ports = (!fragmented && PORTED.contains(&b[9]))
            .then(|| b.get(ihl..ihl + 4))
            .flatten()
            .map(|p| [p[0], p[1], p[2], p[3]]);
        Some(Packet {
            bytes: b,
            src: src.into(),
            dst: dst.into(),
            ports,
        })
    }

    fn v6(b: &'a [u8]) -> Option<Packet<'a>> {
        if b.len() < 40 {
            return None;
        }
        let addr = |at: usize| {
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[at..at + 16]);
            Ipv6Addr::from(a)
        };
        // Extension headers are not walked: such packets hash on addresses only.
        let ports = PORTED
            .contains(&b[6])
            .then(|| b.get(40..44))
            .flatten()
            .map(|p| [p[0], p[1], p[2], p[3]]);
        Some(Packet {
            bytes: b,
            src: addr(8).into(),
            dst: addr(24).into(),
            ports,
        })
    }

    /// True for destinations every peer on the wire should get (broadcast, multicast).
    pub fn is_group(&self, subnet_broadcast: Ipv4Addr) -> bool {
        match self.dst {
            IpAddr::V4(d) => d.is_broadcast() || d.is_multicast() || d == subnet_broadcast,
            IpAddr::V6(d) => d.is_multicast(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal IPv4 TCP or UDP packet for tests.
    pub(crate) fn v4(src: [u8; 4], dst: [u8; 4], proto: u8, sport: u16, dport: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&40u16.to_be_bytes());
        p[8] = 64;
        p[9] = proto;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&dport.to_be_bytes());
        p
    }

    #[test]
    fn parses_v4_ports_but_not_for_fragments() {
        let mut p = v4([10, 0, 0, 1], [10, 0, 0, 2], 6, 1000, 80);
        let k = Packet::parse(&p).unwrap();
        assert_eq!(k.dst, IpAddr::from([10, 0, 0, 2]));
        assert_eq!(k.ports, Some([0x03, 0xe8, 0, 80]));
        p[6] = 0x20; // more fragments
        assert_eq!(Packet::parse(&p).unwrap().ports, None);
        assert!(Packet::parse(&[0x45, 0, 0]).is_none());
        assert!(Packet::parse(&[0x00; 40]).is_none());
    }

    #[test]
    fn group_destinations() {
        let b = Ipv4Addr::new(10, 0, 0, 255);
        let bc = v4([10, 0, 0, 1], [10, 0, 0, 255], 17, 1, 2);
        let mc = v4([10, 0, 0, 1], [224, 0, 0, 1], 17, 1, 2);
        let uc = v4([10, 0, 0, 1], [10, 0, 0, 7], 17, 1, 2);
        assert!(Packet::parse(&bc).unwrap().is_group(b));
        assert!(Packet::parse(&mc).unwrap().is_group(b));
        assert!(!Packet::parse(&uc).unwrap().is_group(b));
    }
}
