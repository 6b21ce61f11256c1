//! balance-rr (mode 0): each packet goes out on the next slave in turn, so one TCP stream is
//! striped over every wire and its segments can arrive out of order, as in the 1996 bonded
//! Beowulf. Like the driver, a slave whose link is down is skipped by taking the next usable
//! slave after the counter's pick.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::policy::{Links, Mode, Policy, Tx};
use crate::bond::packet::Packet;

pub struct BalanceRr {
    next: AtomicUsize,
}

impl BalanceRr {
    pub fn new() -> BalanceRr {
        BalanceRr {
            next: AtomicUsize::new(0),
        }
    }
}

impl Default for BalanceRr {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy for BalanceRr {
    fn mode(&self) -> Mode {
        Mode::BalanceRr
    }

    fn transmit(&self, _pkt: &Packet<'_>, links: &Links) -> Tx {
        let n = links.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| links.is_up(i))
            .map_or(Tx::Nowhere, Tx::One)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bond::packet::tests::v4;

    #[test]
    fn takes_slaves_in_turn_and_skips_down_ones() {
        let p = v4([10, 0, 0, 1], [10, 0, 0, 2], 6, 1, 2);
        let pkt = Packet::parse(&p).unwrap();
        let rr = BalanceRr::new();
        let links = Links::new(&[true, true, true]);
        let picks: Vec<Tx> = (0..6).map(|_| rr.transmit(&pkt, &links)).collect();
        use Tx::One;
        assert_eq!(picks, [One(0), One(1), One(2), One(0), One(1), One(2)]);
        links.set(1, false);
        let picks: Vec<Tx> = (0..3).map(|_| rr.transmit(&pkt, &links)).collect();
        assert_eq!(picks, [One(0), One(2), One(2)]);
        links.set(0, false);
        links.set(2, false);
        assert_eq!(rr.transmit(&pkt, &links), Tx::Nowhere);
    }
}
