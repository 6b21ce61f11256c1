//! The bond's command line, and its checked form: a [`Config`] holds only a mode the
//! userspace bond can carry, options that mode takes, and slaves named once each.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use super::mode::{BondMode, Mode, ModeOptions, XmitHashPolicy};
use crate::argv::Argv;

/// Link monitoring interval when none is given, ms: the driver's default.
pub const DEFAULT_MIIMON_MS: u32 = 100;

/// `orchestrate-worker bond --help`.
pub const LONG_ABOUT: &str = "\
Userspace channel bonding over TUN, for nodes without the kernel's bonding driver.

Creates TUN device --name with --address, and carries its IP packets to the peer bonds over
the --slave interfaces (which need no addresses) in Ethernet frames of ethertype 0x88B5,
spread as --mode says: balance-rr (packet by packet in turn), active-backup (one slave, link
monitoring every --miimon ms, failover, back to --primary), balance-xor (--xmit-hash-policy
layer2, layer2+3 or layer3+4), broadcast (every slave). 802.3ad, balance-tlb and balance-alb
are refused. Peers are found by hello frames on each slave.

stdout: one JSON line per event: ready, peer (a peer bond heard on a slave), link (a slave's
link went up or down), failover, stats (on SIGUSR1) and exit (the final counters, per
slave: tx/rx packets and bytes, tx_errors, rx_dropped_inactive, rx_overruns, hellos).
SIGINT or SIGTERM stops the bond and removes the TUN device.";

/// `orchestrate-worker bond`: the bonding driver's options, by their driver names.
#[derive(clap::Args, Debug, Clone, PartialEq)]
pub struct BondArgs {
    /// Name of the bond's TUN device.
    #[arg(long, default_value = "bond0", value_name = "IFNAME")]
    pub name: String,
    /// The bond's IPv4 address and prefix length, e.g. 10.111.0.5/24.
    #[arg(long, value_name = "ADDR/PREFIX")]
    pub address: String,
    /// balance-rr, active-backup, balance-xor or broadcast. 802.3ad, balance-tlb and
    /// balance-alb are refused: they need the kernel driver.
    #[arg(long)]
    pub mode: BondMode,
    /// A slave interface; repeat for each, in order (the order decides active-backup's
    /// fallback and balance-rr's turn).
    #[arg(long = "slave", value_name = "IFNAME", required = true)]
    pub slaves: Vec<String>,
    /// Link monitoring interval in milliseconds; `None` is the driver's default
    /// ([`DEFAULT_MIIMON_MS`]). An option, not a default, so a bond that names the default
    /// is started with it written out, as its spec says. (The help spells the default as clap
    /// would.)
    #[arg(
        long,
        value_name = "MS",
        help = "Link monitoring interval in milliseconds (carrier and operstate); 0 turns \
                monitoring off and treats every slave as up, as the driver does [default: 100]",
        long_help = "Link monitoring interval in milliseconds (carrier and operstate); 0 turns \
                     monitoring off and treats every slave as up, as the driver does\n\n\
                     [default: 100]"
    )]
    pub miimon: Option<u32>,
    /// active-backup: the slave to use whenever its link is up.
    #[arg(long, value_name = "IFNAME")]
    pub primary: Option<String>,
    /// balance-xor: layer2 (the driver's default), layer2+3 or layer3+4.
    #[arg(long, value_name = "POLICY")]
    pub xmit_hash_policy: Option<XmitHashPolicy>,
    /// Also write the counters as JSON to this file, every second and at exit.
    #[arg(long, value_name = "PATH")]
    pub stats_file: Option<PathBuf>,
}

impl BondArgs {
    pub fn to_args(&self) -> Vec<String> {
        let mut a = Argv::new("bond");
        a.opt("--name", &self.name);
        a.opt_some(
            "--stats-file",
            self.stats_file.as_ref().map(|p| p.display()),
        );
        self.write_carriage(&mut a);
        a.into_vec()
    }

    /// The words [`to_args`] begins with for a bond named `name` that writes `stats_file`,
    /// before [`carriage_args`]: the apply script's `start_bond` writes these itself.
    ///
    /// [`to_args`]: BondArgs::to_args
    /// [`carriage_args`]: BondArgs::carriage_args
    pub fn head_args(name: &str, stats_file: &str) -> Vec<String> {
        let mut a = Argv::new("bond");
        a.opt("--name", name);
        a.opt("--stats-file", stats_file);
        a.into_vec()
    }

    /// The options after `--name` and `--stats-file`: what the bond carries and how. The
    /// apply script's `start_bond` passes its own name and stats file before these.
    pub fn carriage_args(&self) -> Vec<String> {
        let mut a = Argv::options();
        self.write_carriage(&mut a);
        a.into_vec()
    }

    fn write_carriage(&self, a: &mut Argv) {
        a.opt("--address", &self.address);
        a.opt("--mode", self.mode.as_str());
        for s in &self.slaves {
            a.opt("--slave", s);
        }
        a.opt_some("--miimon", self.miimon);
        a.opt_some("--primary", self.primary.as_ref());
        a.opt_some(
            "--xmit-hash-policy",
            self.xmit_hash_policy.map(|x| x.as_str()),
        );
    }
}

/// A bond that can be started.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub address: Ipv4Addr,
    pub prefix: u8,
    pub mode: Mode,
    pub slaves: Vec<String>,
    /// `None`: no link monitoring.
    pub miimon: Option<Duration>,
    pub options: ModeOptions,
    pub stats_file: Option<PathBuf>,
}

impl TryFrom<BondArgs> for Config {
    type Error = String;

    fn try_from(a: BondArgs) -> Result<Config, String> {
        let mode = Mode::try_from(a.mode)?;
        let miimon_ms = a.miimon.unwrap_or(DEFAULT_MIIMON_MS);
        let (addr, prefix) = a.address.split_once('/').ok_or_else(|| {
            format!(
                "--address {:?} needs a prefix length, e.g. 10.111.0.5/24",
                a.address
            )
        })?;
        let address: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("--address {:?}: {addr:?} is not an IPv4 address", a.address))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| (1..=32).contains(p))
            .ok_or_else(|| format!("--address {:?}: prefix must be 1 to 32", a.address))?;
        for (i, s) in a.slaves.iter().enumerate() {
            if a.slaves[..i].contains(s) {
                return Err(format!("slave {s} is named twice"));
            }
            if *s == a.name {
                return Err(format!("the bond {s} cannot be its own slave"));
            }
        }
        let primary = match &a.primary {
            None => None,
            Some(_) if mode != Mode::ActiveBackup => {
                return Err(format!(
                    "--primary applies to active-backup only, not to {mode}"
                ));
            }
            Some(p) => Some(a.slaves.iter().position(|s| s == p).ok_or_else(|| {
                format!(
                    "--primary {p} is not one of the slaves ({})",
                    a.slaves.join(", ")
                )
            })?),
        };
        if a.xmit_hash_policy.is_some() && mode != Mode::BalanceXor {
            return Err(format!(
                "--xmit-hash-policy applies to balance-xor only, not to {mode}"
            ));
        }
        Ok(Config {
            name: a.name,
            address,
            prefix,
            mode,
            slaves: a.slaves,
            miimon: (miimon_ms > 0).then(|| Duration::from_millis(u64::from(miimon_ms))),
            options: ModeOptions {
                primary,
                hash: a.xmit_hash_policy,
            },
            stats_file: a.stats_file,
        })
    }
}

impl Config {
    /// The subnet's directed broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        let host_bits = u32::MAX.checked_shr(u32::from(self.prefix)).unwrap_or(0);
        Ipv4Addr::from(u32::from(self.address) | host_bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(mode: &str) -> BondArgs {
        BondArgs {
            name: "bond0".into(),
            address: "10.111.0.5/24".into(),
            mode: mode.parse().unwrap(),
            slaves: vec!["eth1".into(), "eth2".into()],
            miimon: Some(100),
            primary: None,
            xmit_hash_policy: None,
            stats_file: None,
        }
    }

    #[test]
    fn checks_options_against_the_mode() {
        let c = Config::try_from(args("balance-rr")).unwrap();
        assert_eq!(c.broadcast(), Ipv4Addr::new(10, 111, 0, 255));
        let mut a = args("balance-rr");
        a.primary = Some("eth1".into());
        assert!(
            Config::try_from(a)
                .unwrap_err()
                .contains("active-backup only")
        );
        let mut a = args("active-backup");
        a.primary = Some("eth9".into());
        assert!(
            Config::try_from(a)
                .unwrap_err()
                .contains("not one of the slaves")
        );
        let mut a = args("active-backup");
        a.primary = Some("eth2".into());
        assert_eq!(Config::try_from(a).unwrap().options.primary, Some(1));
        let mut a = args("broadcast");
        a.xmit_hash_policy = Some(XmitHashPolicy::Layer3And4);
        assert!(
            Config::try_from(a)
                .unwrap_err()
                .contains("balance-xor only")
        );
        let mut a = args("balance-xor");
        a.slaves.push("eth1".into());
        assert!(Config::try_from(a).unwrap_err().contains("twice"));
        let mut a = args("balance-xor");
        a.address = "10.111.0.5".into();
        assert!(Config::try_from(a).unwrap_err().contains("prefix"));
        assert!(
            Config::try_from(args("802.3ad"))
                .unwrap_err()
                .contains("802.3ad")
        );
    }
}
