//! Benchmark helper for `scripts/bench-report` (not a libtest bench).
//!
//! - `generate <dir> <records>`: a synthetic run with about that many records, written
//!   straight to `records.parquet` (plus manifest and points) as the store would hold it.
//! - `bare <dir>`: the peer measurement — a plain Polars scan of `records.parquet` and one
//!   group-by over the cell key, the least any report must do, on Polars' default engine.
//! - `ingest <dir> <records>`: writes `records.jsonl` as a runner would and times its
//!   conversion to Parquet + CSV (done once per run, before the first report).
//! - `bare-streaming <dir>`: the same query on the streaming engine the report uses, so the
//!   ratio can be read against both.
//!
//! The report itself is timed by running the `orchestrate report` binary on the same
//! directory, so both sides pay process start-up and Parquet decoding alike.

#[path = "../tests/common/synthetic.rs"]
mod synthetic;

use std::path::Path;
use std::time::Instant;

use orchestrate::results::{
    BondDriver, PlacementKind, RecordWriter, RecordsMetadata, RunDir, Statistic,
};
use orchestrate_worker::record::Pattern;
use polars::prelude::*;
use synthetic::{SynthConfig, SynthSpec, generate, manifest};

fn spec(records: u64) -> SynthSpec {
    let cfg = |topology: &str, bonding: &str, driver, placement, latency_us, wires| SynthConfig {
        topology: topology.into(),
        bonding: bonding.into(),
        bond_driver: driver,
        placement,
        latency_us,
        wire_mbit_s: 10.0,
        wires,
        reps: None,
        cpu_busy_ms_per_trial: None,
    };
    let mut s = SynthSpec {
        experiment: "bench".into(),
        baseline: Some("bonded-dual-net".into()),
        statistic: Statistic::Median,
        seed: 1,
        configs: vec![
            cfg(
                "bonded-dual-net",
                "balance-rr",
                Some(BondDriver::Kernel),
                PlacementKind::LocalWire,
                180.0,
                2.0,
            ),
            cfg(
                "routed-mesh-4x4",
                "none",
                None,
                PlacementKind::LocalWire,
                150.0,
                8.0,
            ),
            cfg(
                "routed-mesh-4x4",
                "none",
                None,
                PlacementKind::RemoteWire,
                420.0,
                4.0,
            ),
            cfg(
                "switched-mesh-4x4",
                "none",
                None,
                PlacementKind::LocalWire,
                160.0,
                8.0,
            ),
            cfg(
                "switched-mesh-4x4",
                "none",
                None,
                PlacementKind::RemoteWire,
                260.0,
                8.0,
            ),
        ],
        pattern: Pattern::Token,
        pairs: (1..=7).collect(),
        sizes: vec![4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192],
        reps: 5,
        trials: 1,
        trial_ns: 10_000_000,
        server_records: true,
        failed: vec![(3, 1)],
        broken_pairs: Vec::new(),
        broken_trials: Vec::new(),
        jitter: 0.03,
        tcp_retrans: None,
        drift_check: None,
    };
    // Records per trial index: configs × sizes × reps × Σpairs × 2 sides.
    let per_trial = (s.configs.len() * s.sizes.len()) as u64 * s.reps as u64 * 28 * 2;
    s.trials = records.div_ceil(per_trial).max(1) as u32;
    s
}

fn generate_run(dir: &Path, records: u64) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let run = RunDir::new(dir);
    let spec = spec(records);
    let manifest = manifest(&spec);
    std::fs::write(
        run.manifest_path(),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    let metadata = RecordsMetadata::of(&manifest);
    let mut writer = RecordWriter::create(&run.records_parquet(), None, &metadata)?;
    let mut err = None;
    let points = generate(&spec, |row| {
        if err.is_none() {
            err = writer.push(row).err();
        }
    });
    if let Some(e) = err {
        return Err(e.into());
    }
    let n = writer.finish()?;
    let mut text = String::new();
    for p in points {
        text.push_str(&serde_json::to_string(&p)?);
        text.push('\n');
    }
    std::fs::write(run.points_jsonl(), text)?;
    eprintln!("wrote {n} records");
    Ok(())
}

fn ingest_run(dir: &Path, records: u64) -> Result<(), Box<dyn std::error::Error>> {
    synthetic::write_run(dir, &spec(records))?;
    let t = Instant::now();
    let n = orchestrate::results::ingest(&RunDir::new(dir))?;
    eprintln!("ingested {n} records in {:.3} s", t.elapsed().as_secs_f64());
    Ok(())
}

fn bare(dir: &Path, engine: Engine) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let path = RunDir::new(dir).records_parquet();
    let df = LazyFrame::scan_parquet(
        path.to_string_lossy().as_ref().into(),
        ScanArgsParquet::default(),
    )?
    .group_by([
        col("topology"),
        col("bonding"),
        col("placement"),
        col("pairs"),
        col("size_bytes"),
        col("pattern"),
        col("protocol"),
    ])
    .agg([col("throughput_mbit_s").mean(), len()])
    .collect_with_engine(engine)?
    .unwrap_single();
    eprintln!(
        "{} groups in {:.3} s",
        df.height(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["generate", dir, n] => generate_run(Path::new(dir), n.parse()?),
        ["ingest", dir, n] => ingest_run(Path::new(dir), n.parse()?),
        ["bare", dir] => bare(Path::new(dir), Engine::Auto),
        ["bare-streaming", dir] => bare(Path::new(dir), Engine::Streaming),
        // `cargo bench` with no arguments: nothing to do, the script drives this binary.
        [] => Ok(()),
        other => Err(format!(
            "usage: report (generate <dir> <records> | ingest <dir> <records> | bare <dir> | bare-streaming <dir>), got {other:?}"
        )
        .into()),
    }
}
