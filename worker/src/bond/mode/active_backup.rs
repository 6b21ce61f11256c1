//! active-backup (mode 1): one slave carries everything; the others stand by and what arrives
//! on them is dropped. When the monitor sees the active slave's link go down, the bond moves
//! to the primary if it is up, else to the first slave that is up. When the primary comes
//! back it takes over again (the driver's default `primary_reselect=always`); without a
//! primary the bond stays where it is.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::policy::{Failover, Links, Mode, Policy, Tx};
use crate::bond::packet::Packet;

const NONE: usize = usize::MAX;

pub struct ActiveBackup {
    primary: Option<usize>,
    active: AtomicUsize,
}

impl ActiveBackup {
    pub fn new(primary: Option<usize>, links: &Links) -> ActiveBackup {
        let ab = ActiveBackup {
            primary,
            active: AtomicUsize::new(NONE),
        };
        ab.active
            .store(ab.best(links).unwrap_or(NONE), Ordering::Relaxed);
        ab
    }

    fn best(&self, links: &Links) -> Option<usize> {
        self.primary
            .filter(|&p| links.is_up(p))
            .or_else(|| links.usable().next())
    }
}

impl Policy for ActiveBackup {
    fn mode(&self) -> Mode {
        Mode::ActiveBackup
    }

    fn transmit(&self, _pkt: &Packet<'_>, _links: &Links) -> Tx {
        self.active().map_or(Tx::Nowhere, Tx::One)
    }

    fn delivers(&self, i: usize) -> bool {
        self.active() == Some(i)
    }

    fn links_changed(&self, links: &Links) -> Option<Failover> {
        let from = self.active();
        let keep = from
            .filter(|&a| links.is_up(a) && self.primary.is_none_or(|p| p == a || !links.is_up(p)));
        let to = keep.or_else(|| self.best(links));
        if to == from {
            return None;
        }
        self.active.store(to.unwrap_or(NONE), Ordering::Relaxed);
        Some(Failover { from, to })
    }

    fn active(&self) -> Option<usize> {
        match self.active.load(Ordering::Relaxed) {
            NONE => None,
            i => Some(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fails_over_and_back_to_the_primary() {
        let links = Links::new(&[true, true]);
        let ab = ActiveBackup::new(Some(1), &links);
        assert_eq!(ab.active(), Some(1));
        assert!(ab.delivers(1) && !ab.delivers(0));
        links.set(1, false);
        let f = ab.links_changed(&links).unwrap();
        assert_eq!((f.from, f.to), (Some(1), Some(0)));
        links.set(1, true);
        let f = ab.links_changed(&links).unwrap();
        assert_eq!((f.from, f.to), (Some(0), Some(1)));
        assert_eq!(ab.links_changed(&links), None);
    }

    #[test]
    fn without_primary_stays_after_recovery() {
        let links = Links::new(&[true, true]);
        let ab = ActiveBackup::new(None, &links);
        assert_eq!(ab.active(), Some(0));
        links.set(0, false);
        assert_eq!(ab.links_changed(&links).unwrap().to, Some(1));
        links.set(0, true);
        assert_eq!(ab.links_changed(&links), None);
        assert_eq!(ab.active(), Some(1));
        links.set(0, false);
        links.set(1, false);
        assert_eq!(ab.links_changed(&links).unwrap().to, None);
        links.set(0, true);
        assert_eq!(ab.links_changed(&links).unwrap().to, Some(0));
    }

    #[test]
    fn starts_on_an_up_slave() {
        let links = Links::new(&[false, true]);
        assert_eq!(ActiveBackup::new(None, &links).active(), Some(1));
        assert_eq!(ActiveBackup::new(Some(0), &links).active(), Some(1));
    }
}
