//! NetPIPE classic output as a named baseline to draw beside a run.
//!
//! Parsing goes through [`np`], which has the API of the worker crate's NetPIPE module
//! (`orchestrate_worker::netpipe`). Until that module is on this branch a minimal private
//! parser with the same signature stands in; swapping is the one `use` line below.

use std::path::Path;

use super::ReportError;

// Replace with `use orchestrate_worker::netpipe as np;` once the worker's parser is here.
use self::fallback as np;

pub use np::{NetpipeRow, NetpipeTable};

/// A named set of NetPIPE tables, e.g. "1999 cluster, 100 Mbit/s switch".
#[derive(Debug, Clone, PartialEq)]
pub struct NetpipeBaseline {
    pub name: String,
    pub tables: Vec<NetpipeTable>,
}

impl NetpipeBaseline {
    /// Label of one table in a legend: the baseline's name and the table's own title, without
    /// the prose before its last colon ("TCP/IP Network performance: Streaming of ...").
    pub fn table_label(&self, index: usize) -> String {
        match self.tables[index].title.as_deref() {
            Some(t) => {
                let short = t.rsplit(':').next().unwrap_or(t).trim();
                format!("{}: {}", self.name, short)
            }
            None if self.tables.len() == 1 => self.name.clone(),
            None => format!("{}: table {}", self.name, index + 1),
        }
    }
}

/// Reads a NetPIPE output file (classic five-column format) as a baseline named `name`.
pub fn import(name: &str, path: &Path) -> Result<NetpipeBaseline, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReportError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    let tables = np::parse(&text).map_err(|e| ReportError::Netpipe {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if tables.is_empty() {
        return Err(ReportError::Netpipe {
            path: path.to_path_buf(),
            message: "no NetPIPE table found".into(),
        });
    }
    Ok(NetpipeBaseline {
        name: name.to_owned(),
        tables,
    })
}

/// Stand-in NetPIPE parser (to be replaced by `orchestrate_worker::netpipe`).
///
/// Classic output: optional prose, an optional `Latency: <s>` line, an optional header
/// `Time Mbits/s Bits/Block Bytes/Block Variance`, then rows of five numbers. A table ends at
/// the first line that is not a row; its title is the last prose line before it. NPtcp's own
/// output file (rows only) is one untitled table.
pub mod fallback {
    #[derive(Debug, Clone, PartialEq)]
    pub struct NetpipeRow {
        pub time_s: f64,
        pub mbit_s: f64,
        pub bits_per_block: u64,
        pub bytes_per_block: u64,
        pub variance: f64,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct NetpipeTable {
        pub title: Option<String>,
        pub latency_s: Option<f64>,
        pub rows: Vec<NetpipeRow>,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("line {line}: {message}")]
    pub struct NetpipeError {
        pub line: usize,
        pub message: String,
    }

    pub fn parse(text: &str) -> Result<Vec<NetpipeTable>, NetpipeError> {
        let mut tables = Vec::new();
        let mut current: Option<NetpipeTable> = None;
        let mut title: Option<String> = None;
        let mut latency: Option<f64> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let fields: Vec<&str> = line.split_whitespace().collect();
            let numeric = !fields.is_empty() && fields.iter().all(|f| f.parse::<f64>().is_ok());
            if numeric {
                if fields.len() != 5 {
                    return Err(NetpipeError {
                        line: i + 1,
                        message: format!("expected 5 columns, found {}", fields.len()),
                    });
                }
                let f = |k: usize| fields[k].parse::<f64>().unwrap_or(f64::NAN);
                let int = |k: usize| {
                    fields[k].parse::<u64>().map_err(|_| NetpipeError {
                        line: i + 1,
                        message: format!("column {} is not a whole number: {}", k + 1, fields[k]),
                    })
                };
                let row = NetpipeRow {
                    time_s: f(0),
                    mbit_s: f(1),
                    bits_per_block: int(2)?,
                    bytes_per_block: int(3)?,
                    variance: f(4),
                };
                current
                    .get_or_insert_with(|| NetpipeTable {
                        title: title.take(),
                        latency_s: latency.take(),
                        rows: Vec::new(),
                    })
                    .rows
                    .push(row);
                continue;
            }
            if let Some(t) = current.take() {
                tables.push(t);
            }
            if line.is_empty() || line.starts_with("Time ") {
                continue;
            }
            if let Some(v) = line.strip_prefix("Latency:") {
                latency = Some(v.trim().parse().map_err(|_| NetpipeError {
                    line: i + 1,
                    message: format!("latency is not a number: {}", v.trim()),
                })?);
            } else {
                title = Some(line.to_owned());
            }
        }
        tables.extend(current);
        Ok(tables)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_only_file_is_one_untitled_table() {
        let t = np::parse("0.1 1.0 8 1 0.0\n0.2 2.0 16 2 0.0\n").unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].rows.len(), 2);
        assert_eq!(t[0].title, None);
    }

    #[test]
    fn short_rows_are_errors_with_a_line() {
        let e = np::parse("Latency: 0.1\n0.1 1.0 8\n").unwrap_err();
        assert_eq!(e.to_string(), "line 2: expected 5 columns, found 3");
    }
}
