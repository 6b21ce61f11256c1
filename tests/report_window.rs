//! Aggregation on small hand-made runs whose answers can be worked out on paper.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::path::Path;

use orchestrate::report::{ReportOptions, build, compare, report_run};
use orchestrate::results::{PlacementKind, PointRow, PointStatus, RecordRow, RunDir, Statistic};
use orchestrate_worker::record::{Pattern, Protocol, Record, Role};
use synthetic::{SynthSpec, write_run};

const S: u64 = 1_000_000_000;
const T0: u64 = 1_800_000_000 * S;

struct Trial {
    point: u32,
    pairs: u32,
    pair: u32,
    rep: u32,
    pattern: Pattern,
    role: Role,
    start_s: u64,
    end_s: u64,
    bytes: u64,
}

fn row(t: Trial) -> RecordRow {
    RecordRow {
        point: t.point,
        topology: "bus".into(),
        bonding: "none".into(),
        bond_driver: None,
        placement: PlacementKind::LocalWire,
        pairs: t.pairs,
        pair: t.pair,
        rep: t.rep,
        attempt: 0,
        client_node: format!("n{}", 2 * t.pair),
        server_node: format!("n{}", 2 * t.pair + 1),
        record: Record {
            local_addr: "10.0.0.1:1".into(),
            peer_addr: "10.0.0.2:2".into(),
            size_bytes: 8192,
            messages: t.bytes / 8192,
            bytes: t.bytes,
            start_unix_ns: T0 + t.start_s * S,
            end_unix_ns: T0 + t.end_s * S,
            elapsed_ns: (t.end_s - t.start_s) * S,
            ..Record::new(t.pattern, Protocol::Tcp, t.role)
        },
    }
}

fn trial(point: u32, pairs: u32, pair: u32, start_s: u64, end_s: u64, bytes: u64) -> Trial {
    Trial {
        point,
        pairs,
        pair,
        rep: 0,
        pattern: Pattern::Token,
        role: Role::Client,
        start_s,
        end_s,
        bytes,
    }
}

fn point(point: u32, pairs: u32, status: PointStatus) -> PointRow {
    PointRow {
        point,
        topology: "bus".into(),
        bonding: "none".into(),
        bond_driver: None,
        placement: PlacementKind::LocalWire,
        pairs,
        pattern: Pattern::Token,
        protocol: Protocol::Tcp,
        size_bytes: 8192,
        rep: 0,
        attempt: 0,
        status,
        error: (status == PointStatus::Failed).then(|| "timeout".into()),
        window_start_unix_ns: None,
        window_end_unix_ns: None,
        skew_ns: None,
        drift_check: false,
        sampled_records: None,
        implementation: None,
    }
}

fn write(dir: &Path, records: Vec<RecordRow>, points: &[PointRow]) {
    let lines: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join("records.jsonl"), lines).unwrap();
    if !points.is_empty() {
        let lines: String = points
            .iter()
            .map(|p| serde_json::to_string(p).unwrap() + "\n")
            .collect();
        std::fs::write(dir.join("points.jsonl"), lines).unwrap();
    }
}

#[test]
fn aggregate_counts_only_bytes_inside_the_common_window() {
    let dir = tempfile::tempdir().unwrap();
    // Pair 0 runs 0–10 s in two trials, pair 1 runs 4–9 s: the window is 4–9 s (5 s).
    // Pair 0 moves 1 MB of its first trial and 4 MB of its second inside it: 8 Mbit/s.
    // Pair 1 moves 10 MB, all inside: 16 Mbit/s. Aggregate 24 Mbit/s.
    // The server side's records (here absurdly large) must not be counted for `token`.
    let mut server = trial(0, 2, 1, 4, 9, 999_000_000);
    server.role = Role::Server;
    write(
        dir.path(),
        vec![
            row(trial(0, 2, 0, 0, 5, 5_000_000)),
            row(trial(0, 2, 0, 5, 10, 5_000_000)),
            row(trial(0, 2, 1, 4, 9, 10_000_000)),
            row(server),
        ],
        &[],
    );
    let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
    assert_eq!(report.cells.len(), 1);
    let cell = &report.cells[0];
    let agg = cell.aggregate.unwrap();
    assert_eq!((agg.n, agg.median, agg.best), (1, 24.0, 24.0));
    assert_eq!(agg.ci, None, "one repetition has no interval");
    assert_eq!(cell.per_pair_min_mbit_s, Some(8.0));
    assert_eq!(cell.per_pair_mean_mbit_s, Some(12.0));
    assert!(report.failures.is_empty());
}

#[test]
fn stream_is_timed_at_the_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let mk = |role, bytes| {
        let mut t = trial(0, 1, 0, 0, 10, bytes);
        t.pattern = Pattern::Stream;
        t.role = role;
        row(t)
    };
    write(
        dir.path(),
        vec![mk(Role::Client, 50_000_000), mk(Role::Server, 10_000_000)],
        &[],
    );
    let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
    assert_eq!(report.cells[0].aggregate.unwrap().median, 8.0);
}

#[test]
fn attempts_that_cannot_give_an_honest_aggregate_are_failures_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        vec![
            // point 0: fine, 8 Mbit/s.
            row(trial(0, 1, 0, 0, 10, 10_000_000)),
            // point 2: two pairs planned, one has records.
            row(trial(2, 2, 0, 0, 10, 10_000_000)),
            // point 3: the pairs never overlap.
            row(trial(3, 2, 0, 0, 1, 1_000_000)),
            row(trial(3, 2, 1, 2, 3, 1_000_000)),
            // point 4: records, but the runner never recorded the point's outcome.
            row(trial(4, 1, 0, 0, 10, 10_000_000)),
            // point 5: the runner marked it failed; its partial records are not used.
            row(trial(5, 1, 0, 0, 10, 99_000_000)),
        ],
        &[
            point(0, 1, PointStatus::Ok),
            point(1, 1, PointStatus::Ok),
            point(2, 2, PointStatus::Ok),
            point(3, 2, PointStatus::Ok),
            point(5, 1, PointStatus::Failed),
        ],
    );
    let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
    let reasons: Vec<(u32, String)> = report
        .failures
        .iter()
        .map(|f| (f.point, f.reason.to_string()))
        .collect();
    assert_eq!(
        reasons,
        [
            (1, "marked ok but has no records".to_string()),
            (2, "only 1 of 2 pairs have successful trials".to_string()),
            (3, "pairs never overlapped in time".to_string()),
            (
                4,
                "records without a status in points.jsonl (interrupted?)".to_string()
            ),
            (5, "timeout".to_string()),
        ]
    );
    // Failed cells stay in the summary with their count and no statistics.
    let one_pair = report.cells.iter().find(|c| c.key.pairs == 1).unwrap();
    assert_eq!((one_pair.n(), one_pair.failed_attempts), (1, 3));
    assert_eq!(one_pair.aggregate.unwrap().median, 8.0);
    let two_pairs = report.cells.iter().find(|c| c.key.pairs == 2).unwrap();
    assert_eq!((two_pairs.n(), two_pairs.failed_attempts), (0, 2));
    assert!(two_pairs.aggregate.is_none());
}

#[test]
fn statistic_can_be_overridden_and_best_is_the_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let records = (0..3u32)
        .map(|rep| {
            let mut t = trial(0, 1, 0, 0, 10, 10_000_000 * (rep as u64 + 1));
            t.rep = rep;
            row(t)
        })
        .collect();
    write(dir.path(), records, &[]);
    let run = RunDir::new(dir.path());
    let median = build(&run, &ReportOptions::default()).unwrap();
    assert_eq!(median.statistic, Statistic::Median);
    assert_eq!(median.cells[0].value(Statistic::Median), Some(16.0));
    let best = build(
        &run,
        &ReportOptions {
            statistic: Some(Statistic::Best),
            ..ReportOptions::default()
        },
    )
    .unwrap();
    assert_eq!(best.statistic, Statistic::Best);
    assert_eq!(best.cells[0].value(best.statistic), Some(24.0));
}

#[test]
fn an_unknown_baseline_is_an_error_naming_the_known_topologies() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        vec![row(trial(0, 1, 0, 0, 10, 10_000_000))],
        &[],
    );
    let err = report_run(
        dir.path(),
        &ReportOptions {
            baseline: Some("ring".into()),
            ..ReportOptions::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("\"ring\"") && err.contains("bus"), "{err}");
}

#[test]
fn compare_puts_runs_side_by_side_against_the_first() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (root.path().join("before"), root.path().join("after"));
    write_run(&a, &SynthSpec::study(7)).unwrap();
    let mut faster = SynthSpec::study(8);
    for c in &mut faster.configs {
        c.wire_mbit_s *= 2.0;
    }
    write_run(&b, &faster).unwrap();
    let out = root.path().join("cmp");
    compare(&[a, b], &out, &ReportOptions::default()).unwrap();

    // Long form: a row per run and configuration, each compared with its own in the first run.
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..2], ["run", "pattern"], "{header:?}");
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let row = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|r| {
            r[0] == "after"
                && r[column("configuration")] == "routed-mesh-4x4 local-wire"
                && r[column("pairs")] == "7"
                && r[column("size_bytes")] == "8192"
        })
        .expect("a row for after's routed mesh at 7 pairs and 8 KB");
    assert_eq!(
        row[column("baseline")],
        "before: routed-mesh-4x4 local-wire"
    );
    let ratio: f64 = row[column("ratio_to_baseline")].parse().unwrap();
    assert!(ratio > 1.5, "{ratio}");
    assert!(
        std::fs::read_to_string(out.join("report.md"))
            .unwrap()
            .starts_with("# Report: comparison of 2 runs\n")
    );
    let md = std::fs::read_to_string(out.join("appendix.md")).unwrap();
    // Doubling every wire doubles what the saturated bonded bus carries at 8 KiB and 7 pairs.
    assert!(
        md.contains(
            "- At 8 KiB and 7 pairs, after: bonded-dual-net balance-rr (userspace bond) local-wire \
             reaches 2.0× before: bonded-dual-net balance-rr (userspace bond) local-wire"
        ),
        "{md}"
    );
    assert!(
        out.join("summary.csv").exists()
            && out
                .join("figures/throughput-vs-size-token-tcp.svg")
                .exists()
    );
}

/// A one-pair point whose attempt 0 the emulator did not keep time for and whose attempt 1
/// (20–30 s, 10 MB: 8 Mbit/s) counts: attempt 1's record, and the two attempts' lines.
fn measured_again() -> (RecordRow, [PointRow; 2]) {
    let mut again = row(trial(0, 1, 0, 20, 30, 10_000_000));
    again.attempt = 1;
    let mut untimed = point(0, 1, PointStatus::Untimed);
    untimed.error = Some("the medium emulator did not keep its timing bound".into());
    let mut ok = point(0, 1, PointStatus::Ok);
    ok.attempt = 1;
    (again, [untimed, ok])
}

#[test]
fn the_report_measures_what_leaving_an_untimed_attempt_out_did() {
    let dir = tempfile::tempdir().unwrap();
    // Attempt 0 moved 5 MB in 10 s (4 Mbit/s) and was untimed; attempt 1 moved 10 MB in
    // 10 s (8 Mbit/s) and counts: the attempt left out ran at half the counted rate.
    let mut slower = row(trial(0, 1, 0, 0, 10, 5_000_000));
    slower.attempt = 0;
    let (again, [untimed, ok]) = measured_again();
    write(dir.path(), vec![slower, again], &[untimed, ok]);
    let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
    let e = report.media.exclusion.expect("an attempt was left out");
    assert_eq!((e.attempts, e.cells, e.outside_range), (1, 1, 1));
    assert!((e.ratio.median - 0.5).abs() < 1e-9, "{e:?}");

    // Without an attempt left out there is nothing to say.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        vec![row(trial(0, 1, 0, 0, 10, 10_000_000))],
        &[point(0, 1, PointStatus::Ok)],
    );
    let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
    assert_eq!(report.media.exclusion, None);
}

#[test]
fn a_point_measured_again_counts_only_its_last_attempt() {
    let dir = tempfile::tempdir().unwrap();
    // Attempt 0 (0–10 s) was untimed: the emulator did not keep its bound. Attempt 1
    // (20–30 s) counts: one pair, 10 MB in 10 s, 8 Mbit/s. Mixed, the two would make one
    // span of 0–30 s and 20 MB: 5.33 Mbit/s.
    let (again, [untimed, ok]) = measured_again();
    write(
        dir.path(),
        vec![row(trial(0, 1, 0, 0, 10, 10_000_000)), again],
        &[untimed.clone(), ok],
    );
    let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
    assert_eq!(report.cells[0].aggregate.unwrap().median, 8.0);
    assert!(
        report.failures.is_empty(),
        "an attempt measured again is no failure: {:?}",
        report.failures
    );

    // A point still untimed at its last attempt counts nowhere and is listed.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        vec![row(trial(0, 1, 0, 0, 10, 10_000_000))],
        &[untimed],
    );
    let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
    assert!(report.cells.iter().all(|c| c.aggregate.is_none()));
    assert_eq!(report.failures.len(), 1);
    assert!(
        report.failures[0]
            .reason
            .to_string()
            .contains("timing bound")
    );
}

#[test]
fn progress_samples_count_what_moved_in_the_window_where_pro_rating_exceeds_the_wire() {
    // One 10 Mbit/s bus served unevenly, as CSMA/CD serves it. Pair 0 runs 0–10 s: alone, it
    // moves 6.25 MB in its first 5 s (10 Mbit/s), then pair 1 arrives and takes the wire, and
    // pair 0 moves 0.625 MB more (1 Mbit/s). Pair 1 runs 5–15 s: 5.625 MB while both run
    // (9 Mbit/s), 6.25 MB alone after. The window is 5–10 s, in which the bus carried
    // 6.25 MB: 10 Mbit/s, all it can. Pro-rating each trial's total by its overlap counts
    // half of each pair's bytes: (6.875 + 11.875) / 2 MB in 5 s = 15 Mbit/s, half again what
    // the wire can carry.
    const WIRE_MBIT_S: f64 = 10.0;
    let with_samples = |samples: bool| {
        let dir = tempfile::tempdir().unwrap();
        let pair = |pair: u32, start_s: u64, first_half: u64, total: u64| {
            let mut r = row(trial(0, 2, pair, start_s, start_s + 10, total));
            if samples {
                r.record.progress_offset_ns = Some(vec![5 * S, 10 * S]);
                r.record.progress_bytes = Some(vec![first_half, total]);
            }
            r
        };
        write(
            dir.path(),
            vec![
                pair(0, 0, 6_250_000, 6_875_000),
                pair(1, 5, 5_625_000, 11_875_000),
            ],
            &[],
        );
        let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
        if samples {
            // The point is drawn: each pair's rate over time, the window marked.
            let p = report.progress.as_ref().expect("a sampled point is drawn");
            assert_eq!(p.window_s, (5.0, 10.0));
            assert_eq!(p.pairs.len(), 2);
            let rate_at = |pair: usize, t: f64| {
                p.pairs[pair]
                    .1
                    .iter()
                    .find(|pt| (pt.0 - t).abs() < 1e-9)
                    .unwrap()
                    .1
            };
            assert!((rate_at(0, 1.0) - 10.0).abs() < 1e-6);
            assert!((rate_at(0, 7.0) - 1.0).abs() < 1e-6);
            assert!((rate_at(1, 7.0) - 9.0).abs() < 1e-6);
            report_run(dir.path(), &ReportOptions::default()).unwrap();
            assert!(dir.path().join("figures/progress-token-tcp.svg").is_file());
        } else {
            assert!(report.progress.is_none());
        }
        report.cells[0].aggregate.unwrap().best
    };
    let pro_rated = with_samples(false);
    let sampled = with_samples(true);
    assert_eq!(pro_rated, 15.0);
    assert!(pro_rated > WIRE_MBIT_S, "the old figure is over the wire");
    assert_eq!(sampled, 10.0);
    assert!(sampled <= WIRE_MBIT_S);
}

#[test]
fn the_samples_are_read_when_points_count_some_and_not_when_they_count_none() {
    // The two unevenly served pairs of the test above, their records sampled, their point
    // listed in points.jsonl with the number of its records that carry samples.
    let report_with = |counted: u64| {
        let dir = tempfile::tempdir().unwrap();
        let pair = |pair: u32, start_s: u64, first_half: u64, total: u64| {
            let mut r = row(trial(0, 2, pair, start_s, start_s + 10, total));
            r.record.progress_offset_ns = Some(vec![5 * S, 10 * S]);
            r.record.progress_bytes = Some(vec![first_half, total]);
            r
        };
        let mut listed = point(0, 2, PointStatus::Ok);
        listed.sampled_records = Some(counted);
        write(
            dir.path(),
            vec![
                pair(0, 0, 6_250_000, 6_875_000),
                pair(1, 5, 5_625_000, 11_875_000),
            ],
            &[listed],
        );
        let report = build(&RunDir::new(dir.path()), &ReportOptions::default()).unwrap();
        (
            report.cells[0].aggregate.unwrap().best,
            report.progress.is_some(),
        )
    };
    // Counted: what moved in the window, read off the samples, and the point drawn.
    assert_eq!(report_with(2), (10.0, true));
    // Counted as none: the lists are not read (a scan of every record saved), and each
    // trial is pro-rated by its overlap with the window.
    assert_eq!(report_with(0), (15.0, false));
}
