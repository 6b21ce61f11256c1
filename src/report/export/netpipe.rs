//! `netpipe/*.txt`: this run's one-pair curves in NetPIPE's classic output format, so tools
//! and people used to NetPIPE can read them, and so a run can serve as a baseline for another
//! (`--netpipe NAME=run/netpipe/<file>.txt`).
//!
//! One file per configuration and NetPIPE-like measure (ping-pong, stream, token) with data at
//! one pair. Columns as NetPIPE writes them: time per block (one way, s), Mbit/s, bits per
//! block, bytes per block, variance. Time is derived from the headline rate (`bits / rate`,
//! so for `token` it is the exchange time, as the pattern defines its rate); the latency line
//! is the smallest block's time, as in NetPIPE; variance is not aggregated and written as 0.

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::netpipe_curves::curves;

pub struct Netpipe;

impl Exporter for Netpipe {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        Ok(curves(report)
            .into_iter()
            .map(|c| {
                let smallest_time = c.rows[0].2;
                let mut s = String::new();
                let _ = writeln!(s, "{}", c.heading);
                s.push('\n');
                // As NetPIPE does: the latency line is the smallest block's time.
                let _ = writeln!(s, "Latency: {smallest_time:.6}");
                s.push_str("Time Mbits/s Bits/Block Bytes/Block Variance\n");
                for (size, rate, time) in c.rows {
                    let _ = writeln!(s, "{time:.6} {rate:.6} {} {size} {:.6}", size * 8, 0.0);
                }
                RenderedFile {
                    path: c.path.into(),
                    bytes: s.into_bytes(),
                }
            })
            .collect())
    }
}
