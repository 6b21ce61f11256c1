//! NetPIPE's block-size schedule and its classic output format.
//!
//! NetPIPE writes one row per block size: `Time Mbits/s Bits/Block Bytes/Block Variance`, where
//! Time is the one-way time of one block in seconds. Published results (such as the BEAM 1999
//! Beowulf measurements) wrap several such tables in prose; NetPIPE 3.x output files carry only
//! three columns (`bytes Mbit/s seconds`). [`parse`] reads all of these so the report can draw
//! old results beside new ones, and [`write()`] produces the classic five columns.

use std::fmt;
use std::io;

/// One block size as NetPIPE reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetpipeRow {
    /// One-way time for one block, seconds (half a round trip for ping-pong).
    pub time_s: f64,
    /// Payload throughput, 10^6 bits/s.
    pub mbit_s: f64,
    pub bits_per_block: u64,
    pub bytes_per_block: u64,
    /// Variance of the per-block time across trials, s².
    pub variance: f64,
}

/// One table of rows, with what the surrounding text said about it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetpipeTable {
    /// The last line of prose before the table, if any (e.g. "TCP/IP Network performance: ...").
    pub title: Option<String>,
    /// A `Latency: <seconds>` line before the table, if any.
    pub latency_s: Option<f64>,
    pub rows: Vec<NetpipeRow>,
}

impl NetpipeTable {
    /// How many 10^6 bit/s one of the table's "Mbits/s" is. NetPIPE 2.x divided by 2^20
    /// (1.048576), later versions and this project's worker by 10^6 (1.0); a table does not
    /// say which, so its rows do: a block's bits over its time, against the rate printed
    /// beside them, on rows of 100 µs or more (old tables print times to the microsecond).
    pub fn mbit_scale(&self) -> f64 {
        let mut ratios: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| r.time_s >= 1e-4 && r.mbit_s > 0.0)
            .map(|r| r.bits_per_block as f64 / r.time_s / 1e6 / r.mbit_s)
            .collect();
        if ratios.is_empty() {
            return 1.0;
        }
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ratios.len() / 2];
        const BINARY: f64 = 1_048_576.0 / 1e6;
        if (median - BINARY).abs() < 0.005 {
            BINARY
        } else {
            1.0
        }
    }
}

/// A line that looked like a row but was not one.
#[derive(Debug, Clone, PartialEq)]
pub struct NetpipeError {
    /// 1-based line number; 0 when the error concerns the whole text.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for NetpipeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "NetPIPE data: {}", self.message)
        } else {
            write!(f, "NetPIPE data, line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for NetpipeError {}

/// NetPIPE's block sizes from `start` up to `end` bytes.
///
/// This is NetPIPE's own loop: the increment starts at 1 (or `start/2`), doubles every second
/// step after the third, and once it exceeds `perturbation + 1` every base size is also measured
/// `perturbation` bytes below and above. With `start = 1` and a perturbation of 3 this gives
/// 1, 2, 3, 4, 6, 8, 12, 13, 16, 19, 21, 24, 27, 29, 32, 35, 45, 48, 51, ...
pub fn schedule(start: u64, end: u64, perturbation: u64) -> Vec<u64> {
    let start = start.max(1);
    let mut sizes = Vec::new();
    let mut inc: u64 = if start > 1 { start / 2 } else { 1 };
    let mut len = start;
    let mut nq: u64 = 0;
    while len <= end {
        if nq > 2 && nq % 2 == 1 {
            inc += inc;
        }
        if perturbation > 0 && inc > perturbation + 1 {
            for s in [len - perturbation, len, len + perturbation] {
                sizes.push(s);
            }
        } else {
            sizes.push(len);
        }
        len = match len.checked_add(inc) {
            Some(l) => l,
            None => break,
        };
        nq += 1;
    }
    sizes
}

/// Parse NetPIPE output: prose, `Latency:` lines and tables of 5-column (classic) or 3-column
/// (NetPIPE 3.x `np.out`) rows. Rows separated by anything else start a new table.
pub fn parse(text: &str) -> Result<Vec<NetpipeTable>, NetpipeError> {
    let mut tables: Vec<NetpipeTable> = Vec::new();
    let mut pending = NetpipeTable::default();
    let mut in_table = false;
    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        let line = raw.trim();
        if line.is_empty() {
            in_table = false;
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let first_numeric = fields[0].parse::<f64>().is_ok();
        if first_numeric {
            let row = parse_row(&fields).map_err(|message| NetpipeError {
                line: lineno,
                message,
            })?;
            if !in_table {
                tables.push(std::mem::take(&mut pending));
                in_table = true;
            }
            tables
                .last_mut()
                .expect("table pushed above")
                .rows
                .push(row);
            continue;
        }
        in_table = false;
        if let Some(rest) = line.strip_prefix("Latency:") {
            let v = rest.trim().parse::<f64>().map_err(|_| NetpipeError {
                line: lineno,
                message: format!("latency {:?} is not a number of seconds", rest.trim()),
            })?;
            pending.latency_s = Some(v);
        } else if is_column_header(&fields) {
            // The column names carry no data.
        } else {
            pending.title = Some(line.to_string());
            pending.latency_s = None;
        }
    }
    if tables.is_empty() {
        return Err(NetpipeError {
            line: 0,
            message: "no rows found (expected lines of `Time Mbits/s Bits/Block Bytes/Block \
                      Variance` or `bytes Mbit/s seconds`)"
                .into(),
        });
    }
    Ok(tables)
}

fn is_column_header(fields: &[&str]) -> bool {
    fields
        .first()
        .is_some_and(|f| f.eq_ignore_ascii_case("time"))
        && fields.iter().any(|f| f.eq_ignore_ascii_case("mbits/s"))
}

fn parse_row(fields: &[&str]) -> Result<NetpipeRow, String> {
    let num = |i: usize| -> Result<f64, String> {
        fields[i]
            .parse::<f64>()
            .map_err(|_| format!("column {} ({:?}) is not a number", i + 1, fields[i]))
    };
    let int = |i: usize| -> Result<u64, String> {
        let v = num(i)?;
        if v < 0.0 || v.fract() != 0.0 {
            return Err(format!(
                "column {} ({:?}) is not a whole count",
                i + 1,
                fields[i]
            ));
        }
        Ok(v as u64)
    };
    match fields.len() {
        5 => Ok(NetpipeRow {
            time_s: num(0)?,
            mbit_s: num(1)?,
            bits_per_block: int(2)?,
            bytes_per_block: int(3)?,
            variance: num(4)?,
        }),
        3 => {
            let bytes = int(0)?;
            Ok(NetpipeRow {
                time_s: num(2)?,
                mbit_s: num(1)?,
                bits_per_block: bytes * 8,
                bytes_per_block: bytes,
                variance: 0.0,
            })
        }
        n => Err(format!(
            "expected 5 columns (Time Mbits/s Bits/Block Bytes/Block Variance) or 3 \
             (bytes Mbit/s seconds), found {n}"
        )),
    }
}

/// Write rows in NetPIPE's classic five columns, one per line, no header (as NetPIPE does).
///
/// Times get nanosecond resolution rather than NetPIPE's microseconds: today's latencies are
/// a few microseconds and six decimals would round them away. Readers parse both.
pub fn write(rows: &[NetpipeRow], out: &mut impl io::Write) -> io::Result<()> {
    for r in rows {
        write_row(r, out)?;
    }
    Ok(())
}

/// Write one row (used to stream rows as sizes complete).
pub fn write_row(r: &NetpipeRow, out: &mut impl io::Write) -> io::Result<()> {
    writeln!(
        out,
        "{:.9} {:.6} {} {} {:.6e}",
        r.time_s, r.mbit_s, r.bits_per_block, r.bytes_per_block, r.variance
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_starts_like_netpipe() {
        assert_eq!(
            schedule(1, 64, 3),
            vec![
                1, 2, 3, 4, 6, 8, 12, 13, 16, 19, 21, 24, 27, 29, 32, 35, 45, 48, 51, 61, 64, 67
            ]
        );
        assert_eq!(schedule(1, 16, 0), vec![1, 2, 3, 4, 6, 8, 12, 16]);
    }

    #[test]
    fn three_column_rows() {
        let t = parse("       1       0.123   0.00006200\n       2  0.25 0.000062\n").unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].rows[1].bytes_per_block, 2);
        assert_eq!(t[0].rows[1].bits_per_block, 16);
        assert_eq!(t[0].rows[1].time_s, 0.000062);
    }

    #[test]
    fn bad_rows_name_their_line() {
        let e = parse("title\n1 2 0.3\n0.1 2 x 4 5\n").unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse("1 2 3 4\n").unwrap_err();
        assert!(e.message.contains("found 4"), "{e}");
        assert!(parse("just prose\n").is_err());
    }
}
