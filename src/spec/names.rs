//! Typed values that may reach a command line: node, interface and segment names, rates and
//! sizes. Each is validated when parsed, so nothing that could break out of a quoted shell
//! word (`;`, `$()`, spaces, quotes) survives into a rendered script.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use orchestrate_worker::units;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a name or value was rejected; the message says what form was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidValue(pub String);

macro_rules! string_name {
    ($(#[$doc:meta])* $ty:ident, $what:literal, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $ty(String);

        impl $ty {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $ty {
            type Err = InvalidValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                check_name(s, $what, $max).map(|()| $ty(s.to_owned()))
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
                    "maxLength": $max,
                    "description": concat!("A ", $what, ": letters, digits, '_', '.', '-'; starts with a letter or digit."),
                })
            }
        }
    };
}

fn check_name(s: &str, what: &str, max: usize) -> Result<(), InvalidValue> {
    let ok_first = s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    let ok_rest = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if s.is_empty() || !ok_first || !ok_rest || s.len() > max {
        return Err(InvalidValue(format!(
            "invalid {what} {s:?}: expected 1 to {max} characters of letters, digits, '_', '.' \
             or '-', starting with a letter or digit"
        )));
    }
    Ok(())
}

string_name!(
    /// A node's logical name, as the topology and the inventory call it.
    NodeName, "node name", 63
);
string_name!(
    /// A Linux network interface name (at most 15 bytes, the kernel's IFNAMSIZ - 1).
    IfName, "interface name", 15
);

impl IfName {
    /// The loopback device every network namespace has: it carries a node's traffic to itself
    /// and reaches no other node, so it can be neither a wire nor a bond.
    pub fn is_loopback(&self) -> bool {
        self.0 == "lo"
    }
}
string_name!(
    /// The name of a segment, switch, network or topology.
    Name, "name", 63
);

/// A link rate in bits per second, written like tc does (`10mbit`, `100Mbit`, `1gbit`,
/// `64kbit`) or as papers do (`10 Mbit/s`): see `orchestrate_worker::units`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rate {
    bits_per_s: u64,
}

impl Rate {
    pub const fn from_bits_per_s(bits_per_s: u64) -> Rate {
        Rate { bits_per_s }
    }
    pub fn bits_per_s(self) -> u64 {
        self.bits_per_s
    }

    /// As a paper writes it, in the largest unit that keeps an integer: `10 Mbit/s`,
    /// `1 Gbit/s`, `640 kbit/s` (tc's `10mbit` is [`Display`](fmt::Display)'s).
    pub fn paper_form(self) -> String {
        let b = self.bits_per_s;
        for (unit, div) in [
            ("Gbit/s", 1_000_000_000),
            ("Mbit/s", 1_000_000),
            ("kbit/s", 1_000),
        ] {
            if b % div == 0 {
                return format!("{} {unit}", b / div);
            }
        }
        format!("{b} bit/s")
    }
}

impl FromStr for Rate {
    type Err = InvalidValue;
    /// Read by the one unit module (`orchestrate_worker::units`): `10mbit`, `10 Mbit/s`, ...
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bits = units::parse_bit_rate(s)
            .map_err(|e| InvalidValue(e.to_string()))?
            .round();
        if !(1.0..=1e13).contains(&bits) {
            return Err(InvalidValue(format!(
                "rate {s:?} is out of range: expected between 1bit and 10000gbit"
            )));
        }
        Ok(Rate::from_bits_per_s(bits as u64))
    }
}

impl fmt::Display for Rate {
    /// Renders in tc's syntax, choosing the largest unit that keeps an integer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bits_per_s;
        for (unit, div) in [
            ("gbit", 1_000_000_000),
            ("mbit", 1_000_000),
            ("kbit", 1_000),
        ] {
            if b % div == 0 {
                return write!(f, "{}{unit}", b / div);
            }
        }
        write!(f, "{b}bit")
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Rate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Rate".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^\\s*[0-9.]+\\s*[kKmMgG]?[bB][iI][tT](/s)?\\s*$",
            "description": "A rate in bits per second, e.g. \"10mbit\" or \"10 Mbit/s\" (not \"mbps\", which tc reads as bytes).",
        })
    }
}

/// A byte count written as an integer or with a binary unit: `8192`, `"8KiB"`, `"8K"`,
/// `"2MiB"` (see `orchestrate_worker::units`; `"8KB"` is refused as ambiguous).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = InvalidValue;
    /// Read by the one unit module (`orchestrate_worker::units`): `8192`, `8KiB`, `8K`, ...
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        units::parse_size(s)
            .map(ByteSize)
            .map_err(|e| InvalidValue(e.to_string()))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl schemars::JsonSchema for ByteSize {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteSize".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [
                {"type": "integer", "minimum": 0},
                {"type": "string", "pattern": "^\\s*[0-9]+\\s*(B|[kKmMgG]|[kKmMgG][iI][bB])?\\s*$"}
            ],
            "description": "Bytes: an integer, or a string with a binary unit (\"8KiB\", \"8K\": 8192).",
        })
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, div) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
            if b >= div && b % div == 0 {
                return write!(f, "{}{unit}", b / div);
            }
        }
        write!(f, "{b}B")
    }
}

/// A duration written for people: "10s", "500ms", "2m".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        units::parse_duration(&s)
            .map(HumanDuration)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_reject_shell_metacharacters() {
        for bad in [
            "", "a b", "a;b", "$(x)", "a'b", "a\"b", "-x", "a/b", "`x`", "a\nb",
        ] {
            assert!(bad.parse::<NodeName>().is_err(), "{bad:?} accepted");
        }
        assert!("n01".parse::<NodeName>().is_ok());
        assert!("eth1.100".parse::<IfName>().is_ok());
        assert!("abcdefghijklmnop".parse::<IfName>().is_err(), "16 bytes");
    }

    #[test]
    fn rates_render_for_a_reader_as_papers_write_them() {
        let paper = |s: &str| s.parse::<Rate>().unwrap().paper_form();
        assert_eq!(paper("10mbit"), "10 Mbit/s");
        assert_eq!(paper("1.5Mbit"), "1500 kbit/s");
        assert_eq!(paper("1gbit"), "1 Gbit/s");
        assert_eq!(paper("1500bit"), "1500 bit/s");
        // What a reader is shown reads back as the same rate.
        assert_eq!(
            paper("100 Mbit/s").parse::<Rate>().unwrap(),
            "100mbit".parse().unwrap()
        );
    }

    #[test]
    fn rates_parse_and_render_in_tc_syntax() {
        let r: Rate = "10mbit".parse().unwrap();
        assert_eq!(r.bits_per_s(), 10_000_000);
        assert_eq!(r.to_string(), "10mbit");
        assert_eq!("1.5Mbit".parse::<Rate>().unwrap().to_string(), "1500kbit");
        assert_eq!("1gbit".parse::<Rate>().unwrap().bits_per_s(), 1_000_000_000);
        for bad in [
            "10",
            "mbit",
            "10 mb",
            "-1mbit",
            "0mbit",
            "10mbit;reboot",
            "10mbps",
            "1bps",
        ] {
            assert!(bad.parse::<Rate>().is_err(), "{bad:?} accepted");
        }
        // The spellings of papers mean the same.
        for same in ["10 Mbit/s", "10Mbit/s", "10Mbit"] {
            assert_eq!(same.parse::<Rate>().unwrap(), r, "{same:?}");
        }
    }

    #[test]
    fn sizes_accept_integers_and_binary_units() {
        assert_eq!("8KiB".parse::<ByteSize>().unwrap().0, 8192);
        assert_eq!("2MiB".parse::<ByteSize>().unwrap().0, 2 << 20);
        assert_eq!("64".parse::<ByteSize>().unwrap().0, 64);
        assert!(
            "8KB".parse::<ByteSize>().is_err(),
            "decimal units are ambiguous"
        );
        assert_eq!(
            "8K".parse::<ByteSize>().unwrap().0,
            8192,
            "as iperf3 reads it"
        );
        assert_eq!(ByteSize(8192).to_string(), "8KiB");
        assert_eq!(ByteSize(1000).to_string(), "1000B");
    }
}
