//! The one place sizes, rates and durations are read, for specs, references, command-line
//! flags and the worker's requests alike, so that a spelling means the same everywhere.
//!
//! **Rates** are bits per second: a number, then `bit`, `kbit`, `mbit` or `gbit` in any case,
//! with or without `/s` and a space: `10mbit`, `10Mbit`, `10 Mbit/s` and `10Mbit/s` are all
//! 10^7 bit/s. Prefixes are decimal, as for every network rate. `bps`, `kbps`, `mbps` and
//! `gbps` are refused: tc reads them as *bytes* per second, papers as bits, so either reading
//! would surprise someone; so are byte rates (`MB/s`).
//!
//! **Sizes** are bytes: a whole number, bare or with `B`; `KiB`, `MiB`, `GiB` (IEC, powers of
//! 1024); or a bare `K`, `M`, `G` (either case), also powers of 1024, as iperf3, netperf and dd
//! read `-l 8K`. `kB`, `KB`, `MB` and `GB` are refused: some tools read them as powers of 1000,
//! others (and the 1996 study's tables) as 1024.
//!
//! **Durations** are humantime's (`2s`, `500ms`, `1m 30s`) or a bare number of seconds.
//!
//! Errors say what was expected in these terms, and for the refused spellings what to write
//! instead.

use std::fmt;
use std::time::Duration;

/// A value that is not a size, rate or duration, with what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

impl From<UnitError> for String {
    fn from(e: UnitError) -> String {
        e.0
    }
}

/// The rate spellings, for messages.
pub const RATE_EXAMPLES: &str = "\"10mbit\", \"10 Mbit/s\", \"1gbit\" or \"512kbit\"";
/// The size spellings, for messages.
pub const SIZE_EXAMPLES: &str = "8192, \"8KiB\", \"8K\" or \"2MiB\"";

/// Splits `12.5 Mbit/s` into `12.5` and `Mbit/s`.
fn number_and_unit(t: &str) -> (&str, &str) {
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    (num, unit.trim())
}

/// Bits per second from a rate as the module documentation spells it; above zero and finite.
pub fn parse_bit_rate(s: &str) -> Result<f64, UnitError> {
    let t = s.trim();
    let bad = |why: String| UnitError(format!("invalid rate {s:?}: {why}"));
    let (num, unit) = number_and_unit(t);
    if num.is_empty() {
        return Err(bad(format!(
            "expected a number and a unit such as {RATE_EXAMPLES}"
        )));
    }
    let lower = unit.to_ascii_lowercase();
    let per_second = lower.strip_suffix("/s").unwrap_or(&lower).trim_end();
    let multiplier = match per_second {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "" => {
            return Err(bad(format!(
                "no unit; expected a number and a unit such as {RATE_EXAMPLES}"
            )));
        }
        "bps" | "kbps" | "mbps" | "gbps" => {
            let prefix = &per_second[..per_second.len() - 3];
            return Err(bad(format!(
                "{unit:?} is bytes per second to tc and bits per second to most papers; did you \
                 mean \"{num}{prefix}bit\" ({num} {}bit/s)? For bytes, write bits: 1 MB/s = 8 \
                 Mbit/s",
                prefix.to_ascii_uppercase().replace('K', "k")
            )));
        }
        _ if unit.contains('B') => {
            return Err(bad(
                "bytes per second are ambiguous (10^6 or 2^20 bytes?); write bits: 1 MB/s = 8 \
                 Mbit/s"
                    .into(),
            ));
        }
        _ => {
            return Err(bad(format!(
                "unknown unit {unit:?}; expected one such as {RATE_EXAMPLES}"
            )));
        }
    };
    let value: f64 = num
        .parse()
        .map_err(|_| bad(format!("{num:?} is not a number")))?;
    let bits = value * multiplier;
    if !(bits.is_finite() && bits > 0.0) {
        return Err(bad("a rate must be above zero".into()));
    }
    Ok(bits)
}

/// Bytes from a size as the module documentation spells it.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    let bad = |why: String| UnitError(format!("invalid size {s:?}: {why}"));
    let (num, unit) = number_and_unit(t);
    let multiplier: u64 = match unit {
        "" | "B" => 1,
        u if u.eq_ignore_ascii_case("kib") || u == "K" || u == "k" => 1 << 10,
        u if u.eq_ignore_ascii_case("mib") || u == "M" || u == "m" => 1 << 20,
        u if u.eq_ignore_ascii_case("gib") || u == "G" || u == "g" => 1 << 30,
        u if u.eq_ignore_ascii_case("kb")
            || u.eq_ignore_ascii_case("mb")
            || u.eq_ignore_ascii_case("gb") =>
        {
            let binary = format!("{}iB", u[..1].to_ascii_uppercase());
            let decimal = match u[..1].to_ascii_lowercase().as_str() {
                "k" => "000",
                "m" => "000000",
                _ => "000000000",
            };
            return Err(bad(format!(
                "{u:?} means 1000 to some tools and 1024 to others; did you mean \
                 \"{num}{binary}\" (powers of 1024), or {num}{decimal} bytes?"
            )));
        }
        _ => {
            return Err(bad(format!(
                "unknown unit {unit:?}; expected a byte count such as {SIZE_EXAMPLES}"
            )));
        }
    };
    if num.is_empty() {
        return Err(bad(format!(
            "expected a byte count such as {SIZE_EXAMPLES}"
        )));
    }
    let n: u64 = num.parse().map_err(|_| {
        bad(format!(
            "{num:?} is not a whole number of bytes (write \"1536KiB\", not \"1.5MiB\")"
        ))
    })?;
    n.checked_mul(multiplier)
        .ok_or_else(|| bad("too large".into()))
}

/// A duration: humantime's spelling (`2s`, `500ms`, `1m 30s`) or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let t = s.trim();
    let bad = || {
        UnitError(format!(
            "invalid duration {s:?}: expected e.g. \"10s\", \"500ms\", \"1m 30s\" or a number \
             of seconds"
        ))
    };
    if let Ok(secs) = t.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| bad());
    }
    humantime::parse_duration(t).map_err(|_| bad())
}

/// Offered rate in messages per second for messages of `size` bytes: a plain number is
/// messages per second (`20000`, `500/s`), a bit rate ([`parse_bit_rate`]) is converted.
pub fn parse_rate(s: &str, size: u64) -> Result<f64, String> {
    let t = s.trim();
    let plain = t.strip_suffix("/s").unwrap_or(t).trim();
    if let Ok(v) = plain.parse::<f64>() {
        if v.is_finite() && v > 0.0 {
            return Ok(v);
        }
        return Err(format!(
            "{s:?} is not a rate: messages per second must be above zero"
        ));
    }
    let bits = parse_bit_rate(t)?;
    Ok(bits / (size as f64 * 8.0))
}

/// A positive number of seconds; `what` names the option in the error.
pub fn secs(s: f64, what: &str) -> Result<Duration, String> {
    if s.is_finite() && s > 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(format!("{what} must be a positive number of seconds"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_ten_megabits_is_ten_megabits() {
        for s in [
            "10mbit",
            "10Mbit",
            "10MBIT",
            "10 Mbit/s",
            "10Mbit/s",
            "10 mbit/s",
            " 10mbit ",
            "0.01gbit",
            "10000kbit",
            "10000 kbit/s",
            "10000000bit",
            "10000000 bit/s",
        ] {
            assert_eq!(parse_bit_rate(s), Ok(1e7), "{s:?}");
        }
        assert_eq!(parse_bit_rate("31.6 Mbit/s"), Ok(31.6e6));
    }

    #[test]
    fn byte_rates_and_bps_are_refused_with_what_to_write() {
        let err = parse_bit_rate("10mbps").unwrap_err().to_string();
        assert!(err.contains("did you mean \"10mbit\""), "{err}");
        assert!(err.contains("bytes per second to tc"), "{err}");
        let err = parse_bit_rate("100 Kbps").unwrap_err().to_string();
        assert!(err.contains("did you mean \"100kbit\""), "{err}");
        for s in ["10 MB/s", "1GB/s"] {
            let err = parse_bit_rate(s).unwrap_err().to_string();
            assert!(err.contains("write bits"), "{s:?}: {err}");
        }
        for s in [
            "10",
            "mbit",
            "10 mb",
            "-1mbit",
            "0mbit",
            "10mbit;reboot",
            "1..2mbit",
            "",
        ] {
            assert!(parse_bit_rate(s).is_err(), "{s:?} accepted");
        }
    }

    #[test]
    fn sizes_follow_one_rule() {
        for (s, bytes) in [
            ("64", 64),
            ("64B", 64),
            ("64 B", 64),
            ("8KiB", 8192),
            ("8 KiB", 8192),
            ("8kib", 8192),
            ("8K", 8192),
            ("8k", 8192),
            ("2MiB", 2 << 20),
            ("2M", 2 << 20),
            ("1GiB", 1 << 30),
            ("2g", 2 << 30),
        ] {
            assert_eq!(parse_size(s), Ok(bytes), "{s:?}");
        }
        for ambiguous in ["8KB", "8kB", "2MB", "1GB", "8kb"] {
            let err = parse_size(ambiguous).unwrap_err().to_string();
            assert!(err.contains("did you mean"), "{ambiguous:?}: {err}");
        }
        assert!(
            parse_size("8KB")
                .unwrap_err()
                .to_string()
                .contains("\"8KiB\""),
            "the binary spelling is offered"
        );
        for bad in ["1.5M", "12parsecs", "99999999999999G", "KiB", "-1", ""] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn durations_in_words_or_seconds() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("0.25"), Ok(Duration::from_millis(250)));
        for bad in ["soon", "-1", "2 fortnights"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn rates_in_messages_or_bits() {
        assert_eq!(parse_rate("20000", 100), Ok(20000.0));
        assert_eq!(parse_rate("500/s", 100), Ok(500.0));
        // 8 Mbit/s of 1000-byte messages: 1000 messages per second.
        assert_eq!(parse_rate("8mbit", 1000), Ok(1000.0));
        assert_eq!(parse_rate("8 Mbit/s", 1000), Ok(1000.0));
        assert_eq!(parse_rate("1gbit", 125), Ok(1e6));
        assert_eq!(parse_rate("64kbit", 8), Ok(1000.0));
        assert!(parse_rate("0", 8).is_err());
        assert!(parse_rate("fast", 8).is_err());
        assert!(parse_rate("-5mbit", 8).is_err());
        assert!(
            parse_rate("8mbps", 1000)
                .unwrap_err()
                .contains("did you mean")
        );
    }
}
