//! Sizes, rates and times as people write them on command lines and in requests: `64K`,
//! `1MiB`, `100mbit`, `20000` (messages per second), `0.25` (seconds).

use std::time::Duration;

/// Bytes from a whole number with an optional binary suffix (K, KiB, M, MiB, G, GiB).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size in bytes"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("{s:?}: unknown size unit {unit:?}")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// Offered rate in messages per second for messages of `size` bytes: a plain number is
/// messages per second, a `bit`, `kbit`, `mbit` or `gbit` suffix is a bit rate.
pub fn parse_rate(s: &str, size: u64) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || format!("{s:?} is not a rate (e.g. 20000, 100mbit, 1gbit)");
    let (num, mult_bits) = if let Some(n) = t.strip_suffix("gbit") {
        (n, Some(1e9))
    } else if let Some(n) = t.strip_suffix("mbit") {
        (n, Some(1e6))
    } else if let Some(n) = t.strip_suffix("kbit") {
        (n, Some(1e3))
    } else if let Some(n) = t.strip_suffix("bit") {
        (n, Some(1.0))
    } else {
        (t.strip_suffix("/s").unwrap_or(&t), None)
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(v.is_finite() && v > 0.0) {
        return Err(bad());
    }
    Ok(match mult_bits {
        Some(m) => v * m / (size as f64 * 8.0),
        None => v,
    })
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
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert!(parse_size("1.5M").is_err());
        assert!(parse_size("12parsecs").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }

    #[test]
    fn rates_in_messages_or_bits() {
        assert_eq!(parse_rate("20000", 100), Ok(20000.0));
        assert_eq!(parse_rate("500/s", 100), Ok(500.0));
        // 8 Mbit/s of 1000-byte messages: 1000 messages per second.
        assert_eq!(parse_rate("8mbit", 1000), Ok(1000.0));
        assert_eq!(parse_rate("1gbit", 125), Ok(1e6));
        assert_eq!(parse_rate("64kbit", 8), Ok(1000.0));
        assert!(parse_rate("0", 8).is_err());
        assert!(parse_rate("fast", 8).is_err());
        assert!(parse_rate("-5mbit", 8).is_err());
    }
}
