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
//!
//! # Where the `pentium2-450` figures come from
//!
//! They are **fitted** to BEAM Ltd's NetPIPE TCP table of 1999 (dual Pentium II 450, SMC
//! EtherPower II, Linux 2.0.36, 100 Mbit/s full duplex through an Allied Telesyn AT-8118
//! switch; `experiments/data/beam-1999-netpipe-tcp.txt`), on its small-message ping-pong
//! points only, and checked on the rest without refitting (`experiments/beam99.toml`):
//!
//! - the table's ping-pong up to 1 KiB (45 rows) fits 72.3 µs + 179.6 ns per byte, one way;
//! - the same ping-pong on the emulated pair (six sizes from 1 B to 1 KiB, the median one-way
//!   time over six repetitions, on a 2-vCPU machine of the project's kind, 2026-12-03) fits
//!   33.5 µs + 146.3 ns/B with host `none` (34.4 + 146.2 in a second run): this machine's
//!   own stack and the two 100 Mbit/s serialisations through the store-and-forward switch;
//! - the costs were then set so that the emulated line meets the table's, in two steps:
//!   half of the difference per side (19 µs and 17 ns/B) gave 59.4 µs + 195.9 ns/B, because
//!   host costs do not simply add to a small message's time (part of them overlaps the
//!   emulator's own work), and the second step, 24 µs and 9 ns/B, gave 69.8 µs + 180.7 ns/B;
//!   **send ≈ receive ≈ 25 µs, per byte 9 ns** closes the last 2.5 µs.
//!
//! The fit therefore depends on the machine it was made on: on a host whose own stack is
//! faster or slower, refit it (the beam99 experiment's report gives the emulated line beside
//! the table's). **forward = 12.5 µs**, half a send as for the 486, from no source: beam99
//! forwards nothing.

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
    /// A Pentium II 450 with a PCI 100 Mbit/s NIC under Linux 2.0, as in BEAM Ltd's 1999
    /// NetPIPE table: send 25 µs, receive 25 µs, forward 12.5 µs on top of a send, and 9 ns
    /// per byte of every frame sent or received. Fitted to that table's small-message ping-pong on
    /// this project's emulated pair: see the module documentation.
    #[serde(rename = "pentium2-450")]
    Pentium2450,
}

impl HostProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            HostProfile::None => "none",
            HostProfile::I486Dx4 => "486dx4",
            HostProfile::Pentium2450 => "pentium2-450",
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
                per_byte_ps: 0,
            },
            HostProfile::Pentium2450 => HostCosts {
                send_ns: 25_000,
                receive_ns: 25_000,
                forward_ns: 12_500,
                per_byte_ps: 9_000,
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
    /// CPU time per byte of every frame sent or received, on top of `send` and `receive`
    /// (`"9ns"`); none when left out.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub per_byte: Option<HumanDuration>,
}

/// The longest cost per frame accepted: beyond it a node could not keep a TCP connection up.
pub const MAX_COST: Duration = Duration::from_secs(1);
/// The longest cost per byte accepted: a full frame then costs about 15 ms.
pub const MAX_COST_PER_BYTE: Duration = Duration::from_micros(10);

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
                    per_byte_ps: c.per_byte.map_or(0, |d| ns(d).saturating_mul(1000)),
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
                    "a host profile (\"none\", \"486dx4\" or \"pentium2-450\") or a table \
                     { send = \"300us\", receive = \"300us\", forward = \"150us\" } \
                     (optionally with per_byte = \"9ns\")",
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
                if let Some(d) = c.per_byte
                    && d.0 > MAX_COST_PER_BYTE
                {
                    return Err(de::Error::custom(format!(
                        "host cost `per_byte` of {} is more than {}: expected nanoseconds, \
                         e.g. \"9ns\"",
                        humantime::format_duration(d.0),
                        humantime::format_duration(MAX_COST_PER_BYTE)
                    )));
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
                forward_ns: 0,
                per_byte_ps: 0,
            }
        );
        let c = parse(
            "host = { send = \"25us\", receive = \"25us\", forward = \"12500ns\", per_byte = \"9ns\" }",
        )
        .unwrap();
        assert_eq!(c.costs(), HostProfile::Pentium2450.costs());
        let e = parse(
            "host = { send = \"1us\", receive = \"1us\", forward = \"1us\", per_byte = \"1ms\" }",
        )
        .unwrap_err();
        assert!(
            e.contains("per_byte") && e.contains("more than 10us"),
            "{e}"
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
