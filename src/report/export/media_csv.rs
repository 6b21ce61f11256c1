//! `media.csv`: one row per cell with what the emulated medium did during its points; written
//! only for runs on the medium emulator.

use std::fmt::Write;

use super::exporter::{Exporter, RenderedFile};
use crate::report::document::Report;
use crate::report::error::ReportError;
use crate::report::format::{csv_f64, csv_field};

pub struct MediaCsv;

impl Exporter for MediaCsv {
    fn export(&self, report: &Report) -> Result<Vec<RenderedFile>, ReportError> {
        let media = &report.media;
        if !media.present {
            return Ok(Vec::new());
        }
        let mut s = String::from(
            "pattern,protocol,topology,bonding,placement,pairs,size_bytes,points,frames,\
             collisions,collisions_per_frame,busiest_segment,busiest_utilisation,\
             excess_collision_drops,queue_drops,lateness_p99_us,lateness_flagged_points\n",
        );
        for c in &media.cells {
            let k = &c.key;
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                k.pattern.as_str(),
                k.protocol.as_str(),
                csv_field(&k.topology),
                csv_field(&k.bonding),
                k.placement.as_str(),
                k.pairs,
                k.size_bytes,
                c.points,
                c.frames,
                c.collisions,
                csv_f64(Some(c.collisions_per_frame())),
                csv_field(&c.busiest_segment),
                csv_f64(Some(c.busiest_utilisation)),
                c.excess_collision_drops,
                c.queue_drops,
                csv_f64(Some(c.lateness_p99_us)),
                c.flagged_points,
            );
        }
        Ok(vec![RenderedFile {
            path: "media.csv".into(),
            bytes: s.into_bytes(),
        }])
    }
}
