//! What the medium needs to know of a frame: its length and its addresses. Real frames are
//! bytes read from a port; simulated ones are just a length.

use crate::learn::Mac;

pub trait Frame: Clone {
    /// Header and payload as the kernel sees them (no FCS).
    fn wire_len(&self) -> u32;
    fn dst(&self) -> Option<Mac>;
    fn src(&self) -> Option<Mac>;
    /// The IPv4 source address, for telling forwarded frames from a node's own.
    fn ipv4_src(&self) -> Option<[u8; 4]>;
}

fn mac_at(b: &[u8], at: usize) -> Option<Mac> {
    b.get(at..at + 6).map(|s| s.try_into().expect("six bytes"))
}

impl Frame for Vec<u8> {
    fn wire_len(&self) -> u32 {
        u32::try_from(<[u8]>::len(self)).unwrap_or(u32::MAX)
    }

    fn dst(&self) -> Option<Mac> {
        mac_at(self, 0)
    }

    fn src(&self) -> Option<Mac> {
        mac_at(self, 6)
    }

    fn ipv4_src(&self) -> Option<[u8; 4]> {
        // Ethertype 0x0800, version 4: the source address is 12 bytes into the IP header.
        if self.get(12..14)? != [0x08, 0x00] || self.get(14)? >> 4 != 4 {
            return None;
        }
        self.get(26..30).map(|s| s.try_into().expect("four bytes"))
    }
}

/// A synthetic frame: a length and who sent it (for the simulation's own bookkeeping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Synthetic {
    pub len: u32,
    pub from: usize,
}

impl Frame for Synthetic {
    fn wire_len(&self) -> u32 {
        self.len
    }
    fn dst(&self) -> Option<Mac> {
        None
    }
    fn src(&self) -> Option<Mac> {
        None
    }
    fn ipv4_src(&self) -> Option<[u8; 4]> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_addresses_from_an_ipv4_frame() {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[26..30].copy_from_slice(&[10, 111, 0, 1]);
        assert_eq!(f.dst(), Some([2, 0, 0, 0, 0, 2]));
        assert_eq!(f.src(), Some([2, 0, 0, 0, 0, 1]));
        assert_eq!(f.ipv4_src(), Some([10, 111, 0, 1]));
        f[12] = 0x86;
        assert_eq!(f.ipv4_src(), None);
        assert_eq!(f.wire_len(), 60);
    }
}
