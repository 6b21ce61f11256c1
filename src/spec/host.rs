//! Host profiles: what a node's CPU spends per Ethernet frame it sends, receives and
//! forwards, which the medium emulator charges as one FIFO server per node
//! (`orchestrate_medium::host`). A topology names a profile (`host = "486dx4"`) or gives the
//! costs (`host = { send = "250us", receive = "250us", forward = "150us" }`) at the top level,
//! in `[generator]`, or on a node entry (`nodes = [{ name = "n[01-04]", host = "486dx4" }]`).
//!
//! # Where the `486dx4` figures come from
//!
//! They are **derived, not measured**: no per-frame measurement of a 486 under Linux 1.x was
//! found. The sources, and how each figure follows from them:
//!
//! - NetPIPE (Snell, Mikler & Gustafson, 1996) reports about 0.7 ms one-way TCP latency for
//!   small messages over dedicated 10 Mbit/s Ethernet. A minimum frame's wire time is 67 µs,
//!   and the emulated node's own (modern) stack adds about 60 µs per hop
//!   (`plan::throughput_model::ModelParams::hop_latency`), so the two hosts' share of one small
//!   message is about 700 − 67 − 60 ≈ 570 µs, one send and one receive: **send ≈ receive ≈ 300 µs**
//!   (rounded; ≈ 285 µs each exactly). That figure was measured between two SGI Indy
//!   workstations, not 486 PCs: it is a workstation pair of the same years, the anchor of the
//!   derivation, not a measurement of the study's hosts.
//! - lmbench (McVoy & Staelin, USENIX 1996; the result tables shipped with it) brackets it
//!   from machines of the kind: Linux on i486, loopback, a small message's round trip takes
//!   351–368 µs over UDP and 1465–1592 µs over TCP (two sends, two receives and two context
//!   switches: about 90 µs of UDP stack per side, without driver, interrupt or ISA copy); a
//!   Linux row over 10baseT whose CPU the table does not name gives 1912 µs (UDP) and
//!   2954 µs (TCP) per round trip, at most about 445 µs per side once the wire is taken off.
//!   300 µs per frame sits inside that bracket.
//! - Mogul (TCP-IP list, 1988) reports "a few hundred microseconds" of interrupt work per sent
//!   packet on a 15 MIPS processor, the same order as the 300 µs above (a 486DX4-100 is faster
//!   at computing, but its ISA bus is not).
//! - The ISA bus peaks at 5.3 MB/s (Linux Ethernet-HOWTO), about 0.19 µs per byte copied by
//!   programmed I/O off a card of the era: 11 µs for a 60-byte frame, 286 µs for a 1514-byte
//!   one. A fixed 300 µs per received frame therefore fits a full frame and overstates a minimum
//!   one; the cost is per frame, not per byte, by choice (one figure, easy to sweep).
//! - **forward = 150 µs** (on top of the forwarding node's receive and send): the IP forwarding
//!   path (route lookup, header check, TTL and checksum update) without the socket layer, taken
//!   as half a send. No source gives it; it is the least certain figure and the one a study
//!   should sweep where a verdict depends on it.

use std::fmt;
use std::time::Duration;

use orchestrate_medium::host::HostCosts;
use schemars::JsonSchema;
use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::names::HumanDuration;

/// A named set of per-frame host costs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
pub enum HostProfile {
    /// A modern node: no cost per frame beyond what its real stack takes.
    #[default]
    #[serde(rename = "none")]
    None,
    /// A 486DX4-100 with an ISA 10 Mbit/s NIC under Linux 1.2, as in the 1996 Beowulf:
    /// send 300 µs, receive 300 µs, forward 150 µs on top of a send, per frame. Derived from
    /// NetPIPE's 0.7 ms small-message latency, Mogul's "a few hundred microseconds" per packet
    /// and the ISA bus's 5.3 MB/s, not measured: see the module documentation.
    #[serde(rename = "486dx4")]
    I486Dx4,
}

impl HostProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            HostProfile::None => "none",
            HostProfile::I486Dx4 => "486dx4",
        }
    }

    /// The profile's costs per frame.
    pub fn costs(self) -> HostCosts {
        match self {
            HostProfile::None => HostCosts::default(),
            HostProfile::I486Dx4 => HostCosts {
                send_ns: 300_000,
                receive_ns: 300_000,
                forward_ns: 150_000,
            },
        }
    }
}

impl fmt::Display for HostProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Costs given by hand, per frame: `{ send = "250us", receive = "250us", forward = "150us" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostCostsSpec {
    /// CPU time per frame the node sends.
    #[schemars(with = "String")]
    pub send: HumanDuration,
    /// CPU time per frame delivered to the node.
    #[schemars(with = "String")]
    pub receive: HumanDuration,
    /// Added to `send` for a frame the node forwards rather than originates.
    #[schemars(with = "String")]
    pub forward: HumanDuration,
}

/// The longest cost per frame accepted: beyond it a node could not keep a TCP connection up.
pub const MAX_COST: Duration = Duration::from_secs(1);

/// A node's host costs as written: a profile's name or the costs themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(untagged)]
pub enum HostSpec {
    Profile(HostProfile),
    Costs(HostCostsSpec),
}

impl Default for HostSpec {
    fn default() -> Self {
        HostSpec::Profile(HostProfile::None)
    }
}

impl HostSpec {
    /// The name the resolved topology and the plan give these costs: the profile's, or
    /// `custom`.
    pub fn name(&self) -> &'static str {
        match self {
            HostSpec::Profile(p) => p.as_str(),
            HostSpec::Costs(_) => "custom",
        }
    }

    pub fn costs(&self) -> HostCosts {
        match self {
            HostSpec::Profile(p) => p.costs(),
            HostSpec::Costs(c) => {
                let ns = |d: HumanDuration| u64::try_from(d.0.as_nanos()).unwrap_or(u64::MAX);
                HostCosts {
                    send_ns: ns(c.send),
                    receive_ns: ns(c.receive),
                    forward_ns: ns(c.forward),
                }
            }
        }
    }
}

/// A string is a profile's name, a table the costs: the messages stay serde's own, so a
/// misspelt profile or key gets its "did you mean".
impl<'de> Deserialize<'de> for HostSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HostSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a host profile (\"none\" or \"486dx4\") or a table \
                     { send = \"300us\", receive = \"300us\", forward = \"150us\" }",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HostSpec, E> {
                let d: de::value::StrDeserializer<'_, E> = v.into_deserializer();
                HostProfile::deserialize(d).map(HostSpec::Profile)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<HostSpec, A::Error> {
                let c = HostCostsSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
                for (field, d) in [
                    ("send", c.send),
                    ("receive", c.receive),
                    ("forward", c.forward),
                ] {
                    if d.0 > MAX_COST {
                        return Err(de::Error::custom(format!(
                            "host cost `{field}` of {} per frame is more than {}: expected \
                             microseconds to milliseconds, e.g. \"300us\"",
                            humantime::format_duration(d.0),
                            humantime::format_duration(MAX_COST)
                        )));
                    }
                }
                Ok(HostSpec::Costs(c))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct T {
        host: HostSpec,
    }

    fn parse(s: &str) -> Result<HostSpec, String> {
        toml::from_str::<T>(s)
            .map(|t| t.host)
            .map_err(|e| e.message().to_owned())
    }

    #[test]
    fn profiles_and_costs_parse() {
        assert_eq!(
            parse("host = \"486dx4\"").unwrap(),
            HostSpec::Profile(HostProfile::I486Dx4)
        );
        let c = parse("host = { send = \"250us\", receive = \"1ms\", forward = \"0s\" }").unwrap();
        assert_eq!(c.name(), "custom");
        assert_eq!(
            c.costs(),
            HostCosts {
                send_ns: 250_000,
                receive_ns: 1_000_000,
                forward_ns: 0
            }
        );
        assert!(HostSpec::default().costs().is_free());
    }

    #[test]
    fn the_486_profile_has_its_documented_figures() {
        let c = HostProfile::I486Dx4.costs();
        assert_eq!(
            (c.send_ns, c.receive_ns, c.forward_ns),
            (300_000, 300_000, 150_000)
        );
    }

    #[test]
    fn bad_hosts_say_what_was_expected() {
        let e = parse("host = \"486dx2\"").unwrap_err();
        assert!(e.contains("unknown variant `486dx2`"), "{e}");
        let e =
            parse("host = { send = \"1us\", recieve = \"1us\", forward = \"1us\" }").unwrap_err();
        assert!(e.contains("unknown field `recieve`"), "{e}");
        let e =
            parse("host = { send = \"2s\", receive = \"1us\", forward = \"1us\" }").unwrap_err();
        assert!(e.contains("more than 1s"), "{e}");
        assert!(parse("host = 3").is_err());
    }
}
