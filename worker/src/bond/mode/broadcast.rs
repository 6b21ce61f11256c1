//! broadcast (mode 3): every packet goes out on every slave whose link is up; the peer gets
//! one copy per wire, as with the driver.

use super::policy::{Links, Mode, Policy, Tx};
use crate::bond::packet::Packet;

pub struct Broadcast;

impl Policy for Broadcast {
    fn mode(&self) -> Mode {
        Mode::Broadcast
    }

    fn transmit(&self, _pkt: &Packet<'_>, links: &Links) -> Tx {
        if links.usable().next().is_some() {
            Tx::All
        } else {
            Tx::Nowhere
        }
    }
}
