//! The machine-readable outputs: summary.json against summary.csv, comparison.csv in long
//! form as a data-frame library reads it, and the records file's own metadata.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::path::Path;

use orchestrate::report::{ReportOptions, report_run};
use orchestrate::results::RecordsMetadata;
use polars::prelude::*;
use synthetic::{SynthSpec, write_run};

fn study_run(seed: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(seed)).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    dir
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn summary_json_holds_the_cells_of_summary_csv_as_typed_values() {
    let dir = study_run(7);
    let json: serde_json::Value = serde_json::from_str(&read(dir.path(), "summary.json")).unwrap();
    let csv = read(dir.path(), "summary.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), rows.len());
    assert!(cells.len() >= 12, "{} cells", cells.len());
    for (row, cell) in rows.iter().zip(cells) {
        let obj = cell.as_object().unwrap();
        assert_eq!(obj.len(), header.len(), "same fields as the CSV's columns");
        for (name, text) in header.iter().zip(row) {
            let v = &obj[*name];
            match v {
                serde_json::Value::Null => assert_eq!(*text, "", "{name}"),
                serde_json::Value::String(s) => assert_eq!(s, text, "{name}"),
                serde_json::Value::Number(n) => {
                    let csv_value: f64 = text.parse().unwrap();
                    assert_eq!(n.as_f64().unwrap(), csv_value, "{name}");
                }
                other => panic!("{name}: unexpected {other}"),
            }
        }
    }
    // Numbers are numbers, and the file says what the units and the runs are.
    assert!(cells[0]["median_mbit_s"].is_f64());
    assert!(cells[0]["pairs"].is_u64());
    assert_eq!(json["statistic"], "median");
    assert_eq!(json["units"]["mbit_s"], "Mbit/s, 10^6 bit/s");
    assert_eq!(json["runs"][0]["experiment"], "reschke96-small");
    assert_eq!(json["runs"][0]["seed"], 7);
}

#[test]
fn summary_json_is_byte_stable() {
    let (a, b) = (study_run(11), study_run(11));
    assert_eq!(
        read(a.path(), "summary.json"),
        read(b.path(), "summary.json")
    );
}

#[test]
fn comparison_csv_loads_in_polars_with_plain_typed_columns() {
    let dir = study_run(7);
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(dir.path().join("comparison.csv")))
        .unwrap()
        .finish()
        .unwrap();
    let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "pattern",
            "protocol",
            "pairs",
            "size_bytes",
            "configuration",
            "topology",
            "bonding",
            "bond_driver",
            "placement",
            "statistic",
            "value_mbit_s",
            "ci_low_mbit_s",
            "ci_high_mbit_s",
            "ci_coverage",
            "n",
            "baseline",
            "ratio_to_baseline",
            "rank",
            "winner_significance",
            "ratio_ci_low",
            "ratio_ci_high",
        ]
    );
    for (name, dtype) in [
        ("pairs", DataType::Int64),
        ("size_bytes", DataType::Int64),
        ("value_mbit_s", DataType::Float64),
        ("ci_low_mbit_s", DataType::Float64),
        ("n", DataType::Int64),
        ("ratio_to_baseline", DataType::Float64),
        ("ratio_ci_low", DataType::Float64),
        ("ratio_ci_high", DataType::Float64),
        ("rank", DataType::Int64),
        ("configuration", DataType::String),
    ] {
        assert_eq!(df.column(name).unwrap().dtype(), &dtype, "{name}");
    }
    // One row per cell × configuration: 3 configurations × 2 pair counts × 2 sizes.
    assert_eq!(df.height(), 12);
    // Every (pairs, size) row has one winner per placement: configurations are ranked only
    // against alternatives with the same placement.
    let winners = df
        .clone()
        .lazy()
        .filter(col("rank").eq(lit(1)))
        .collect()
        .unwrap();
    assert_eq!(winners.height(), 8);
    let placements = winners.column("placement").unwrap().str().unwrap();
    let remote = (0..placements.len())
        .filter(|&i| placements.get(i) == Some("remote-wire"))
        .count();
    assert_eq!(
        remote, 4,
        "the lone remote-wire configuration wins its own contests"
    );
    // Only baselines lack a ratio, and the baseline is the bonded bus.
    let no_ratio = df.column("ratio_to_baseline").unwrap().null_count();
    assert_eq!(no_ratio, 4);
    let baselines = df.column("baseline").unwrap().str().unwrap();
    assert!(
        (0..baselines.len())
            .filter_map(|i| baselines.get(i))
            .all(|b| b.starts_with("bonded-dual-net"))
    );
}

#[test]
fn records_parquet_names_its_experiment_seed_and_tool_version() {
    let dir = study_run(7);
    let file = std::fs::File::open(dir.path().join("records.parquet")).unwrap();
    let mut reader = ParquetReader::new(file);
    let meta = reader.get_metadata().unwrap();
    let kv: Vec<(String, Option<String>)> = meta
        .key_value_metadata()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|kv| (kv.key, kv.value))
        .collect();
    let get = |k: &str| {
        kv.iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{k} missing from {kv:?}"))
    };
    assert_eq!(get(RecordsMetadata::EXPERIMENT), "reschke96-small");
    assert_eq!(get(RecordsMetadata::SEED), "7");
    assert_eq!(get(RecordsMetadata::TOOL_VERSION), "0.1.0");
    // The records themselves still read as before.
    let df = ParquetReader::new(std::fs::File::open(dir.path().join("records.parquet")).unwrap())
        .finish()
        .unwrap();
    assert!(df.height() > 0);
}
