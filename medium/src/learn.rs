//! Which stations of a segment a frame is for. A hub repeats every frame to every station and
//! each NIC keeps only its own address, broadcasts and multicasts; handing a frame only to the
//! station that owns its destination has the same effect without waking the others. Owners
//! are learnt from the source addresses each station sends from; an address not seen yet goes
//! to everyone, as it would on the cable.

use std::collections::HashMap;

pub type Mac = [u8; 6];

#[derive(Debug, Default)]
pub struct AddressTable {
    owner: HashMap<Mac, usize>,
}

impl AddressTable {
    pub fn learn(&mut self, src: Mac, station: usize) {
        if src[0] & 1 == 0 {
            self.owner.insert(src, station);
        }
    }

    /// The stations (other than `from`, of `stations`) that should see a frame for `dst`.
    pub fn recipients(&self, dst: Option<Mac>, from: usize, stations: usize) -> Vec<usize> {
        match dst.and_then(|d| self.owner.get(&d)) {
            Some(&s) if s != from => vec![s],
            // A frame for the sender's own side goes nowhere, as a NIC would not echo it.
            Some(_) => Vec::new(),
            None => (0..stations).filter(|&s| s != from).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_unicast_goes_to_its_owner_and_the_rest_floods() {
        let mut t = AddressTable::default();
        let a = [2, 0, 0, 0, 0, 1];
        t.learn(a, 3);
        assert_eq!(t.recipients(Some(a), 0, 4), [3]);
        assert_eq!(t.recipients(Some([0xff; 6]), 0, 4), [1, 2, 3]);
        assert_eq!(t.recipients(Some([2, 0, 0, 0, 0, 9]), 1, 3), [0, 2]);
        // Broadcast sources are never learnt.
        t.learn([0xff; 6], 1);
        assert_eq!(t.recipients(Some([0xff; 6]), 0, 2), [1]);
    }
}
