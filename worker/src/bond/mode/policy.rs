//! What every mode shares: the mode names ([`BondMode`], [`Mode`]), the [`Policy`] each mode
//! implements, and the slaves' link states ([`Links`]) it decides over.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::bond::packet::Packet;

// The bonding driver's modes, as topologies name them (the controller's spec reuses this
// type) and as `orchestrate-worker bond --mode` takes them.
/// The Linux bonding driver's modes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum BondMode {
    BalanceRr,
    ActiveBackup,
    BalanceXor,
    Broadcast,
    #[serde(rename = "802.3ad")]
    Ieee8023ad,
    BalanceTlb,
    BalanceAlb,
}

impl BondMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BondMode::BalanceRr => "balance-rr",
            BondMode::ActiveBackup => "active-backup",
            BondMode::BalanceXor => "balance-xor",
            BondMode::Broadcast => "broadcast",
            BondMode::Ieee8023ad => "802.3ad",
            BondMode::BalanceTlb => "balance-tlb",
            BondMode::BalanceAlb => "balance-alb",
        }
    }
}

impl FromStr for BondMode {
    type Err = String;

    /// Accepts the names and the numbers (0-6) the bonding driver accepts.
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "balance-rr" | "0" => BondMode::BalanceRr,
            "active-backup" | "1" => BondMode::ActiveBackup,
            "balance-xor" | "2" => BondMode::BalanceXor,
            "broadcast" | "3" => BondMode::Broadcast,
            "802.3ad" | "4" => BondMode::Ieee8023ad,
            "balance-tlb" | "5" => BondMode::BalanceTlb,
            "balance-alb" | "6" => BondMode::BalanceAlb,
            _ => {
                return Err(format!(
                    "unknown bonding mode {s:?}; expected balance-rr, active-backup, \
                     balance-xor, broadcast, 802.3ad, balance-tlb or balance-alb"
                ));
            }
        })
    }
}

impl fmt::Display for BondMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode the userspace bond carries faithfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    BalanceRr,
    ActiveBackup,
    BalanceXor,
    Broadcast,
}

impl Mode {
    pub fn name(self) -> BondMode {
        match self {
            Mode::BalanceRr => BondMode::BalanceRr,
            Mode::ActiveBackup => BondMode::ActiveBackup,
            Mode::BalanceXor => BondMode::BalanceXor,
            Mode::Broadcast => BondMode::Broadcast,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().as_str())
    }
}

impl TryFrom<BondMode> for Mode {
    type Error = String;

    fn try_from(m: BondMode) -> Result<Mode, String> {
        let why = match m {
            BondMode::BalanceRr => return Ok(Mode::BalanceRr),
            BondMode::ActiveBackup => return Ok(Mode::ActiveBackup),
            BondMode::BalanceXor => return Ok(Mode::BalanceXor),
            BondMode::Broadcast => return Ok(Mode::Broadcast),
            BondMode::Ieee8023ad => {
                "it needs a switch that speaks LACP (IEEE 802.3ad) to aggregate the ports, \
                 which the slaves' wires do not emulate"
            }
            BondMode::BalanceTlb => {
                "its receive side depends on the kernel answering ARP with per-slave MAC \
                 addresses, which a TUN device carrying IP cannot do"
            }
            BondMode::BalanceAlb => {
                "it balances receive load by rewriting ARP replies per peer, which a TUN \
                 device carrying IP cannot do"
            }
        };
        Err(format!(
            "bonding mode {m} is not supported by the userspace bond: {why}. Use a node with \
             the kernel bonding driver (driver = \"kernel\"), or one of balance-rr, \
             active-backup, balance-xor, broadcast"
        ))
    }
}

/// The slaves' link states as the monitor last saw them, in slave order.
pub struct Links {
    up: Vec<AtomicBool>,
}

impl Links {
    pub fn new(initial: &[bool]) -> Links {
        Links {
            up: initial.iter().map(|&u| AtomicBool::new(u)).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.up.len()
    }

    pub fn is_empty(&self) -> bool {
        self.up.is_empty()
    }

    pub fn is_up(&self, i: usize) -> bool {
        self.up[i].load(Ordering::Relaxed)
    }

    /// Records a new state; true if it changed.
    pub fn set(&self, i: usize, up: bool) -> bool {
        self.up[i].swap(up, Ordering::Relaxed) != up
    }

    /// The slaves that can transmit now, in slave order.
    pub fn usable(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(|&i| self.is_up(i))
    }
}

/// Where an outgoing packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tx {
    One(usize),
    All,
    /// No slave can carry it (all links down).
    Nowhere,
}

/// A change of the slave that carries traffic (active-backup only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failover {
    pub from: Option<usize>,
    pub to: Option<usize>,
}

/// One bonding mode: its transmit choice, its receive filter, and its reaction to link changes.
pub trait Policy: Send + Sync {
    fn mode(&self) -> Mode;

    /// The slave(s) that carry `pkt`, given the current link states.
    fn transmit(&self, pkt: &Packet<'_>, links: &Links) -> Tx;

    /// Whether a packet received on slave `i` is delivered to the bond. The kernel drops what
    /// arrives on an active-backup bond's backup slaves; the other modes take everything.
    fn delivers(&self, _i: usize) -> bool {
        true
    }

    /// Called after the monitor updated `links`; returns a failover if the mode made one.
    fn links_changed(&self, _links: &Links) -> Option<Failover> {
        None
    }

    /// The slave that currently carries everything, for modes that have one.
    fn active(&self) -> Option<usize> {
        None
    }
}
