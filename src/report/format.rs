//! Number and size formatting shared by every output, fixed so that outputs are byte-stable.

/// A size in binary units: `4 B`, `8 KiB`, `1.5 KiB`, `2 MiB` (the 1996 study's and NetPIPE's
/// "KB" was 1024 bytes too; the IEC names say so without a footnote).
pub fn size(bytes: u64) -> String {
    const K: u64 = 1024;
    let (unit, div) = if bytes >= K * K && bytes % (K * K / 2) == 0 {
        ("MiB", K * K)
    } else if bytes >= K && bytes % (K / 2) == 0 {
        ("KiB", K)
    } else {
        return format!("{bytes} B");
    };
    let v = bytes as f64 / div as f64;
    if v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// An axis tick for a size, with its unit: `1 B`, `64 B`, `1 KiB`, `16 KiB`, `1 MiB`. Ticks
/// fall on powers of two, so they are whole numbers of their unit.
pub fn size_tick(bytes: f64) -> String {
    let b = bytes.round();
    if b >= 1048576.0 && (b / 1048576.0).fract() == 0.0 {
        format!("{} MiB", b / 1048576.0)
    } else if b >= 1024.0 && (b / 1024.0).fract() == 0.0 {
        format!("{} KiB", b / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// A rate or latency for people: three significant digits, never exponent notation.
pub fn human(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A ratio: `3.9×`, `0.52×`.
pub fn ratio(r: f64) -> String {
    if r >= 1.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

/// A ratio between two measurements to two decimals, as comparisons give it: `1.04×`.
pub fn times(r: f64) -> String {
    format!("{r:.2}×")
}

/// A number for CSV: fixed decimals so that re-runs and platforms agree byte for byte.
pub fn csv_f64(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.4}")).unwrap_or_default()
}

/// A percentage such as a confidence level: `95%`, `93.8%`.
pub fn percent(p: f64) -> String {
    let v = p * 100.0;
    if (v - v.round()).abs() < 0.05 {
        format!("{v:.0}%")
    } else {
        format!("{v:.1}%")
    }
}

/// A Unix time in ns as an ISO-8601 UTC timestamp (no time zone database needed).
pub fn unix_ns(ns: u64) -> String {
    let secs = (ns / 1_000_000_000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Escapes `|` so text can sit in a Markdown table cell.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A CSV field, quoted when it must be.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// `Best` for `best`: a word opening a sentence.
pub fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size(4), "4 B");
        assert_eq!(size(8192), "8 KiB");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(1027), "1027 B");
        assert_eq!(size(2 << 20), "2 MiB");
        assert_eq!(size_tick(65536.0), "64 KiB");
        assert_eq!(size_tick(4.0), "4 B");
        assert_eq!(size_tick(1048576.0), "1 MiB");
    }

    #[test]
    fn numbers() {
        assert_eq!(human(6.3049), "6.30");
        assert_eq!(human(48.44), "48.4");
        assert_eq!(ratio(3.94), "3.9×");
        assert_eq!(ratio(0.517), "0.52×");
        assert_eq!(percent(0.9375), "93.8%");
        assert_eq!(percent(0.5), "50%");
    }

    #[test]
    fn timestamps() {
        assert_eq!(unix_ns(0), "1970-01-01T00:00:00Z");
        assert_eq!(unix_ns(1_796_000_000_000_000_000), "2026-11-30T00:53:20Z");
    }
}
