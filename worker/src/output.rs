//! Where a client's results go: JSON lines (one record per trial and side) or NetPIPE's classic
//! columns (one row per block size, the best trial). Written between trials, never inside one.

use std::io::Write;

use crate::netpipe::{self, NetpipeRow};
use crate::record::{Pattern, Record, Role};

/// Also the value of the worker's `--format` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Netpipe,
}

/// Writes a client's records in the chosen [`Format`], and the lines around them.
pub struct ClientOutput<W: Write> {
    out: W,
    format: Format,
    /// One-way time per block of each trial of the current size, seconds.
    times: Vec<f64>,
    size: u64,
}

impl<W: Write> ClientOutput<W> {
    pub fn new(out: W, format: Format) -> Self {
        ClientOutput {
            out,
            format,
            times: Vec::new(),
            size: 0,
        }
    }

    /// A line that is not a record (the `ready` line); always JSON, always flushed.
    pub fn line(&mut self, v: &serde_json::Value) {
        let _ = writeln!(self.out, "{v}");
        let _ = self.out.flush();
    }

    /// The records of one finished trial: the client's and the server's.
    pub fn trial(&mut self, client: &Record, server: Option<&Record>) {
        match self.format {
            Format::Json => {
                self.record(client);
                if let Some(s) = server {
                    self.record(s);
                }
            }
            Format::Netpipe => {
                if client.error.is_some() {
                    return;
                }
                self.size = client.size_bytes;
                // Ping-pong: half the round trip. Stream: the receiver's time per block.
                let t = match (client.pattern, server) {
                    (Pattern::Stream, Some(s)) if s.messages > 0 => {
                        s.elapsed_ns as f64 / s.messages as f64 / 1e9
                    }
                    _ => client.latency_us.unwrap_or(0.0) / 1e6,
                };
                self.times.push(t);
            }
        }
    }

    /// Every trial of one size is done: write its NetPIPE row (the fastest trial).
    pub fn size_done(&mut self) {
        if self.format != Format::Netpipe || self.times.is_empty() {
            return;
        }
        let min = self.times.iter().copied().fold(f64::INFINITY, f64::min);
        let n = self.times.len() as f64;
        let mean = self.times.iter().sum::<f64>() / n;
        let variance = self.times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / n;
        let row = NetpipeRow {
            time_s: min,
            mbit_s: if min > 0.0 {
                self.size as f64 * 8.0 / min / 1e6
            } else {
                0.0
            },
            bits_per_block: self.size * 8,
            bytes_per_block: self.size,
            variance,
        };
        let _ = netpipe::write_row(&row, &mut self.out);
        let _ = self.out.flush();
        self.times.clear();
    }

    /// A failure: a JSON error record, or for NetPIPE output a message on stderr.
    pub fn error(&mut self, rec: &Record) {
        match self.format {
            Format::Json => self.record(rec),
            Format::Netpipe => {
                let _ = writeln!(
                    std::io::stderr(),
                    "orchestrate-worker: {}",
                    rec.error.as_deref().unwrap_or("failed")
                );
            }
        }
    }

    fn record(&mut self, r: &Record) {
        if let Ok(s) = serde_json::to_string(r) {
            let _ = writeln!(self.out, "{s}");
            let _ = self.out.flush();
        }
    }
}

/// Server-side records (with `serve --records`), one JSON line each.
pub fn print_server_record(r: &Record) {
    debug_assert_eq!(r.role, Role::Server);
    if let Ok(s) = serde_json::to_string(r) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{s}");
        let _ = out.flush();
    }
}
