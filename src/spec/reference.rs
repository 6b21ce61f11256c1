//! `[[reference]]`: a value an experiment expects to measure, with a tolerance, checked by
//! `orchestrate report` (in the manner of ReFrame's performance references).
//!
//! ```toml
//! [[reference]]
//! topology = "routed-mesh-4x4"
//! pattern = "token"
//! size = "8KiB"
//! pairs = 7
//! placement = "local-wire"
//! value = "31.6 Mbit/s"
//! tolerance = "10%"
//! ```
//!
//! A reference names one cell of the report: topology (and `bonding`, when the topology ran
//! with several), pattern, protocol, size, pairs and placement. Its value is aggregate
//! throughput in the report's headline statistic. The units are written out: Mbit/s are
//! 10^6 bit/s, and bytes per second are refused rather than guessed at.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Spanned;

use super::names::{ByteSize, InvalidValue, Name};
use super::traffic::{Pattern, PlacementKind, Protocol};

/// One expected value, as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceSpec {
    /// The topology's name (as in its file), e.g. `routed-mesh-4x4`.
    #[schemars(with = "Name")]
    pub topology: Spanned<Name>,
    /// The bonding the configuration ran with (`none`, `balance-rr`, ...); needed only when
    /// the topology ran with more than one.
    pub bonding: Option<String>,
    #[schemars(with = "Pattern")]
    pub pattern: Spanned<Pattern>,
    #[serde(default)]
    pub protocol: Protocol,
    /// Message size: 8192 or "8KiB".
    #[schemars(with = "ByteSize")]
    pub size: Spanned<ByteSize>,
    #[schemars(with = "u32")]
    pub pairs: Spanned<u32>,
    #[serde(default = "default_placement")]
    #[schemars(with = "PlacementKind")]
    pub placement: Spanned<PlacementKind>,
    /// Expected aggregate throughput, e.g. "31.6 Mbit/s".
    pub value: Throughput,
    /// How far below the value a measurement may fall, e.g. "10%".
    pub tolerance: Percent,
}

fn default_placement() -> Spanned<PlacementKind> {
    Spanned::new(0..0, PlacementKind::LocalWire)
}

impl ReferenceSpec {
    /// Short name for messages: `routed-mesh-4x4 token/tcp 7 pairs 8KiB local-wire`.
    pub fn describe(&self) -> String {
        let mut s = self.topology.get_ref().to_string();
        if let Some(b) = &self.bonding {
            s.push(' ');
            s.push_str(b);
        }
        format!(
            "{s} {}/{} {} pairs {} {}",
            self.pattern.get_ref().as_str(),
            self.protocol.as_str(),
            self.pairs.get_ref(),
            self.size.get_ref(),
            self.placement.get_ref().as_str()
        )
    }
}

/// Throughput in Mbit/s (10^6 bit/s), written with its unit as any rate is: "31.6 Mbit/s",
/// "31.6mbit", "1.2 Gbit/s", "640 kbit/s".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throughput {
    mbit_s: f64,
}

impl Throughput {
    pub fn mbit_s(self) -> f64 {
        self.mbit_s
    }
}

impl FromStr for Throughput {
    type Err = InvalidValue;
    /// Read by the one unit module (`orchestrate_worker::units`), as link rates are:
    /// `31.6 Mbit/s`, `31.6mbit`, `1.2 Gbit/s`, ...
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        orchestrate_worker::units::parse_bit_rate(s)
            .map(|bits| Throughput { mbit_s: bits / 1e6 })
            .map_err(|e| InvalidValue(e.to_string()))
    }
}

impl fmt::Display for Throughput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} Mbit/s", self.mbit_s)
    }
}

impl<'de> Deserialize<'de> for Throughput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Throughput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for Throughput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Throughput".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9.]+ ?[kMG]?bit/s$",
            "description": "Throughput with its unit, e.g. \"31.6 Mbit/s\" (10^6 bit/s).",
        })
    }
}

/// A share such as a tolerance or a threshold, written as a percentage from 0% up to (not
/// including) 100%: "5%", "12.5%".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percent {
    fraction: f64,
}

impl Percent {
    /// The share as a fraction: 0.05 for 5%.
    pub fn fraction(self) -> f64 {
        self.fraction
    }
}

impl FromStr for Percent {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            InvalidValue(format!(
                "invalid percentage {s:?}: expected a number from 0 to below 100 followed by \
                 %, such as \"5%\""
            ))
        };
        let num = s.trim().strip_suffix('%').ok_or_else(bad)?;
        let v: f64 = num.trim().parse().map_err(|_| bad())?;
        if !(0.0..100.0).contains(&v) {
            return Err(bad());
        }
        Ok(Percent {
            fraction: v / 100.0,
        })
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Via the percentage, so "5%" prints as 5%, not 5.000000000000001%.
        let p = (self.fraction * 1e6).round() / 1e4;
        write!(f, "{p}%")
    }
}

impl<'de> Deserialize<'de> for Percent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Percent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for Percent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Percent".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9.]+ ?%$",
            "description": "A percentage below 100, e.g. \"10%\".",
        })
    }
}

/// The `[[reference]]` tables of an experiment file and nothing else, so a report can read
/// them from a run's copy of the experiment without loading its topologies.
#[derive(Debug, Default, Deserialize)]
pub struct ReferencesOnly {
    #[serde(default)]
    pub reference: Vec<ReferenceSpec>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_needs_a_bit_rate_unit() {
        let t: Throughput = "31.6 Mbit/s".parse().unwrap();
        assert_eq!(t.mbit_s(), 31.6);
        assert_eq!("1.5Gbit/s".parse::<Throughput>().unwrap().mbit_s(), 1500.0);
        assert_eq!("500 kbit/s".parse::<Throughput>().unwrap().mbit_s(), 0.5);
        let e = "4 MB/s".parse::<Throughput>().unwrap_err().to_string();
        assert!(e.contains("1 MB/s = 8 Mbit/s"), "{e}");
        for bad in ["31.6", "Mbit/s", "0 Mbit/s", "3 mbps"] {
            assert!(bad.parse::<Throughput>().is_err(), "{bad:?} accepted");
        }
        // Spelt as link rates are, it means the same.
        for same in ["31.6mbit", "31.6Mbit", "31.6 mbit/s", "31600kbit"] {
            assert_eq!(same.parse::<Throughput>().unwrap(), t, "{same:?}");
        }
    }

    #[test]
    fn percentages_stay_below_one_hundred() {
        assert_eq!("5%".parse::<Percent>().unwrap().fraction(), 0.05);
        assert_eq!("12.5 %".parse::<Percent>().unwrap().to_string(), "12.5%");
        assert_eq!("0%".parse::<Percent>().unwrap().fraction(), 0.0);
        for bad in ["5", "100%", "-1%", "x%"] {
            assert!(bad.parse::<Percent>().is_err(), "{bad:?} accepted");
        }
    }
}
