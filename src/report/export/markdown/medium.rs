//! "The medium": what the emulated wires did, per configuration and per segment.

use std::fmt::Write;

use super::table::table;
use crate::report::data::CellKey;
use crate::report::document::Report;
use crate::report::emulator_stats::{ConfigMedia, LatenessSource, MediaReport};
use crate::report::exclusion::Exclusion;
use crate::report::format::{human, md_cell, percent, size};

pub const MEDIA_COLUMNS: [&str; 4] = [
    "collisions/frame",
    "busiest segment",
    "drops excess/queue",
    "lateness p99 [µs]",
];

pub const MEDIA_LEGEND: &str = "The medium during each cell's points, from the emulator: collisions per frame \
     carried (all segments), the busiest segment and its utilisation, frames dropped after 16 \
     collisions / on a full transmit queue, and the emulator's worst p99 lateness at either end \
     (⚠ when a point did not keep the timing bound).\n\n";

/// The medium's columns of a cell's row; empty cells when its points have no statistics.
pub fn media_cells(media: &MediaReport, key: &CellKey) -> [String; 4] {
    match media.cell(key) {
        Some(m) => [
            format!("{:.3}", m.collisions_per_frame()),
            format!(
                "{} {}",
                md_cell(&m.busiest_segment),
                percent_util(m.busiest_utilisation)
            ),
            format!("{}/{}", m.excess_collision_drops, m.queue_drops),
            format!(
                "{}{}",
                human(m.lateness_p99_us),
                if m.flagged_points > 0 { " ⚠" } else { "" }
            ),
        ],
        None => Default::default(),
    }
}

/// A utilisation as a percentage with one decimal: `87.5%`.
fn percent_util(u: f64) -> String {
    format!("{:.1}%", u * 100.0)
}

/// "The medium": per configuration, each segment over the configuration's points, the points
/// whose timing the emulator flagged, and where statistics are missing.
pub fn the_medium(s: &mut String, report: &Report, media: &MediaReport) {
    if !media.present {
        return;
    }
    s.push_str(
        "## The medium

\
         What the emulated wires did while the points ran, from the medium emulator's counters: \
         frames carried, utilisation (wire time carried over the points' time), collisions per \
         frame, frames dropped after 16 collisions (excess) or on a full transmit queue, and \
         the emulator's lateness at both ends of a frame: how much later than its arrival it \
         entered the emulated wire (a frame read late still enters at its kernel receive \
         stamp, unless the emulator had already decided past it) and how late it was written \
         out against its deadline (egress). A point keeps the timing bound when, on every \
         segment and at both ends, the p99 is within one contention slot (512 bit times: \
         51.2 µs at 10 Mbit/s) and no frame is later than 1 ms; a point outside it is \
         flagged: its timing is not that of the wire.\n\n",
    );
    let before = s.len();
    remeasured(s, media);
    for c in &media.configs {
        warnings(s, c);
    }
    if s.len() > before {
        s.push('\n');
    }
    segment_table(s, &media.configs);
    token_cells_with_medium(s, report, media);
}

/// Points measured again because the emulator did not keep time, and those it never did.
fn remeasured(s: &mut String, media: &MediaReport) {
    let u = media.untimed;
    if u.attempts == 0 {
        return;
    }
    let _ = write!(
        s,
        "- **Measured again:** {} attempt(s) at {} point(s) were outside the timing bound and \
         did not count; each such point was measured again (up to {} attempts in all). ",
        u.attempts, u.points, u.most_attempts
    );
    if u.still == 0 {
        let _ = writeln!(s, "Every one of them kept the bound in the end.");
    } else {
        let _ = writeln!(
            s,
            "{} point(s) never kept it: they are left out of every cell and verdict and listed \
             with the failures.",
            u.still
        );
    }
    if let Some(e) = &media.exclusion {
        left_out(s, e);
    }
}

/// A shift of the figures that leaving attempts out may cause and still be called none: a
/// tenth of the ±10% the model is held to, and below what repetitions of a cell vary by.
const NEGLIGIBLE: f64 = 0.01;

/// What leaving the untimed attempts out did to the figures ([`Exclusion`]).
fn left_out(s: &mut String, e: &Exclusion) {
    let r = &e.ratio;
    let interval = match r.ci {
        Some(ci) if ci.is_95() => format!("95% interval {:.3}×–{:.3}×", ci.low, ci.high),
        Some(ci) => format!(
            "[min, max] {:.3}×–{:.3}×, which covers the median with {}",
            ci.low,
            ci.high,
            percent(ci.coverage)
        ),
        None => "one cell, no interval".into(),
    };
    let verdict = match r.ci {
        Some(ci) if ci.is_95() && (1.0 - ci.low).max(ci.high - 1.0) <= NEGLIGIBLE => format!(
            "Leaving them out moved the figures by at most {}: the bound selects the attempts \
             whose frame timing was right, not faster or slower ones.",
            percent((1.0 - ci.low).max(ci.high - 1.0))
        ),
        Some(ci) if ci.is_95() && ci.high < 1.0 => "The attempts left out ran slower than \
             those counted: the cells give the rates of the attempts the emulator kept time \
             for, and would read lower with the others in them."
            .into(),
        Some(ci) if ci.is_95() && ci.low > 1.0 => "The attempts left out ran faster than \
             those counted: the cells give the rates of the attempts the emulator kept time \
             for, and would read higher with the others in them."
            .into(),
        Some(ci) if ci.is_95() => {
            "Leaving them out moved the figures by no margin this run can show.".into()
        }
        _ => "Too few cells to say whether leaving them out moved the figures.".into(),
    };
    let _ = writeln!(
        s,
        "- **What leaving them out did:** aggregated as counted attempts are, the {} left-out \
         attempt(s) of the {} cell(s) that also have counted ones ran at {:.3}× the counted \
         attempts' median (the median over cells; {interval}); in {} of those cells the \
         left-out median lies outside the counted attempts' range. {verdict}",
        e.attempts, e.cells, r.median, e.outside_range
    );
}

/// What to distrust first in a configuration's timing, a bullet each: missing statistics,
/// no real-time priority, flagged lateness.
fn warnings(s: &mut String, c: &ConfigMedia) {
    let who = format!(
        "- {} (configuration {}): ",
        md_cell(&c.label()),
        c.configuration
    );
    if let Some(m) = missing_statistics(c) {
        let _ = writeln!(s, "{who}{m}");
    }
    if c.realtime_priority == Some(false) {
        let _ = writeln!(
            s,
            "{who}the emulator ran without real-time priority (SCHED_FIFO was refused): \
             expect more lateness."
        );
    }
    if let Some(f) = lateness_flagged(c) {
        let _ = writeln!(s, "{who}{f}");
    }
}

/// Says which points of a configuration have no medium statistics, and why.
fn missing_statistics(c: &ConfigMedia) -> Option<String> {
    if c.missing_points.is_empty() && c.error.is_none() {
        return None;
    }
    let points = if c.missing_points.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = c.missing_points.iter().map(|p| p.to_string()).collect();
        format!(" for point(s) {}", list.join(", "))
    };
    Some(format!(
        "**⚠ Medium statistics missing{points}**: {}.",
        md_cell(c.error.as_deref().unwrap_or("the emulator did not answer"))
    ))
}

/// One line per configuration, however many points are flagged: the worst says how far off.
fn lateness_flagged(c: &ConfigMedia) -> Option<String> {
    let worst = c
        .flagged
        .iter()
        .max_by(|a, b| a.worst_p99_us().total_cmp(&b.worst_p99_us()))?;
    let points: std::collections::BTreeSet<(u32, u32)> =
        c.flagged.iter().map(|f| (f.point, f.rep)).collect();
    let entry = if worst.entry_p99_us > 0.0 {
        format!(", onto the wire p99 {} µs", human(worst.entry_p99_us))
    } else {
        String::new()
    };
    Some(format!(
        "**⚠ Timing outside its bound** on {} point(s): p99 lateness over {} µs (one slot) or \
         a frame over 1 ms at either end, by the most at point {} (rep {}, {} {}×, {}) on \
         segment {}: egress p99 {} µs{entry}, latest frame {} µs. Frame timing there is off \
         by up to that much at the 99th percentile.",
        points.len(),
        human(worst.limit_us),
        worst.point,
        worst.rep,
        worst.pattern.as_str(),
        worst.pairs,
        size(worst.size_bytes),
        md_cell(&worst.segment),
        human(worst.p99_us),
        human(worst.max_us),
    ))
}

/// Every configuration's segments over its points in one table: frames, utilisation,
/// collisions, drops, the emulator's lateness; then where each configuration's lateness
/// comes from.
fn segment_table(s: &mut String, configs: &[ConfigMedia]) {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for c in configs {
        for (i, g) in c.segments.iter().enumerate() {
            // The configuration is named on its first segment only: the rows below are its.
            let name = if i == 0 {
                md_cell(&c.label())
            } else {
                String::new()
            };
            rows.push(vec![
                name,
                md_cell(&g.segment),
                g.medium.clone(),
                human(g.rate_bps as f64 / 1e6),
                g.frames.to_string(),
                percent_util(g.utilisation()),
                format!("{:.3}", g.collisions_per_frame()),
                g.excess_collision_drops.to_string(),
                g.queue_drops.to_string(),
                g.deferrals.to_string(),
                human(g.lateness_p50_us),
                human(g.lateness_p99_us),
                human(g.lateness_max_us),
            ]);
        }
    }
    if rows.is_empty() {
        return;
    }
    let header = [
        "configuration",
        "segment",
        "medium",
        "Mbit/s",
        "frames",
        "utilisation",
        "collisions/frame",
        "excess drops",
        "queue drops",
        "deferrals",
        "lateness p50 [µs]",
        "lateness p99 [µs]",
        "lateness max [µs]",
    ]
    .map(String::from);
    let mut right = [true; 13];
    right[..3].copy_from_slice(&[false; 3]);
    table(s, &header, &rows, &right);
    lateness_sources(s, configs);
}

/// Where the lateness columns come from, one sentence per source naming its configurations.
fn lateness_sources(s: &mut String, configs: &[ConfigMedia]) {
    let with_segments = configs.iter().filter(|c| !c.segments.is_empty());
    let (total, worst): (Vec<&ConfigMedia>, Vec<&ConfigMedia>) = with_segments.partition(|c| {
        c.segments
            .iter()
            .any(|g| g.lateness_source == LatenessSource::Total)
    });
    let names = |cs: &[&ConfigMedia]| -> String {
        let list: Vec<String> = cs.iter().map(|c| md_cell(&c.label())).collect();
        list.join(", ")
    };
    for (group, what) in [
        (
            &total,
            "over the whole configuration, from the emulator's own histogram",
        ),
        (&worst, "of the worst point (no total was recorded)"),
    ] {
        if group.is_empty() {
            continue;
        }
        let of = if group.len() == configs.len() {
            String::new()
        } else {
            format!(" for {}", names(group))
        };
        let _ = writeln!(s, "Lateness {what}{of}.\n");
    }
}

/// Without the model's table the token-test cells still get their medium beside them.
fn token_cells_with_medium(s: &mut String, report: &Report, media: &MediaReport) {
    if !report.model.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = report
        .cells
        .iter()
        .filter(|c| c.key.measure.pattern == orchestrate_worker::record::Pattern::Token)
        .filter(|c| media.cell(&c.key).is_some())
        .map(|c| {
            let mut r = vec![
                md_cell(&c.key.config.label()),
                c.key.pairs.to_string(),
                size(c.key.size_bytes),
                c.value(report.statistic).map(human).unwrap_or_default(),
            ];
            r.extend(media_cells(media, &c.key));
            r
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    s.push_str("### Token-test cells\n\n");
    s.push_str(MEDIA_LEGEND);
    let mut header: Vec<String> = ["configuration", "pairs", "size", "Mbit/s"]
        .map(String::from)
        .to_vec();
    header.extend(MEDIA_COLUMNS.map(String::from));
    table(
        s,
        &header,
        &rows,
        &[false, true, true, true, true, false, true, true],
    );
}
