//! The records store: `records.jsonl` to Parquet and CSV, losslessly and in file order.

#[path = "common/synthetic.rs"]
mod synthetic;

use orchestrate::results::{RecordRow, RunDir, ingest};
use synthetic::{SynthSpec, generate};

#[test]
fn ingest_keeps_every_record_and_every_float_bit() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows: Vec<RecordRow> = Vec::new();
    generate(&SynthSpec::study(5), |r| rows.push(r));
    // A value the fast float parser rounds differently.
    rows[0].record.latency_us = Some(180.87763000201818);
    let text: String = rows
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.path().join("records.jsonl"), text).unwrap();

    let run = RunDir::new(dir.path());
    assert_eq!(ingest(&run).unwrap(), rows.len() as u64);

    let df = run.scan_records().unwrap().collect().unwrap();
    assert_eq!(df.height(), rows.len());
    let latency = df.column("latency_us").unwrap().f64().unwrap();
    let bytes = df.column("bytes").unwrap().u64().unwrap();
    let error = df.column("error").unwrap().str().unwrap();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            latency.get(i).map(f64::to_bits),
            r.record.latency_us.map(f64::to_bits),
            "row {i}"
        );
        assert_eq!(bytes.get(i), Some(r.record.bytes));
        assert_eq!(error.get(i), r.record.error.as_deref());
    }
    let csv = std::fs::read_to_string(run.records_csv()).unwrap();
    assert_eq!(csv.lines().count(), rows.len() + 1);
    assert!(csv.lines().nth(1).unwrap().contains(",180.87763000201818,"));
}

#[test]
fn a_bad_line_is_an_error_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows: Vec<RecordRow> = Vec::new();
    generate(&SynthSpec::study(5), |r| rows.push(r));
    let good = serde_json::to_string(&rows[0]).unwrap();
    std::fs::write(
        dir.path().join("records.jsonl"),
        format!("{good}\n{{\"point\": 1}}\n"),
    )
    .unwrap();
    let err = ingest(&RunDir::new(dir.path())).unwrap_err().to_string();
    assert!(err.contains("records.jsonl:2: not a valid row"), "{err}");
    assert!(
        !dir.path().join("records.parquet").exists(),
        "no half-written store"
    );
}

#[test]
fn a_newer_jsonl_is_converted_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows: Vec<RecordRow> = Vec::new();
    generate(&SynthSpec::study(5), |r| rows.push(r));
    let line = |r: &RecordRow| serde_json::to_string(r).unwrap() + "\n";
    std::fs::write(dir.path().join("records.jsonl"), line(&rows[0])).unwrap();
    let run = RunDir::new(dir.path());
    assert!(run.ensure_store().unwrap());
    assert!(!run.ensure_store().unwrap(), "up to date: nothing to do");
    let jsonl = dir.path().join("records.jsonl");
    std::fs::write(&jsonl, line(&rows[0]) + &line(&rows[1])).unwrap();
    // Written after the store, as the file's time says: set, not slept for, since the
    // kernel stamps files at its tick (a few ms), which a quick rewrite can share.
    let stored = std::fs::metadata(run.records_parquet())
        .and_then(|m| m.modified())
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&jsonl)
        .and_then(|f| f.set_modified(stored + std::time::Duration::from_millis(1)))
        .unwrap();
    assert!(run.ensure_store().unwrap());
    assert_eq!(run.scan_records().unwrap().collect().unwrap().height(), 2);
}
