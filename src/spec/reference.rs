//! `[[reference]]`: a value an experiment expects to measure and the bounds it must stay
//! within, checked by `orchestrate report` as ReFrame checks its performance references
//! (`(value, lower, upper, unit)`).
//!
//! ```toml
//! [[reference]]
//! topology = "routed-mesh-4x4"
//! pattern = "token"
//! size = "8KiB"
//! pairs = 7
//! placement = "local-wire"
//! cluster = "docker"          # only runs on this kind of cluster (default: every kind)
//! throughput = "31.6 Mbit/s"  # or: latency = "850us"
//! lower = "-10%"              # at most 10% below; leave out for no lower bound
//! upper = "+10%"              # at most 10% above; leave out for no upper bound
//! ```
//!
//! A reference names one cell of the report: topology (and `bonding`, when the topology ran
//! with several), pattern, protocol, size, pairs and placement. It expects either the cell's
//! aggregate throughput in the report's headline statistic, or its latency: the median over
//! the cell's trials of each trial's mean one-way message time, the `latency p50` the report
//! prints. The check passes when the measured figure lies within `[value × (1 + lower),
//! value × (1 + upper)]`; a bound left out does not limit. Units are written out: Mbit/s are
//! 10^6 bit/s, and bytes per second are refused rather than guessed at.
//!
//! `value = "…"` with `tolerance = "10%"` (the first spelling) still reads: `value` is
//! `throughput`, `tolerance = "10%"` is `lower = "-10%"` with no upper bound.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::de::IntoDeserializer;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Spanned;

use super::cluster_kind::ClusterKind;
use super::names::{ByteSize, InvalidValue, Name};
use super::traffic::{Pattern, PlacementKind, Protocol};

/// A value the experiment expects to measure in one cell, with bounds around it, as ReFrame's
/// performance references: `throughput` or `latency`, and `lower`, `upper` or both.
// (The table as written; [`ReferenceSpec`] is what it means.)
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReferenceTable {
    /// The topology's name (as in its file), e.g. `routed-mesh-4x4`.
    #[schemars(with = "Name")]
    topology: Spanned<Name>,
    /// The bonding the configuration ran with (`none`, `balance-rr`, ...); needed only when
    /// the topology ran with more than one.
    bonding: Option<String>,
    #[schemars(with = "Pattern")]
    pattern: Spanned<Pattern>,
    #[serde(default)]
    protocol: Protocol,
    /// Message size: 8192 or "8KiB".
    #[schemars(with = "ByteSize")]
    size: Spanned<ByteSize>,
    #[schemars(with = "u32")]
    pairs: Spanned<u32>,
    #[serde(default = "default_placement")]
    #[schemars(with = "PlacementKind")]
    placement: Spanned<PlacementKind>,
    /// The kinds of cluster whose runs this reference is for: one ("docker") or a list
    /// (["docker", "netns"]). Default: every kind. Runs on other kinds list it as not checked.
    #[serde(default)]
    cluster: ClusterKinds,
    /// Expected aggregate throughput, e.g. "31.6 Mbit/s".
    throughput: Option<Throughput>,
    /// The first spelling of `throughput`.
    value: Option<Throughput>,
    /// Expected latency (the cell's median one-way message time), e.g. "850us", "1.2ms".
    latency: Option<LatencyValue>,
    /// How far below the value a measurement may lie, e.g. "-10%"; none: no lower bound.
    lower: Option<Deviation>,
    /// How far above the value a measurement may lie, e.g. "+10%"; none: no upper bound.
    upper: Option<Deviation>,
    /// The first spelling of `lower`: "10%" is `lower = "-10%"`.
    tolerance: Option<Percent>,
}

fn default_placement() -> Spanned<PlacementKind> {
    Spanned::new(0..0, PlacementKind::LocalWire)
}

/// One expected value with its bounds, naming one cell of a run.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "ReferenceTable")]
pub struct ReferenceSpec {
    pub topology: Spanned<Name>,
    pub bonding: Option<String>,
    pub pattern: Spanned<Pattern>,
    pub protocol: Protocol,
    pub size: Spanned<ByteSize>,
    pub pairs: Spanned<u32>,
    pub placement: Spanned<PlacementKind>,
    /// The cluster kinds it is for; empty: every kind.
    pub cluster: Vec<ClusterKind>,
    pub expected: Expected,
    pub bounds: Bounds,
}

impl JsonSchema for ReferenceSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Reference".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ReferenceTable::json_schema(g)
    }
}

impl TryFrom<ReferenceTable> for ReferenceSpec {
    type Error = InvalidValue;
    fn try_from(t: ReferenceTable) -> Result<Self, InvalidValue> {
        let expected = match (t.throughput.or(t.value), t.latency) {
            _ if t.throughput.is_some() && t.value.is_some() => {
                return Err(InvalidValue(
                    "a reference gives `throughput` or `value` (its first spelling), not both"
                        .into(),
                ));
            }
            (Some(rate), None) => Expected::Throughput(rate),
            (None, Some(latency)) => Expected::Latency(latency),
            (Some(_), Some(_)) => {
                return Err(InvalidValue(
                    "a reference expects one figure: `throughput` or `latency`, not both (write \
                     two references)"
                        .into(),
                ));
            }
            (None, None) => {
                return Err(InvalidValue(
                    "a reference needs the figure it expects: `throughput = \"31.6 Mbit/s\"` or \
                     `latency = \"850us\"`"
                        .into(),
                ));
            }
        };
        let lower = match (t.lower, t.tolerance) {
            (Some(_), Some(_)) => {
                return Err(InvalidValue(
                    "a reference gives `lower` or `tolerance` (its first spelling), not both"
                        .into(),
                ));
            }
            (Some(d), None) => Some(d.fraction()),
            (None, Some(p)) => Some(-p.fraction()),
            (None, None) => None,
        };
        if lower.is_some_and(|l| l > 0.0) {
            return Err(InvalidValue(format!(
                "`lower` is how far below the value a measurement may lie: write \"-{}\"",
                t.lower
                    .map(|d| d.to_string())
                    .unwrap_or_default()
                    .trim_start_matches('+')
            )));
        }
        let upper = t.upper.map(Deviation::fraction);
        if upper.is_some_and(|u| u < 0.0) {
            return Err(InvalidValue(format!(
                "`upper` is how far above the value a measurement may lie: write \"+{}\"",
                t.upper
                    .map(|d| d.to_string())
                    .unwrap_or_default()
                    .trim_start_matches('-')
            )));
        }
        if lower.is_none() && upper.is_none() {
            return Err(InvalidValue(
                "a reference needs a bound: `lower = \"-10%\"`, `upper = \"+10%\"` or both".into(),
            ));
        }
        Ok(ReferenceSpec {
            topology: t.topology,
            bonding: t.bonding,
            pattern: t.pattern,
            protocol: t.protocol,
            size: t.size,
            pairs: t.pairs,
            placement: t.placement,
            cluster: t.cluster.0,
            expected,
            bounds: Bounds { lower, upper },
        })
    }
}

impl ReferenceSpec {
    /// Short name for messages: `routed-mesh-4x4 token/tcp 7 pairs 8KiB local-wire`, `… 1 pair …`.
    pub fn describe(&self) -> String {
        let mut s = self.topology.get_ref().to_string();
        if let Some(b) = &self.bonding {
            s.push(' ');
            s.push_str(b);
        }
        let pairs = *self.pairs.get_ref();
        format!(
            "{s} {}/{} {pairs} {} {} {}",
            self.pattern.get_ref().as_str(),
            self.protocol.as_str(),
            if pairs == 1 { "pair" } else { "pairs" },
            self.size.get_ref(),
            self.placement.get_ref().as_str()
        )
    }

    /// Whether runs on a `kind` cluster are checked against it.
    pub fn applies_to(&self, kind: ClusterKind) -> bool {
        self.cluster.is_empty() || self.cluster.contains(&kind)
    }
}

/// The figure a reference expects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expected {
    Throughput(Throughput),
    Latency(LatencyValue),
}

impl Expected {
    /// The figure in the unit the report gives it in ([`Expected::unit`]).
    pub fn value(self) -> f64 {
        match self {
            Self::Throughput(t) => t.mbit_s(),
            Self::Latency(l) => l.us(),
        }
    }

    pub fn quantity(self) -> &'static str {
        match self {
            Self::Throughput(_) => "throughput",
            Self::Latency(_) => "latency",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Self::Throughput(_) => "Mbit/s",
            Self::Latency(_) => "µs",
        }
    }
}

/// How far a measurement may lie from the expected value, as signed fractions of it
/// (ReFrame's `lower` and `upper`): `lower` ≤ 0 ≤ `upper`, at least one of them set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    lower: Option<f64>,
    upper: Option<f64>,
}

impl Bounds {
    pub fn lower(self) -> Option<f64> {
        self.lower
    }

    pub fn upper(self) -> Option<f64> {
        self.upper
    }

    /// The interval a measurement of `value` must lie in, as absolute figures.
    pub fn around(self, value: f64) -> (Option<f64>, Option<f64>) {
        (
            self.lower.map(|l| value * (1.0 + l)),
            self.upper.map(|u| value * (1.0 + u)),
        )
    }

    /// `-10% … +10%`, `-10% … none`.
    pub fn text(self) -> String {
        let side = |f: Option<f64>| match f {
            Some(f) => format!("{:+}%", (f * 1e6).round() / 1e4),
            None => "none".into(),
        };
        format!("{} … {}", side(self.lower), side(self.upper))
    }
}

/// The kinds of cluster a reference is for: `"docker"` or `["docker", "netns"]`.
#[derive(Debug, Clone, Default)]
struct ClusterKinds(Vec<ClusterKind>);

impl JsonSchema for ClusterKinds {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ClusterKinds".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one = g.subschema_for::<ClusterKind>();
        schemars::json_schema!({
            "anyOf": [one, { "type": "array", "items": one }],
            "description": "A kind of cluster (\"docker\") or a list of them.",
        })
    }
}

impl<'de> Deserialize<'de> for ClusterKinds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Kinds;
        impl<'de> serde::de::Visitor<'de> for Kinds {
            type Value = ClusterKinds;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a cluster kind (\"docker\") or a list of them")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ClusterKinds, E> {
                ClusterKind::deserialize(s.into_deserializer()).map(|k| ClusterKinds(vec![k]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ClusterKinds, A::Error> {
                let mut kinds = Vec::new();
                while let Some(k) = seq.next_element::<ClusterKind>()? {
                    if !kinds.contains(&k) {
                        kinds.push(k);
                    }
                }
                Ok(ClusterKinds(kinds))
            }
        }
        d.deserialize_any(Kinds)
    }
}

/// An expected latency, read by the one unit module: "850us", "1.2ms", "0.5 ms".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyValue {
    us: f64,
}

impl LatencyValue {
    pub fn us(self) -> f64 {
        self.us
    }
}

impl FromStr for LatencyValue {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().parse::<f64>().is_ok() {
            // A bare number is seconds to the unit module, which would make "850" 14 minutes.
            return Err(InvalidValue(format!(
                "invalid latency {s:?}: write its unit, such as \"850us\" or \"1.2ms\""
            )));
        }
        let d = orchestrate_worker::units::parse_duration(&s.replace(' ', ""))
            .map_err(|e| InvalidValue(e.to_string()))?;
        if d.is_zero() {
            return Err(InvalidValue(format!(
                "invalid latency {s:?}: must be above zero"
            )));
        }
        Ok(LatencyValue {
            us: d.as_secs_f64() * 1e6,
        })
    }
}

impl fmt::Display for LatencyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} µs", self.us)
    }
}

impl<'de> Deserialize<'de> for LatencyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for LatencyValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Latency".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A latency with its unit, e.g. \"850us\", \"1.2ms\".",
        })
    }
}

/// A signed share of a value: "-10%", "+12.5%", "0%".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deviation {
    fraction: f64,
}

impl Deviation {
    pub fn fraction(self) -> f64 {
        self.fraction
    }
}

impl FromStr for Deviation {
    type Err = InvalidValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            InvalidValue(format!(
                "invalid bound {s:?}: expected a signed percentage such as \"-10%\" or \"+10%\""
            ))
        };
        let num = s.trim().strip_suffix('%').ok_or_else(bad)?.trim();
        let v: f64 = num.parse().map_err(|_| bad())?;
        if !v.is_finite() || v < -100.0 {
            return Err(InvalidValue(format!(
                "invalid bound {s:?}: a measurement cannot lie more than 100% below its value"
            )));
        }
        Ok(Deviation {
            fraction: v / 100.0,
        })
    }
}

impl fmt::Display for Deviation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = (self.fraction * 1e6).round() / 1e4;
        write!(f, "{p:+}%")
    }
}

impl<'de> Deserialize<'de> for Deviation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Deviation {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Deviation".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^ ?[-+]?[0-9.]+ ?%$",
            "description": "A signed percentage of the expected value, e.g. \"-10%\", \"+10%\".",
        })
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
            "pattern": "^\\s*[0-9.]+\\s*[kKmMgG]?[bB][iI][tT](/s)?\\s*$",
            "description": "Throughput with its unit, e.g. \"31.6 Mbit/s\" or \"31.6mbit\" (10^6 bit/s).",
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

/// The `[[reference]]` tables of an experiment file and its cluster's kind, nothing else, so
/// a report can read them from a run's copy of the experiment without loading its topologies.
#[derive(Debug, Default, Deserialize)]
pub struct ReferencesOnly {
    #[serde(default)]
    pub reference: Vec<ReferenceSpec>,
    #[serde(default)]
    cluster: ClusterKindOnly,
}

impl ReferencesOnly {
    /// The kind of cluster the experiment ran on.
    pub fn cluster_kind(&self) -> ClusterKind {
        self.cluster.kind
    }
}

/// `[cluster]`'s `kind`, the rest ignored (the experiment was validated when it ran).
#[derive(Debug, Default, Deserialize)]
struct ClusterKindOnly {
    #[serde(default)]
    kind: ClusterKind,
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

    fn references(text: &str) -> Result<Vec<ReferenceSpec>, String> {
        super::super::located::SourceFile::new("e.toml", text)
            .parse::<ReferencesOnly>()
            .map(|r| r.reference)
            .map_err(|e| e.render())
    }

    const CELL: &str =
        "[[reference]]\ntopology = \"m\"\npattern = \"token\"\nsize = 64\npairs = 1\n";

    #[test]
    fn a_reference_reads_as_reframe_has_it() {
        let r = &references(&format!(
            "{CELL}cluster = \"netns\"\nthroughput = \"20 Mbit/s\"\nlower = \"-10%\"\nupper = \"+5%\"\n"
        ))
        .unwrap()[0];
        assert_eq!(r.expected.value(), 20.0);
        assert_eq!(r.expected.unit(), "Mbit/s");
        let (lo, hi) = r.bounds.around(20.0);
        assert!((lo.unwrap() - 18.0).abs() < 1e-9 && (hi.unwrap() - 21.0).abs() < 1e-9);
        assert_eq!(r.bounds.text(), "-10% … +5%");
        assert!(r.applies_to(ClusterKind::Netns));
        assert!(!r.applies_to(ClusterKind::Docker));

        let r = &references(&format!(
            "{CELL}cluster = [\"docker\", \"netns\"]\nlatency = \"850us\"\nupper = \"+25%\"\n"
        ))
        .unwrap()[0];
        assert_eq!(r.expected, Expected::Latency(LatencyValue { us: 850.0 }));
        assert_eq!(r.bounds.around(850.0), (None, Some(1062.5)));
        assert!(r.applies_to(ClusterKind::Docker) && !r.applies_to(ClusterKind::Slurm));
        assert_eq!(
            "1.2 ms".parse::<LatencyValue>().unwrap().us(),
            1200.0,
            "a space before the unit is read as papers write it"
        );
    }

    #[test]
    fn the_first_spelling_means_a_lower_bound_for_every_cluster() {
        let r =
            &references(&format!("{CELL}value = \"9.5mbit\"\ntolerance = \"5%\"\n")).unwrap()[0];
        assert_eq!(
            r.expected,
            Expected::Throughput("9.5 Mbit/s".parse().unwrap())
        );
        assert_eq!(r.bounds.lower(), Some(-0.05));
        assert_eq!(r.bounds.upper(), None);
        assert!(r.cluster.is_empty() && r.applies_to(ClusterKind::Inventory));
    }

    #[test]
    fn a_reference_that_cannot_be_checked_is_refused_with_what_to_write() {
        for (body, says) in [
            ("throughput = \"1mbit\"\n", "needs a bound"),
            ("lower = \"-5%\"\n", "needs the figure it expects"),
            (
                "throughput = \"1mbit\"\nlatency = \"1ms\"\nlower = \"-5%\"\n",
                "not both",
            ),
            (
                "throughput = \"1mbit\"\nvalue = \"1mbit\"\nlower = \"-5%\"\n",
                "not both",
            ),
            ("throughput = \"1mbit\"\nlower = \"5%\"\n", "write \"-5%\""),
            ("throughput = \"1mbit\"\nupper = \"-5%\"\n", "write \"+5%\""),
            (
                "throughput = \"1mbit\"\nlower = \"-5%\"\ntolerance = \"5%\"\n",
                "not both",
            ),
            (
                "throughput = \"1mbit\"\nlower = \"-150%\"\n",
                "more than 100% below",
            ),
            ("latency = \"850\"\nupper = \"+5%\"\n", "write its unit"),
            ("latency = \"0ms\"\nupper = \"+5%\"\n", "above zero"),
        ] {
            let e = references(&format!("{CELL}{body}")).unwrap_err();
            // miette wraps long messages: read them as one line.
            let flat = e
                .split_whitespace()
                .filter(|w| *w != "│")
                .collect::<Vec<_>>()
                .join(" ");
            assert!(flat.contains(says), "{body:?}: {e}");
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
