//! The NetPIPE module against real NetPIPE data: the BEAM 1999 Beowulf measurements (the
//! project's one copy, `experiments/data/`, which the beam99 experiment draws beside its run)
//! and a write → parse round trip.

use orchestrate_worker::netpipe::{self, NetpipeRow};

const BEAM: &str = include_str!("../../experiments/data/beam-1999-netpipe-tcp.txt");

#[test]
fn beam_file_has_two_titled_tables() {
    let t = netpipe::parse(BEAM).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[0].title.as_deref(),
        Some("TCP/IP Network performance: Ping/pong of packets between nodes")
    );
    assert_eq!(
        t[1].title.as_deref(),
        Some("TCP/IP Network performance: Streaming of packets between nodes")
    );
    assert_eq!(t[0].latency_s, Some(0.000074));
    assert_eq!(t[1].latency_s, Some(0.000565));
    let first = t[0].rows[0];
    assert_eq!(
        first,
        NetpipeRow {
            time_s: 0.000074,
            mbit_s: 0.103730,
            bits_per_block: 8,
            bytes_per_block: 1,
            variance: 0.0
        }
    );
    // Ping-pong peaks near 77.5 Mbit/s, streaming near 90 on the 100 Mbit/s wire.
    let peak = |i: usize| t[i].rows.iter().map(|r| r.mbit_s).fold(0.0, f64::max);
    assert!((77.0..78.0).contains(&peak(0)), "{}", peak(0));
    assert!((90.0..91.0).contains(&peak(1)), "{}", peak(1));
    for table in &t {
        for r in &table.rows {
            assert_eq!(r.bits_per_block, r.bytes_per_block * 8);
        }
    }
}

#[test]
fn the_beam_tables_count_binary_megabits_and_ours_decimal_ones() {
    let t = netpipe::parse(BEAM).unwrap();
    // 16 KiB in 1612 µs is 81.3 × 10^6 bit/s, printed as 77.55: NetPIPE 2.x's 2^20.
    for table in &t {
        assert_eq!(table.mbit_scale(), 1.048576);
    }
    let last = t[0].rows.last().unwrap();
    assert!((last.mbit_s * t[0].mbit_scale() - 81.3).abs() < 0.1);
    // What this project writes is in 10^6 bit/s.
    let rows: Vec<NetpipeRow> = [1024u64, 8192]
        .iter()
        .map(|&b| NetpipeRow {
            time_s: b as f64 * 8.0 / 80e6,
            mbit_s: 80.0,
            bits_per_block: b * 8,
            bytes_per_block: b,
            variance: 0.0,
        })
        .collect();
    let ours = netpipe::NetpipeTable {
        title: None,
        latency_s: None,
        rows,
    };
    assert_eq!(ours.mbit_scale(), 1.0);
}

#[test]
fn schedule_reproduces_the_beam_block_sizes_exactly() {
    let t = netpipe::parse(BEAM).unwrap();
    let expected = netpipe::schedule(1, 16384, 3);
    assert_eq!(expected.len(), 70);
    for table in &t {
        let sizes: Vec<u64> = table.rows.iter().map(|r| r.bytes_per_block).collect();
        assert_eq!(sizes, expected, "{:?}", table.title);
    }
    assert_eq!(&expected[..8], &[1, 2, 3, 4, 6, 8, 12, 13]);
    assert_eq!(expected.last(), Some(&16387));
}

#[test]
fn write_then_parse_round_trips() {
    let rows: Vec<NetpipeRow> = netpipe::schedule(1, 1 << 20, 3)
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let time_s = 3.5e-6 + b as f64 * 8.1e-10 + i as f64 * 1e-9;
            NetpipeRow {
                time_s,
                mbit_s: b as f64 * 8.0 / time_s / 1e6,
                bits_per_block: b * 8,
                bytes_per_block: b,
                variance: (i as f64) * 1.25e-14,
            }
        })
        .collect();
    let mut out = Vec::new();
    netpipe::write(&rows, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let back = netpipe::parse(&text).unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].title, None);
    assert_eq!(back[0].rows.len(), rows.len());
    for (a, b) in rows.iter().zip(&back[0].rows) {
        assert_eq!(a.bits_per_block, b.bits_per_block);
        assert_eq!(a.bytes_per_block, b.bytes_per_block);
        assert!((a.time_s - b.time_s).abs() <= 5e-10, "{a:?} {b:?}");
        assert!(
            (a.mbit_s - b.mbit_s).abs() <= 5e-7 + a.mbit_s * 1e-12,
            "{a:?} {b:?}"
        );
        assert!(
            (a.variance - b.variance).abs() <= a.variance * 1e-6 + 1e-30,
            "{a:?} {b:?}"
        );
    }
    // Five whitespace-separated columns, as NetPIPE readers expect.
    assert!(text.lines().all(|l| l.split_whitespace().count() == 5));
}
