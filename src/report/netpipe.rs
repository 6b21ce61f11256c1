//! NetPIPE classic output as a named baseline to draw beside a run.
//!
//! Parsing is the worker crate's NetPIPE module (`orchestrate_worker::netpipe`), the same code
//! that writes the format.

use std::path::Path;

use super::error::ReportError;

use orchestrate_worker::netpipe as np;

pub use np::NetpipeTable;

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
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
