//! NetPIPE import: the 1999 BEAM cluster's tables, and drawing them beside a run.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::path::{Path, PathBuf};

use orchestrate::report::import_netpipe as import;
use orchestrate::report::{NetpipeSource, ReportOptions, report_run};
use synthetic::{SynthSpec, write_run};

const NAME: &str = "1999 cluster, 100 Mbit/s switch";

fn beam_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/data/beam-1999-netpipe-tcp.txt")
}

#[test]
fn beam_reference_imports_both_tables_with_every_row_and_latency() {
    let b = import(NAME, &beam_path()).unwrap();
    assert_eq!(b.tables.len(), 2);
    let (pingpong, streaming) = (&b.tables[0], &b.tables[1]);

    assert_eq!(
        pingpong.title.as_deref(),
        Some("TCP/IP Network performance: Ping/pong of packets between nodes")
    );
    assert_eq!(
        streaming.title.as_deref(),
        Some("TCP/IP Network performance: Streaming of packets between nodes")
    );
    assert_eq!(pingpong.latency_s, Some(0.000074));
    assert_eq!(streaming.latency_s, Some(0.000565));

    // NetPIPE's schedule: 1, 2, 3, 4, 6, 8, 12, then 21 base sizes up to 16 KB with ±3 bytes.
    for t in [pingpong, streaming] {
        assert_eq!(t.rows.len(), 70);
        let sizes: Vec<u64> = t.rows.iter().map(|r| r.bytes_per_block).collect();
        assert_eq!(sizes[..10], [1, 2, 3, 4, 6, 8, 12, 13, 16, 19]);
        assert_eq!(sizes[67..], [16381, 16384, 16387]);
        assert!(
            t.rows
                .iter()
                .all(|r| r.bits_per_block == 8 * r.bytes_per_block)
        );
    }
    let first = &pingpong.rows[0];
    assert_eq!(
        (first.time_s, first.mbit_s, first.variance),
        (0.000074, 0.103730, 0.0)
    );
    assert_eq!(pingpong.rows[69].mbit_s, 77.551074);
    let peak = streaming
        .rows
        .iter()
        .map(|r| r.mbit_s)
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(
        peak, 90.317919,
        "streaming peaks near 90 Mbit/s on a 100 Mbit/s wire"
    );
}

#[test]
fn nptcp_output_file_is_one_untitled_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("np.out");
    std::fs::write(
        &path,
        "0.000074 0.103730 8 1 0.000000\n0.000074 0.207550 16 2 0.000000\n",
    )
    .unwrap();
    let b = import("NPtcp", &path).unwrap();
    assert_eq!(b.tables.len(), 1);
    assert_eq!(b.tables[0].rows.len(), 2);
    assert_eq!(b.table_label(0), "NPtcp");
}

#[test]
fn a_file_without_tables_is_refused_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "just prose\n").unwrap();
    let err = import("x", &path).unwrap_err().to_string();
    assert!(
        err.contains("notes.txt") && err.contains("no rows found"),
        "{err}"
    );
}

#[test]
fn beam_is_drawn_and_tabulated_beside_a_run() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    let opts = ReportOptions {
        netpipe: vec![NetpipeSource {
            name: NAME.into(),
            path: beam_path(),
        }],
        ..ReportOptions::default()
    };
    report_run(dir.path(), &opts).unwrap();

    let md = std::fs::read_to_string(dir.path().join("appendix.md")).unwrap();
    let section = &md[md.find("## NetPIPE baselines").expect("NetPIPE section")..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    insta::assert_snapshot!(section);

    // Each baseline table is one line of 70 points in the NetPIPE figure.
    let svg = std::fs::read_to_string(dir.path().join("figures/netpipe.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let mut lengths: Vec<usize> = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| {
            n.attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .count()
        })
        .collect();
    lengths.sort();
    assert_eq!(
        lengths.iter().filter(|&&n| n == 70).count(),
        2,
        "{lengths:?}"
    );
}

#[test]
fn a_run_exports_its_one_pair_curves_in_netpipe_format_that_imports_again() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let path = dir
        .path()
        .join("netpipe/routed-mesh-4x4-local-wire-token-tcp.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    insta::assert_snapshot!(text);
    let b = import("routed mesh", &path).unwrap();
    assert_eq!(b.tables.len(), 1);
    let sizes: Vec<u64> = b.tables[0].rows.iter().map(|r| r.bytes_per_block).collect();
    assert_eq!(sizes, [64, 8192]);
    assert!(b.tables[0].latency_s.is_some());
}
