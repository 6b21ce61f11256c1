//! Bonding modes: which slave carries each outgoing packet and which slaves' arrivals are
//! delivered, following the Linux bonding driver's semantics (Documentation/networking/
//! bonding.rst). One file per mode behind [`Policy`].
//!
//! A mode name the user may write ([`BondMode`]) is not yet a mode the bond can run
//! ([`Mode`]): the conversion refuses the modes that need switch cooperation or ARP
//! rewriting, so a refused mode cannot reach the bond at all.

mod active_backup;
mod balance_rr;
mod balance_xor;
mod broadcast;
mod policy;

pub use active_backup::ActiveBackup;
pub use balance_rr::BalanceRr;
pub use balance_xor::{BalanceXor, XmitHashPolicy, xmit_hash};
pub use broadcast::Broadcast;
pub use policy::{BondMode, Failover, Links, Mode, Policy, Tx};

/// Options that only some modes take, already checked against the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModeOptions {
    /// Index of the primary slave (active-backup).
    pub primary: Option<usize>,
    /// Transmit hash (balance-xor); the driver's default is layer2.
    pub hash: Option<XmitHashPolicy>,
}

/// Builds the policy for `mode`. `links` gives the initial link states.
pub fn policy(mode: Mode, opts: ModeOptions, links: &Links) -> Box<dyn Policy> {
    match mode {
        Mode::BalanceRr => Box::new(BalanceRr::new()),
        Mode::ActiveBackup => Box::new(ActiveBackup::new(opts.primary, links)),
        Mode::BalanceXor => Box::new(BalanceXor::new(opts.hash.unwrap_or(XmitHashPolicy::Layer2))),
        Mode::Broadcast => Box::new(Broadcast),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_modes_name_themselves_and_say_why() {
        for name in ["802.3ad", "balance-tlb", "balance-alb", "4", "5", "6"] {
            let m: BondMode = name.parse().unwrap();
            let err = Mode::try_from(m).unwrap_err();
            assert!(err.contains(m.as_str()), "{err}");
            assert!(err.contains("not supported"), "{err}");
        }
    }

    #[test]
    fn carried_modes_convert() {
        for (name, mode) in [
            ("balance-rr", Mode::BalanceRr),
            ("active-backup", Mode::ActiveBackup),
            ("balance-xor", Mode::BalanceXor),
            ("broadcast", Mode::Broadcast),
        ] {
            assert_eq!(Mode::try_from(name.parse::<BondMode>().unwrap()), Ok(mode));
            assert_eq!(mode.to_string(), name);
        }
        assert!("round-robin".parse::<BondMode>().is_err());
    }
}
