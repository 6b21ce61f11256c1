//! Properties of the written outputs: figures are well-formed and labelled, re-runs are
//! byte-identical.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use orchestrate::report::{NetpipeSource, ReportOptions, report_run};
use synthetic::{SynthSpec, write_run};

fn beam() -> NetpipeSource {
    NetpipeSource {
        name: "1999 cluster, 100 Mbit/s switch".into(),
        path: Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("experiments/data/beam-1999-netpipe-tcp.txt"),
    }
}

fn options() -> ReportOptions<'static> {
    ReportOptions {
        netpipe: vec![beam()],
        ..ReportOptions::default()
    }
}

/// Every file under `dir`, relative path → bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_owned(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn rerunning_report_changes_no_byte() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    report_run(dir.path(), &options()).unwrap();
    let first = snapshot(dir.path());
    for name in [
        "summary.csv",
        "comparison.csv",
        "report.md",
        "records.parquet",
        "records.csv",
    ] {
        assert!(first.contains_key(Path::new(name)), "{name} missing");
    }

    // Again, as is.
    report_run(dir.path(), &options()).unwrap();
    assert_eq!(first, snapshot(dir.path()));

    // Again from scratch: the store is converted anew and must come out the same too.
    for name in [
        "records.parquet",
        "records.csv",
        "summary.csv",
        "comparison.csv",
        "report.md",
    ] {
        std::fs::remove_file(dir.path().join(name)).unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("figures")).unwrap();
    report_run(dir.path(), &options()).unwrap();
    assert_eq!(first, snapshot(dir.path()));
}

#[test]
fn a_second_identical_run_gives_identical_outputs() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for d in [&a, &b] {
        write_run(d.path(), &SynthSpec::study(11)).unwrap();
        report_run(d.path(), &options()).unwrap();
    }
    assert_eq!(snapshot(a.path()), snapshot(b.path()));
}

/// Texts of all `<text>` elements.
fn texts(doc: &roxmltree::Document<'_>) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().trim().to_owned())
        .collect()
}

#[test]
fn every_figure_is_xml_with_title_axis_labels_with_units_and_legend() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    report_run(dir.path(), &options()).unwrap();
    let figures = dir.path().join("figures");
    let mut names: Vec<String> = std::fs::read_dir(&figures)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "latency-vs-size-token-tcp.svg",
            "netpipe.svg",
            "throughput-vs-pairs-token-tcp.svg",
            "throughput-vs-size-token-tcp.svg",
        ]
    );
    // Named as report.md's legend table names them.
    let legend = ["BDN local-wire", "RM4x4 local-wire", "RM4x4 remote-wire"];
    for name in &names {
        let text = std::fs::read_to_string(figures.join(name)).unwrap();
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let root = doc.root_element();
        assert!(root.has_tag_name("svg"), "{name}");
        let title = root
            .children()
            .find(|n| n.has_tag_name("title"))
            .and_then(|n| n.text())
            .unwrap_or_else(|| panic!("{name}: no <title>"));
        let texts = texts(&doc);
        // Drawn in as many lines as the figure's width needs.
        let drawn: Vec<&str> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("title"))
            .filter_map(|n| n.text())
            .collect();
        assert_eq!(drawn.join(" "), title, "{name}: title not drawn");
        // Axis labels carry their unit in brackets.
        let units: Vec<&String> = texts
            .iter()
            .filter(|t| t.ends_with(']') && t.contains(" ["))
            .collect();
        assert!(
            units.len() >= 2,
            "{name}: axis labels with units: {units:?}"
        );
        // Legend: every configuration is named (the NetPIPE figure names series with a suffix).
        for l in legend {
            assert!(
                texts.iter().any(|t| t.starts_with(l)),
                "{name}: legend lacks {l}"
            );
        }
    }
    let netpipe = std::fs::read_to_string(figures.join("netpipe.svg")).unwrap();
    let doc = roxmltree::Document::parse(&netpipe).unwrap();
    // A long label is wrapped over lines of the legend; its entry names it whole.
    let entries: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("legend-entry"))
        .filter_map(|n| n.attribute("data-label"))
        .collect();
    for l in [
        "1999 cluster, 100 Mbit/s switch: Ping/pong of packets between nodes",
        "1999 cluster, 100 Mbit/s switch: Streaming of packets between nodes",
    ] {
        assert!(entries.contains(&l), "netpipe.svg lacks {l}: {entries:?}");
        let first_word = l.split(' ').next().unwrap();
        assert!(
            texts(&doc)
                .iter()
                .any(|t| l.starts_with(t.as_str()) && t.starts_with(first_word))
        );
    }
}
