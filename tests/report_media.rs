//! The medium emulator's statistics in a run directory: loaded into the `media` frame, shown
//! beside each cell (media.csv, report.md) and per configuration ("The medium"); a run
//! without them reports exactly as before.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use orchestrate::report::{ReportOptions, report_run};
use orchestrate::results::{MediaContext, MediaRow, MediaTotal, RunDir, SegmentStats};
use synthetic::{SynthSpec, write_run};

fn segment(name: &str, frames: u64, collisions: u64, util: f64, p99_us: f64) -> SegmentStats {
    let elapsed_ns = 1_000_000_000;
    SegmentStats {
        segment: name.into(),
        medium: "shared".into(),
        rate_bps: 10_000_000,
        elapsed_ns,
        frames,
        bytes: frames * 100,
        carried_ns: (util * elapsed_ns as f64) as u64,
        collisions,
        collided_attempts: collisions * 2,
        collision_ns: collisions * 60_000,
        excess_collision_drops: collisions / 100,
        queue_drops: 1,
        deferrals: frames / 10,
        utilisation: util,
        collisions_per_frame: collisions as f64 / frames as f64,
        lateness_samples: frames,
        lateness_p50_us: 1.0,
        lateness_p99_us: p99_us,
        lateness_p999_us: p99_us,
        lateness_max_us: p99_us * 2.0,
        ingress_samples: frames,
        ingress_p50_us: 1.0,
        ingress_p99_us: p99_us / 2.0,
        ingress_p999_us: p99_us / 2.0,
        ingress_max_us: p99_us,
        entry_samples: frames,
        entry_p99_us: p99_us / 4.0,
        entry_max_us: p99_us,
        lateness_flagged: p99_us > 51.2,
    }
}

/// Writes media.jsonl (two segments per point attempt, the first point twice: a re-measured
/// attempt whose last line counts) and a media-total.jsonl with the first configuration's
/// totals and the second's statistics missing for one point.
fn add_media(dir: &Path) -> usize {
    let run = RunDir::new(dir);
    let points = run.points().unwrap();
    let mut configs: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut lines = String::new();
    let mut n = 0;
    for (i, p) in points.iter().enumerate() {
        let next = configs.len() as u32;
        let configuration = *configs
            .entry((p.topology.clone(), p.bonding.clone()))
            .or_insert(next);
        let context = MediaContext {
            configuration,
            point: p.point,
            topology: p.topology.clone(),
            bonding: p.bonding.clone(),
            placement: p.placement,
            pairs: p.pairs,
            pattern: p.pattern,
            protocol: p.protocol,
            size_bytes: p.size_bytes,
            rep: p.rep,
        };
        let collisions = u64::from(p.pairs) * 10;
        // The first attempt of all is later replaced by a re-measurement with other figures.
        if i == 0 {
            let stale = MediaRow {
                context: context.clone(),
                stats: segment("bus0", 1000, 999, 0.99, 1.0),
                realtime_priority: true,
            };
            lines += &serde_json::to_string(&stale).unwrap();
            lines.push('\n');
        }
        // One point of the first configuration is flagged.
        let p99 = if i == 1 { 60.0 } else { 2.0 };
        for (seg, util) in [("bus0", 0.5), ("bus1", 0.25 * f64::from(p.pairs))] {
            let row = MediaRow {
                context: context.clone(),
                stats: segment(seg, 1000, collisions, util, p99),
                realtime_priority: true,
            };
            lines += &serde_json::to_string(&row).unwrap();
            lines.push('\n');
            n += 1;
        }
    }
    std::fs::write(run.media_jsonl(), lines).unwrap();
    let mut totals = std::fs::File::create(run.media_total_jsonl()).unwrap();
    let first = MediaTotal {
        configuration: 0,
        topology: points[0].topology.clone(),
        bonding: points[0].bonding.clone(),
        realtime_priority: Some(true),
        segments: vec![
            segment("bus0", 50_000, 100, 0.4, 3.25),
            segment("bus1", 50_000, 100, 0.4, 4.5),
        ],
        ..Default::default()
    };
    let (topology, bonding) = configs
        .iter()
        .find(|(_, i)| **i == 1)
        .map(|(k, _)| k.clone())
        .unwrap();
    let second = MediaTotal {
        configuration: 1,
        topology,
        bonding,
        missing_points: vec![4242],
        error: Some("the medium emulator's control socket x: Connection refused".into()),
        ..Default::default()
    };
    for t in [first, second] {
        writeln!(totals, "{}", serde_json::to_string(&t).unwrap()).unwrap();
    }
    n
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn media_are_loaded_into_polars_last_line_per_point_and_segment() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(11)).unwrap();
    let run = RunDir::new(dir.path());
    assert!(run.media_frame().unwrap().is_none());
    let n = add_media(dir.path());
    let frame = run.media_frame().unwrap().unwrap();
    assert_eq!(frame.height(), n);
    for c in [
        "configuration",
        "point",
        "rep",
        "segment",
        "frames",
        "collisions_per_frame",
        "utilisation",
        "lateness_p99_us",
        "lateness_flagged",
    ] {
        assert!(frame.column(c).is_ok(), "{c} missing");
    }
    // The stale attempt (999 collisions) is gone.
    let rows = run.media().unwrap().unwrap();
    assert!(rows.iter().all(|r| r.stats.collisions != 999));
    assert_eq!(run.media_totals().unwrap().len(), 2);
}

#[test]
fn the_report_shows_the_medium_beside_each_cell_and_per_configuration() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(11)).unwrap();
    add_media(dir.path());
    let files = report_run(dir.path(), &ReportOptions::default()).unwrap();
    assert!(files.iter().any(|f| f.ends_with("media.csv")));

    let csv = read(dir.path(), "media.csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "pattern,protocol,topology,bonding,placement,pairs,size_bytes,points,frames,collisions,\
         collisions_per_frame,busiest_segment,busiest_utilisation,excess_collision_drops,\
         queue_drops,lateness_p99_us,lateness_flagged_points"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty());
    for r in &rows {
        let pairs: u64 = r[5].parse().unwrap();
        let points: u64 = r[7].parse().unwrap();
        // Two segments of 1000 frames per point; pairs × 10 collisions on each.
        assert_eq!(r[8].parse::<u64>().unwrap(), points * 2000, "{r:?}");
        let cpf: f64 = r[10].parse().unwrap();
        assert!((cpf - pairs as f64 * 0.01).abs() < 1e-9, "{r:?}");
        // bus1 is the busier from 3 pairs on (0.75 > 0.5), bus0 below.
        let busiest = if pairs >= 3 { "bus1" } else { "bus0" };
        assert_eq!(r[11], busiest, "{r:?}");
    }
    assert!(rows.iter().any(|r| r[16] == "1"), "the flagged point");

    let md = read(dir.path(), "appendix.md");
    assert!(md.contains("## The medium"));
    // One line per configuration, naming how many points and the worst.
    assert_eq!(
        md.matches("**⚠ Timing outside its bound** on 1 point(s)")
            .count(),
        1,
        "{md}"
    );
    assert!(md.contains("over 51.2 µs (one slot)"), "{md}");
    assert!(md.contains(": egress p99 60.0 µs, onto the wire p99 15.0 µs, latest frame 120 µs."));
    assert!(md.contains("**⚠ Medium statistics missing for point(s) 4242**"));
    assert!(md.contains("Connection refused"));
    assert!(md.contains("| segment | medium |"));
    assert!(md.contains("over the whole configuration, from the emulator's own histogram"));
    assert!(md.contains("of the worst point (no total was recorded)"));
    // Without a model the token cells get their own table with the medium's columns.
    assert!(md.contains("### Token-test cells"));
    assert!(md.contains("collisions/frame"));
    // A failed point names what the wires did meanwhile: the synthetic run's point 5 rep 1
    // failed; its attempt's two segments carried 1000 frames each, pairs × 10 collisions and
    // one queue drop on each, lateness p99 2 µs (ingress 1 µs), latest frame 4 µs.
    let failed = md
        .lines()
        .find(|l| l.starts_with("|     5 |   1 |"))
        .unwrap_or_else(|| panic!("point 5 rep 1 listed as failed:\n{md}"));
    assert!(failed.contains("connection refused"), "{failed}");
    assert!(
        failed.contains("2000 frames,")
            && failed.contains("2 queue drops, lateness p99 2 µs, latest 4 µs"),
        "{failed}"
    );
    assert!(md.contains("| the wires meanwhile"), "{md}");

    // Byte-stable.
    let before: Vec<String> = ["media.csv", "report.md", "appendix.md"]
        .iter()
        .map(|f| read(dir.path(), f))
        .collect();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let after: Vec<String> = ["media.csv", "report.md", "appendix.md"]
        .iter()
        .map(|f| read(dir.path(), f))
        .collect();
    assert_eq!(before, after);
}

#[test]
fn a_run_without_media_reports_exactly_as_before() {
    let plain = tempfile::tempdir().unwrap();
    write_run(plain.path(), &SynthSpec::study(5)).unwrap();
    let files = report_run(plain.path(), &ReportOptions::default()).unwrap();
    assert!(!files.iter().any(|f| f.ends_with("media.csv")));
    let md = read(plain.path(), "report.md") + &read(plain.path(), "appendix.md");
    assert!(!md.contains("The medium"));
    assert!(!md.contains("collisions/frame"));

    // The same run with media: every other output is unchanged but the appendix.
    let with = tempfile::tempdir().unwrap();
    write_run(with.path(), &SynthSpec::study(5)).unwrap();
    add_media(with.path());
    report_run(with.path(), &ReportOptions::default()).unwrap();
    for f in ["summary.csv", "comparison.csv"] {
        assert_eq!(read(plain.path(), f), read(with.path(), f), "{f}");
    }
}
